/**
 * Redis connections: a standalone server (REDIS_URL) or a cluster (REDIS_CLUSTER_NODES). One
 * client per process serves every request; the fan-out queue and workers get their own.
 *
 * Everything the service does in Redis works on a cluster: each command touches one key, or
 * keys of one slot (an inbox's EXISTS + ZRANGE; the queue's keys share the hash tag {fanout}).
 * The one batch over many keys, the fan-out's script over 1000 inboxes, runs per inbox on a
 * cluster (see feed/inbox.ts), and ioredis pipelines those calls per node.
 */
import { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { Config, ConfigError } from '../kernel/config';
import { BREAKER_COOL_DOWN_MS, watchRedis } from './breaker';

/** A client of either kind; both offer the same commands. */
export type RedisClient = Redis | Cluster;

/**
 * Reconnect quickly and steadily (every 100 ms growing to 1 s) rather than ioredis's default
 * backoff up to 5 s: after an outage, feeds return to their inboxes and the fan-out resumes
 * within a second of Redis coming back. Used by every connection of the service.
 */
export function reconnectDelay(attempt: number): number {
  return Math.min(attempt * 100, 1000);
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/** A connection to the configured Redis, with options for its purpose. */
export function connectRedis(
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>,
  options: RedisOptions,
): RedisClient {
  const redisOptions: RedisOptions = { retryStrategy: reconnectDelay, ...options };
  if (config.redisClusterNodes) {
    const clusterOptions: ClusterOptions = {
      redisOptions,
      clusterRetryStrategy: reconnectDelay,
      enableOfflineQueue: options.enableOfflineQueue,
      enableAutoPipelining: options.enableAutoPipelining,
    };
    return new Cluster(config.redisClusterNodes, clusterOptions);
  }
  return new Redis(config.redisUrl, redisOptions);
}

/**
 * The service's main client: requests and in-process fan-out writes go through it. It carries
 * the circuit breaker (breaker.ts) that callers consult through redisAvailable().
 */
export function createRedis(
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'redisCommandTimeoutMs'>,
  warn: (message: string) => void,
): RedisClient {
  const redis = connectRedis(config, {
    // Fail a command after a few reconnect attempts instead of queueing it forever: a request
    // should get an error (and the feed a fallback), not hang while Redis is away.
    maxRetriesPerRequest: 2,
    // ...nor while Redis is connected but does not answer (stopped, overloaded): the first
    // command without an answer opens the breaker, and requests stop waiting for Redis.
    commandTimeout: config.redisCommandTimeoutMs,
    enableAutoPipelining: true,
  });
  const where = config.redisClusterNodes
    ? `cluster ${config.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}`
    : new URL(config.redisUrl).host;
  watchRedis(
    redis,
    BREAKER_COOL_DOWN_MS,
    (state, error) => {
      if (state === 'open')
        warn(
          `Redis (${where}) does not answer (${error instanceof Error ? error.message : String(error)}): feeds from MySQL, rate limits in memory, inbox writes skipped`,
        );
      else if (state === 'closed') warn(`Redis (${where}) answers again`);
    },
    config.redisCommandTimeoutMs,
  );
  // Without a listener ioredis prints every failed reconnect as an unhandled error. Commands
  // fail on their own (and are reported where they fail); say once that Redis is away.
  let down = false;
  redis.on('error', (error: Error) => {
    if (!down) warn(`Redis (${where}) unreachable: ${error.message}`);
    down = true;
  });
  redis.on('ready', () => {
    if (down) warn(`Redis (${where}) reachable again`);
    down = false;
  });
  return redis;
}

/**
 * Checks Redis's maxmemory-policy before the service uses it. Under `noeviction` Redis refuses
 * writes when full and keeps everything: the only policy the service is exact under without
 * help. An `allkeys-*` policy may evict any key, the fan-out queue's and the watermark's included
 * (a task evicted from the watermark is a blog a page misses): refused. A `volatile-*` policy
 * evicts only keys with a time to live: inboxes (their sentinels show it, and they are rebuilt),
 * live marks, rate-limit counters and read-your-writes marks: accepted with a warning. Managed
 * Redis services often disable CONFIG: then there is nothing to check, and the warning says so.
 */
export async function checkMemoryPolicy(redis: RedisClient, warn: (message: string) => void): Promise<void> {
  let policy: string;
  try {
    const reply = await redis.config('GET', 'maxmemory-policy');
    policy = reply[1] ?? '';
  } catch (error) {
    warn(
      `cannot read Redis maxmemory-policy (${(error as Error).message}): make sure it is noeviction (or volatile-*), never allkeys-*`,
    );
    return;
  }
  if (policy.startsWith('allkeys-')) {
    throw new ConfigError(
      `Redis maxmemory-policy is ${policy}: it may evict the fan-out queue and watermark, and feeds would miss blogs. ` +
        'Set maxmemory-policy noeviction (redis.conf or CONFIG SET), or volatile-lru if Redis is shared with caches.',
    );
  }
  if (policy.startsWith('volatile-')) {
    warn(
      `Redis maxmemory-policy is ${policy}: inboxes Redis evicts are rebuilt from MySQL as their readers come back (noeviction keeps them)`,
    );
  }
}

/**
 * Warns when Redis keeps inboxes in its larger encoding. A sorted set of up to
 * zset-max-listpack-entries members is a compact listpack (about 36 bytes per inbox entry
 * here); above it, a skiplist and a hash table (about 120 bytes per entry; bench:feed measures
 * both). With FEED_MAX_ITEMS 800 and Redis's default of 128 every full inbox takes the large one.
 */
export async function checkInboxEncoding(
  redis: RedisClient,
  feedMaxItems: number,
  warn: (message: string) => void,
): Promise<void> {
  try {
    const [, value] = (await redis.config('GET', 'zset-max-listpack-entries')) as [string, string];
    if (Number(value) < feedMaxItems) {
      warn(
        `Redis zset-max-listpack-entries is ${value}: inboxes of up to FEED_MAX_ITEMS=${feedMaxItems} entries will ` +
          `take about 3x the memory. Set it to at least ${feedMaxItems} (redis.conf, or CONFIG SET).`,
      );
    }
  } catch {
    // CONFIG is often disabled on managed Redis: nothing to check then.
  }
}
