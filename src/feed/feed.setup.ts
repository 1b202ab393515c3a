/**
 * Building the feed from the configuration, in one place: every process (the API, a fan-out
 * worker, the seed script, the benchmarks) gets its inbox and FeedService here, so they agree on
 * FEED_MAX_ITEMS, ACTIVE_DAYS, the key prefix and the model.
 */
import type { DataSource } from 'typeorm';
import type { Config } from '../kernel/config';
import type { Metrics } from '../kernel/observability';
import { RedisKeys } from '../redis/keys';
import type { RedisClient } from '../redis/redis.client';
import { FeedService, InFlightSource } from './feed.service';
import { FeedStore } from './feed.store';
import type { Inbox } from './inbox';
import { RedisInbox } from './inbox.redis';

type FeedConfig = Pick<
  Config,
  'feedModel' | 'feedMaxItems' | 'activeDays' | 'redisKeyPrefix' | 'followBackfillItems' | 'bigAuthorFollowers' | 'watermarkSettleMs'
>;

/** The inboxes of this configuration: none in the pull model, which keeps none. */
export function createInbox(config: FeedConfig, redis: RedisClient | null): Inbox | null {
  if (config.feedModel === 'pull') return null;
  if (!redis) throw new Error(`FEED_MODEL=${config.feedModel} needs Redis`);
  return new RedisInbox(redis, new RedisKeys(config.redisKeyPrefix), config.feedMaxItems, config.activeDays * 24 * 3600);
}

export interface FeedDeps {
  warn: (message: string, error?: unknown) => void;
  metrics?: Pick<Metrics, 'pageRead'>;
  /** The fan-out's unfinished tasks, to rebuild a lost watermark (FanoutStore). */
  inFlight?: InFlightSource;
}

export function createFeedService(config: FeedConfig, db: DataSource, redis: RedisClient | null, deps: FeedDeps): FeedService {
  return new FeedService(
    new FeedStore(db),
    createInbox(config, redis),
    {
      model: config.feedModel,
      maxItems: config.feedMaxItems,
      backfillItems: config.followBackfillItems,
      bigAuthorFollowers: config.bigAuthorFollowers,
      watermarkSettleMs: config.watermarkSettleMs,
    },
    deps.warn,
    deps.metrics,
    deps.inFlight,
  );
}
