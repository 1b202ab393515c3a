/** The Redis connection. One client per process serves every request (ioredis pipelines). */
import { Redis } from 'ioredis';

export function createRedis(url: string): Redis {
  return new Redis(url, {
    // Fail a command after a few reconnect attempts instead of queueing it forever: a request
    // should get an error (and the feed a fallback), not hang while Redis is away.
    maxRetriesPerRequest: 2,
    enableAutoPipelining: true,
    lazyConnect: false,
  });
}
