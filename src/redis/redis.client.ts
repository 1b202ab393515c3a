/** The Redis connection. One client per process serves every request (ioredis pipelines). */
import { Redis } from 'ioredis';

/**
 * Reconnect quickly and steadily (every 100 ms growing to 1 s) rather than ioredis's default
 * backoff up to 5 s: after an outage, feeds return to their inboxes and the fan-out resumes
 * within a second of Redis coming back. Used by every connection of the service.
 */
export function reconnectDelay(attempt: number): number {
  return Math.min(attempt * 100, 1000);
}

export function createRedis(url: string): Redis {
  const redis = new Redis(url, {
    // Fail a command after a few reconnect attempts instead of queueing it forever: a request
    // should get an error (and the feed a fallback), not hang while Redis is away.
    maxRetriesPerRequest: 2,
    retryStrategy: reconnectDelay,
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

/**
 * Warns when Redis keeps inboxes in its larger encoding. A sorted set of up to
 * zset-max-listpack-entries members is a compact listpack (about 36 bytes per inbox entry
 * here); above it, a skiplist and a hash table (about 120 bytes per entry; bench:feed measures
 * both). With FEED_MAX_ITEMS 800 and Redis's default of 128 every full inbox takes the large one.
 */
export async function checkInboxEncoding(redis: Redis, feedMaxItems: number): Promise<void> {
  try {
    const [, value] = (await redis.config('GET', 'zset-max-listpack-entries')) as [string, string];
    if (Number(value) < feedMaxItems + 1) {
      console.warn(
        `Redis zset-max-listpack-entries is ${value}: inboxes of up to FEED_MAX_ITEMS=${feedMaxItems} entries will ` +
          `take about 3x the memory. Set it to at least ${feedMaxItems + 1} (redis.conf, or CONFIG SET).`,
      );
    }
  } catch {
    // CONFIG is often disabled on managed Redis: nothing to check then.
  }
}
