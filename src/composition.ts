/**
 * The composition root: the one place that builds the object graph, for every process (the API
 * server, a fan-out worker, the seed script, the benchmarks and the tests). It only wires: each
 * class gets its dependencies passed in, and nothing below this file reads the environment or
 * builds its own collaborators.
 *
 * It never imports the API layer (src/graphql/): the worker process starts from here without
 * loading Apollo, Express or a resolver (dependency-cruiser checks the imports, and a test the
 * modules a running worker has loaded). The API is assembled on top, in src/graphql/api.ts.
 */
// The domain's types carry type-graphql decorators, which need the metadata polyfill loaded first.
import 'reflect-metadata';
import { RedisSessionBus } from './auth/auth.bus';
import { AuthService } from './auth/auth.service';
import { PasswordHasher } from './auth/auth.passwords';
import { Sessions } from './auth/auth.sessions';
import { AuthStore } from './auth/auth.store';
import { TokenService } from './auth/auth.tokens';
import { BlogService } from './blog/blog.service';
import { BlogStore } from './blog/blog.store';
import { CacheWrites, HydrationCache, NO_CACHE } from './cache/cache.service';
import { CacheStore } from './cache/cache.store';
import type { Database, MysqlDatabase, SqlStatementLog } from './db/database';
import { isMysql, MysqlPool } from './db/mysql';
import { replicasOf } from './db/replicas';
import { FanoutQueue } from './fanout/fanout.queue';
import { FanoutLog, FanoutService } from './fanout/fanout.service';
import { FanoutStore } from './fanout/fanout.store';
import { FanoutWorkers } from './fanout/fanout.worker';
import { LiveBuses, LiveFeed } from './feed/feed.live';
import { FeedService, FRESHNESS_MARGIN_MS, InFlightSource, PUBLISH_DEADLINE_MS } from './feed/feed.service';
import { FeedStore } from './feed/feed.store';
import { InboxGeneration } from './feed/generation';
import type { Inbox } from './feed/inbox';
import { RedisInbox } from './feed/inbox.redis';
import { FollowService } from './follow/follow.service';
import { FollowStore } from './follow/follow.store';
import type { Config } from './kernel/config';
import { Metrics, QUEUE_STATES, warn as logWarning } from './kernel/observability';
import { LikeService } from './like/like.service';
import { LikeStore } from './like/like.store';
import { MemoryLiveBus } from './live/live.memory';
import { RedisLiveBus } from './live/live.redis';
import { breakerOf } from './redis/breaker';
import { RedisKeys } from './redis/keys';
import type { RedisClient } from './redis/redis.client';
import { redisIdentity } from './redis/redis.identity';
import { poolLimits } from './stores';
import { UserService } from './user/user.service';
import { UserStore } from './user/user.store';

export interface CoreDeps {
  config: Config;
  db: Database;
  /** null in the embedded mode: no inboxes, no fan-out queue, rate limits in memory. */
  redis: RedisClient | null;
  /** The clock for created_at values; tests pass a fixed one to create same-millisecond ties. */
  now?: () => Date;
  /** Where background work reports (the service's logger unless a test listens). */
  warn?: FanoutLog;
}

/** The domain services of a process, built on its stores. */
export interface Core {
  config: Config;
  db: Database;
  redis: RedisClient | null;
  keys: RedisKeys;
  users: UserService;
  blogs: BlogService;
  follows: FollowService;
  likes: LikeService;
  /** The hydration cache of pages (cache/cache.service.ts); null in the embedded mode. */
  hydration: HydrationCache | null;
  feed: FeedService;
  /** Blogs as they enter viewers' feeds, for subscriptions. */
  liveFeed: LiveFeed;
  /** The transport of liveFeed; closed with the process. */
  liveBuses: LiveBuses;
  auth: AuthService;
  tokens: TokenService;
  /** Ended sessions as this process knows them; closed with the process. */
  sessions: Sessions;
  /** null in the embedded mode, where nothing is fanned out. */
  fanout: FanoutService | null;
  /** null without Redis (the embedded mode). */
  fanoutQueue: FanoutQueue | null;
  metrics: Metrics;
  warn: FanoutLog;
}

type FeedConfig = Pick<
  Config,
  | 'feedModel'
  | 'feedMaxItems'
  | 'feedRebuildItems'
  | 'feedRebuildWaitMs'
  | 'feedRebuildsInFlight'
  | 'activeDays'
  | 'redisKeyPrefix'
  | 'followBackfillItems'
  | 'bigAuthorFollowers'
  | 'watermarkSettleMs'
  | 'buildStaleMs'
  | 'databaseReplicaUrls'
  | 'replicaMaxLagMs'
>;

/**
 * The inboxes of this configuration: wherever there is Redis, whatever the model. A pull process
 * reads no inbox, but keeps them up to date (follow changes, deletes, deliveries), so that
 * processes of another model, in a rolling deploy or after a switch, can trust them.
 */
export function createInbox(config: FeedConfig, redis: RedisClient | null): Inbox | null {
  if (!redis) {
    if (config.feedModel !== 'pull') throw new Error(`FEED_MODEL=${config.feedModel} needs Redis`);
    return null;
  }
  return new RedisInbox({
    redis,
    keys: new RedisKeys(config.redisKeyPrefix),
    maxItems: config.feedMaxItems,
    ttlSeconds: config.activeDays * 24 * 3600,
    buildStaleMs: config.buildStaleMs,
  });
}

export interface FeedDeps {
  warn: FanoutLog;
  /** Live subscribers to tell of the blogs a fan-out delivers. */
  live?: LiveFeed;
  metrics?: Pick<Metrics, 'pageRead'>;
  /** The fan-out's unfinished tasks, to rebuild a lost watermark (FanoutStore). */
  inFlight?: InFlightSource;
  /** The clock of created_at values (tests pass a fixed one). */
  now?: () => Date;
}

/**
 * The feed rules on a database and the inboxes, so that every process agrees on FEED_MAX_ITEMS,
 * ACTIVE_DAYS, the key prefix and the model. With Redis, the Redis generation it trusts
 * (feed/generation.ts) is checked at every reconnect and every GENERATION_CHECK_MS once
 * `start()`ed.
 */
export function createFeedService(
  config: FeedConfig,
  db: Database,
  redis: RedisClient | null,
  deps: FeedDeps,
): FeedService {
  const store = new FeedStore(db);
  const generation = redis ? new InboxGeneration(() => redisIdentity(redis), store, deps.warn) : null;
  if (redis && generation) redis.on('ready', () => generation.reconnected());
  return new FeedService({
    store,
    inbox: createInbox(config, redis),
    generation,
    settings: {
      model: config.feedModel,
      maxItems: config.feedMaxItems,
      rebuildItems: config.feedRebuildItems,
      rebuildWaitMs: config.feedRebuildWaitMs,
      rebuildsInFlight: config.feedRebuildsInFlight,
      backfillItems: config.followBackfillItems,
      bigAuthorFollowers: config.bigAuthorFollowers,
      watermarkSettleMs: config.watermarkSettleMs,
      buildStaleMs: config.buildStaleMs,
      freshnessMs: config.databaseReplicaUrls.length > 0 ? config.replicaMaxLagMs + FRESHNESS_MARGIN_MS : 0,
      publishDeadlineMs: config.databaseReplicaUrls.length > 0 ? PUBLISH_DEADLINE_MS : 0,
    },
    warn: deps.warn,
    metrics: deps.metrics,
    inFlight: deps.inFlight,
    live: deps.live,
    now: deps.now,
  });
}

/**
 * The live buses of this configuration (live/live.bus.ts): over Redis between processes, or in
 * process memory in the embedded mode. Readers' channels and authors' channels are two buses on
 * two key spaces, so a reader and an author with the same id never share a channel.
 */
export function createLiveBuses(
  config: Pick<Config, 'redisKeyPrefix'>,
  redis: RedisClient | null,
  warn: FanoutLog,
): LiveBuses {
  if (!redis) return { readers: new MemoryLiveBus(warn), authors: new MemoryLiveBus(warn) };
  return {
    readers: new RedisLiveBus({ redis, keys: new RedisKeys(config.redisKeyPrefix), warn }),
    authors: new RedisLiveBus({ redis, keys: new RedisKeys(`${config.redisKeyPrefix}author:`), warn }),
  };
}

/**
 * A process's metrics (kernel/observability.ts) on its stores: the fan-out queue's depth, the
 * Redis breaker's state and the replicas', read at each scrape.
 */
export function processMetrics(db: Database, redis: RedisClient | null, fanoutQueue: FanoutQueue | null): Metrics {
  const metrics = new Metrics(fanoutQueue ? () => fanoutQueue.queue.getJobCounts(...QUEUE_STATES) : undefined);
  if (redis) metrics.watchBreaker(() => breakerOf(redis)?.state);
  const replicas = replicasOf(db);
  if (replicas) metrics.watchReplicas(replicas);
  return metrics;
}

/** The domain services of a process. */
export function createCore({ config, db, redis, now = () => new Date(), warn = logWarning }: CoreDeps): Core {
  const keys = new RedisKeys(config.redisKeyPrefix);
  const fanoutQueue = redis ? new FanoutQueue(config) : null;
  const metrics = processMetrics(db, redis, fanoutQueue);
  if (config.jwtSecret === null)
    throw new Error(
      'no secret to sign tokens with: set JWT_SECRET (server.ts keeps a generated one in JWT_SECRET_FILE)',
    );
  const authStore = new AuthStore(db);
  const sessions = new Sessions(authStore, redis ? new RedisSessionBus({ redis, keys, warn }) : null, {
    recheckMs: config.sessionRecheckSeconds * 1000,
    warn,
  });
  const tokens = new TokenService(config.jwtSecret, config.jwtExpiresInSeconds, sessions);
  // The outbox is MySQL's alone: the embedded mode fans nothing out.
  const fanoutStore = isMysql(db) ? new FanoutStore(db, now) : null;
  const liveBuses = createLiveBuses(config, redis, warn);
  const liveFeed = new LiveFeed({ buses: liveBuses, store: new FeedStore(db), model: config.feedModel, warn });
  const feed = createFeedService(config, db, redis, {
    warn,
    metrics,
    inFlight: fanoutStore ?? undefined,
    live: liveFeed,
    now,
  });
  // Pages' blogs and authors from Redis, trusted in the Redis generation the feed has confirmed;
  // without Redis (the embedded mode) pages read SQL.
  const hydration = redis
    ? new HydrationCache({ redis, keys, store: new CacheStore(db), warn, generation: () => feed.redisGeneration() })
    : null;
  const cacheWrites: CacheWrites = hydration ?? NO_CACHE;
  const users = new UserService({ store: new UserStore(db), now, db, cache: cacheWrites });
  metrics.watchRebuilds(() => feed.rebuildsInFlight());
  const follows = new FollowService({
    db,
    store: new FollowStore(db),
    users,
    feed,
    live: liveFeed,
    now,
    maxFollowing: config.maxFollowing,
  });
  const fanout = fanoutStore
    ? new FanoutService({
        store: fanoutStore,
        queue: fanoutQueue,
        warn,
        leavingWatermark: () => feed.finishedInWatermark(),
        now,
      })
    : null;
  const blogs = new BlogService({
    db,
    store: new BlogStore(db),
    fanout,
    feed,
    live: liveFeed,
    now,
    cache: { writes: cacheWrites, hydration, users, warn },
  });
  const likes = new LikeService({ db, store: new LikeStore(db), blogs, now, cache: cacheWrites, hydration });
  // A new user's inbox is only a head start: like any missing inbox, it is built from MySQL on
  // the first feed read. So with Redis away the account is created and the sign-up succeeds
  // (failing it would make the retry say "taken"); the inbox is skipped with a warning.
  const openInbox = (id: number): Promise<void> =>
    feed
      .openInbox(id)
      .catch((error: unknown) =>
        warn(`opening the inbox of new user ${id} failed; it is built on their first feed read`, error),
      );
  const auth = new AuthService({
    users,
    passwords: new PasswordHasher(config.passwordHashCost),
    tokens,
    store: authStore,
    sessions,
    openInbox,
    warn,
    now,
  });
  return {
    config,
    db,
    redis,
    keys,
    users,
    blogs,
    follows,
    likes,
    hydration,
    feed,
    liveFeed,
    liveBuses,
    auth,
    tokens,
    sessions,
    fanout,
    fanoutQueue,
    metrics,
    warn,
  };
}

export interface RunningWorkers {
  /** Whether every worker is running. */
  running(): boolean;
  /** Lets running jobs finish, then closes the workers' pool. */
  stop(): Promise<void>;
}

/** Where fan-out workers run their SQL. */
export type WorkerDatabase =
  /** The process's own pool: a worker process, which serves no requests. */
  | { kind: 'shared'; db: MysqlDatabase }
  /**
   * Pools of their own (DATABASE_POOL_SIZE connections each, see db/mysql.ts), in an API process: a burst of chunk
   * jobs, FANOUT_CONCURRENCY at once per worker, must never hold the connections that requests
   * wait for. `sqlLog` counts its statements.
   */
  | { kind: 'own'; sqlLog: SqlStatementLog };

/** `count` fan-out workers, with the outbox relay and the purge (migrations have run: the process's pool opened first). */
export function startFanoutWorkers(
  core: Pick<Core, 'config' | 'redis' | 'fanoutQueue' | 'metrics' | 'warn'> & Partial<Pick<Core, 'fanout'>>,
  count: number,
  database: WorkerDatabase,
  now: () => Date = () => new Date(),
): RunningWorkers {
  const { config, redis, fanoutQueue: queue, metrics, warn } = core;
  if (!redis || !queue) throw new Error('fan-out workers need Redis (the embedded mode fans nothing out)');
  const db =
    database.kind === 'shared' ? database.db : new MysqlPool(config.databaseUrl, poolLimits(config), database.sqlLog);
  const store = new FanoutStore(db, now);
  // Publishing only: a worker holds no subscriptions.
  const liveBuses = createLiveBuses(config, redis, warn);
  const live = new LiveFeed({ buses: liveBuses, store: new FeedStore(db), model: config.feedModel, warn });
  const feed = createFeedService(config, db, redis, { warn, inFlight: store, live, now });
  const workers = new FanoutWorkers({ config, store, feed, queue, now, warn, metrics });
  feed.start();
  workers.start(count);
  // The publishes of this process are dispatched here first (FanoutWorkers.dispatchHere).
  if (count > 0) core.fanout?.runDispatchesHere((job) => workers.dispatchHere(job));
  return {
    running: () => workers.running(),
    async stop() {
      core.fanout?.runDispatchesHere(null);
      await workers.stop();
      feed.stop();
      await Promise.allSettled([liveBuses.readers.close(), liveBuses.authors.close()]);
      if (database.kind === 'own') await db.close();
    },
  };
}
