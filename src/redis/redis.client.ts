/** The Redis connection. One client per process serves every request (ioredis pipelines). */
import { Redis } from 'ioredis';

export function createRedis(url: string): Redis {
  const redis = new Redis(url, {
    // Fail a command after a few reconnect attempts instead of queueing it forever: a request
    // should get an error (and the feed a fallback), not hang while Redis is away.
    maxRetriesPerRequest: 2,
    enableAutoPipelining: true,
    lazyConnect: false,
  });
  // Without a listener ioredis prints every failed reconnect as an unhandled error. Commands
  // fail on their own (and are reported where they fail); say once that Redis is away.
  let down = false;
  redis.on('error', (error: Error) => {
    if (!down) console.warn(`Redis (${new URL(url).host}) unreachable: ${error.message}`);
    down = true;
  });
  redis.on('ready', () => {
    if (down) console.warn(`Redis (${new URL(url).host}) reachable again`);
    down = false;
  });
  return redis;
}
