import proxyaddr from 'proxy-addr';
import { hidePasswords } from './redaction';

/**
 * Configuration, parsed and validated once at start.
 *
 * Every environment variable the service reads is read here and nowhere else. A bad value stops
 * the process with a message that names the variable and what it received, instead of surfacing
 * later as a confusing runtime failure.
 */

export type NodeEnv = 'production' | 'development' | 'test';

/** pino's levels, most verbose first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * How a follow feed is assembled (docs/design.md, "The three feed models"); all three return the same pages.
 * - push: every blog is fanned out into the followers' inboxes; a page reads the inbox.
 * - pull: no inboxes; a page is one query over the followees' blogs in MySQL.
 * - hybrid: like push, but blogs of authors with BIG_V_FOLLOWERS or more followers are not
 *   fanned out; a page merges them into the inbox at read time.
 */
export type FeedModel = 'push' | 'pull' | 'hybrid';

/** A rate limit: at most `points` actions per `seconds`. */
export interface RateLimitRule {
  points: number;
  seconds: number;
}

export interface RateLimitSettings {
  /** RATE_LIMITS=off disables every limit (benchmarks, load tests). */
  enabled: boolean;
  signUpPerIp: RateLimitRule;
  loginPerIp: RateLimitRule;
  /** Login attempts (right or wrong) per (nickName, client address) pair: stops one address guessing. */
  loginPerNickNameIp: RateLimitRule;
  /**
   * Failed logins per nickName from all addresses. Past it, only addresses that failed for this
   * nickName in the window are refused: a stranger's failures never lock the user out.
   */
  loginPerNickName: RateLimitRule;
  publishPerUser: RateLimitRule;
  likePerUser: RateLimitRule;
  /** follow and unfollow per user: each locks two user rows and may copy a followee's blogs. */
  followPerUser: RateLimitRule;
  /** Subscriptions started over WebSocket, per user: a client that resubscribes in a loop. */
  subscribePerUser: RateLimitRule;
  /** GraphQL requests without a valid token, per client address (graphql/api.ts). */
  anonymousPerIp: RateLimitRule;
}

export interface Config {
  nodeEnv: NodeEnv;
  /** LOG_LEVEL: the least severe log line written (info by default: one line per request). */
  logLevel: LogLevel;
  host: string;
  port: number;
  /**
   * The embedded mode (docs/operations.md): none of DATABASE_URL, REDIS_URL and
   * REDIS_CLUSTER_NODES is set, so the service runs on a SQLite file (embeddedDbFile) with the
   * pull model and its limits in process memory: no MySQL, no Redis, nothing to install.
   * databaseUrl and redisUrl are then unused.
   */
  embedded: boolean;
  /** EMBEDDED_DB_FILE: the SQLite file of the embedded mode. */
  embeddedDbFile: string;
  databaseUrl: string;
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: when set, Redis is a cluster reached through these nodes (REDIS_URL unused). */
  redisClusterNodes: Array<{ host: string; port: number }> | null;
  /** Prepended to every Redis key; lets several deployments (or test files) share one Redis. */
  redisKeyPrefix: string;
  /**
   * A Redis command without an answer after this long fails (ioredis commandTimeout), and the
   * circuit breaker opens: a Redis that hangs is treated like one that is down.
   */
  redisCommandTimeoutMs: number;
  /** Connections in each of the API's two MySQL pools, statements and transactions (the in-process fan-out workers have pools of their own). */
  databasePoolSize: number;
  /** A MySQL statement running longer is stopped and the request gets SERVICE_UNAVAILABLE; 0 = no limit. */
  databaseStatementTimeoutMs: number;
  /**
   * DATABASE_REPLICA_URLS: MySQL/MariaDB replicas of DATABASE_URL that serve the reads that may
   * lag (db/replicas.ts); empty = every read goes to DATABASE_URL.
   */
  databaseReplicaUrls: string[];
  /** REPLICA_MAX_LAG_MS: a replica further behind than this is skipped (and a writer reads the primary this long). */
  replicaMaxLagMs: number;
  /**
   * JWT_SECRET. null outside production when it is not set: the entry point then signs with a
   * random secret kept in jwtSecretFile (auth/auth.secret.ts), never with one known to others.
   */
  jwtSecret: string | null;
  /** JWT_SECRET_FILE: where a process without JWT_SECRET keeps its generated secret. */
  jwtSecretFile: string;
  jwtExpiresInSeconds: number;
  /**
   * SESSION_RECHECK_SECONDS: while a process cannot hear session changes over Redis, how old its
   * knowledge of a user's ended sessions may grow before a request reads it again: the bound on
   * a logout reaching a process that cannot hear it (auth/auth.sessions.ts).
   */
  sessionRecheckSeconds: number;
  /** scrypt cost parameter N (a power of two). */
  passwordHashCost: number;
  /** MAX_FOLLOWING: how many users one user may follow. */
  maxFollowing: number;
  feedModel: FeedModel;
  /** Each inbox keeps at most this many newest entries. */
  feedMaxItems: number;
  /** A rebuilt inbox starts with at most this many (at most feedMaxItems); fan-out fills it from there. */
  feedRebuildItems: number;
  /** FEED_REBUILDS_IN_FLIGHT: inbox rebuilds one process runs at once (and connections of its snapshot pool). */
  feedRebuildsInFlight: number;
  /** FEED_REBUILD_WAIT_MS: how long a page that finds no inbox waits for its rebuild before MySQL serves it (0: it does not wait). */
  feedRebuildWaitMs: number;
  /** hybrid: authors with at least this many followers are read at read time, not fanned out. */
  bigAuthorFollowers: number;
  /** Followers inactive for longer are skipped by fan-out; their inbox expires after this long. */
  activeDays: number;
  /** How many of a followee's newest blogs a new follow copies into the follower's inbox. */
  followBackfillItems: number;
  watermarkSettleMs: number;
  /** BUILD_STALE_MS: a rebuild of an inbox unfinished this long after it began (its process died) is taken over by the next read. */
  buildStaleMs: number;
  /** Fan-out workers started inside this process (`npm start`); 0 makes an API-only process. */
  fanoutWorkers: number;
  /** Jobs each fan-out worker runs at once. */
  fanoutConcurrency: number;
  /** Followers per chunk job. */
  fanoutChunkSize: number;
  /** At most this many fan-out jobs per second per worker process; 0 = no limit. */
  fanoutJobsPerSecond: number;
  /** A job whose worker stops renewing its lock for this long is retried elsewhere. */
  fanoutLockMs: number;
  /** How often the outbox relay looks for fan-out events that could not be queued. */
  outboxRelayIntervalMs: number;
  /** A queued fan-out event not done after this long gets its job re-added (lost by Redis?). */
  fanoutRedriveAfterMs: number;
  /** Attempts of each fan-out job before it counts as failed (and the relay drives it again). */
  fanoutJobAttempts: number;
  /** The first retry's delay of a fan-out job; each further retry waits twice as long. */
  fanoutJobBackoffMs: number;
  /** Finished fan-out tasks and their chunks are deleted after this many days. */
  fanoutRetentionDays: number;
  rateLimits: RateLimitSettings;
  /** Origins allowed to call the API from a browser (CORS); empty = same origin only. */
  corsOrigins: string[];
  /**
   * TRUSTED_PROXIES: addresses and CIDR ranges (IPv4, IPv6) of the reverse proxies in front of
   * the service. Only a request from one of them has its X-Forwarded-For read; empty = none.
   */
  trustedProxies: string[];
  /** INTROSPECTION: whether the schema may be introspected (GraphiQL and codegen need it). */
  introspection: boolean;
  /** PERSISTED_DOCUMENTS and PERSISTED_DOCUMENTS_MANIFEST: which documents the API runs (graphql/persisted-documents.ts). */
  persistedDocuments: PersistedDocumentsSettings;
  /** METRICS_TOKEN: when set, GET /metrics requires `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** SHUTDOWN_TIMEOUT_MS: how long SIGTERM/SIGINT may drain before the process exits anyway (with 1). */
  shutdownTimeoutMs: number;
  /** MAX_SUBSCRIPTIONS_PER_USER: live subscriptions one user may hold open in one API process. */
  maxSubscriptionsPerUser: number;
  /** What one API process lets WebSocket clients hold (graphql/subscriptions.ts). */
  webSockets: WebSocketLimits;
  /** RESPONSE_MAX_BYTES: a GraphQL answer over this many bytes is replaced by RESPONSE_TOO_LARGE (graphql/http.ts). */
  responseMaxBytes: number;
  /** HTTP_HEADERS_TIMEOUT_MS: a client must have sent a request's headers within this long (node:http headersTimeout). */
  httpHeadersTimeoutMs: number;
  /** HTTP_REQUEST_TIMEOUT_MS: a client must have sent a whole request, body included, within this long (node:http requestTimeout). */
  httpRequestTimeoutMs: number;
  /** Running it: migrations, the worker's HTTP port, tracing (see OperationsSettings). */
  operations: OperationsSettings;
}

/**
 * Trusted documents: `off` runs any document a client sends; `allow` runs a document named by its
 * id in the manifest (a JSON object of id: document, as graphql-codegen's client preset writes
 * it) or any document sent whole; `only` runs nothing but the manifest's documents.
 */
export interface PersistedDocumentsSettings {
  mode: 'off' | 'allow' | 'only';
  /** The manifest's path; set exactly when mode is allow or only. */
  manifestFile: string | null;
}

/**
 * How the processes are run and watched: who migrates the database, where a fan-out worker
 * answers /metrics, /healthz and /readyz, and where traces go.
 */
export interface OperationsSettings {
  /**
   * MIGRATE_ON_START: whether a process creates and migrates its database when it starts. On
   * by default in the embedded mode and outside production; off in production, where
   * `npm run migrate` runs them once, as a user with DDL rights, and the API and workers run as
   * one without (a process then refuses to start while migrations are pending).
   */
  migrateOnStart: boolean;
  /** WORKER_PORT: the fan-out worker process's HTTP port (/metrics, /healthz, /readyz); 0 = any free port. */
  workerPort: number;
  /** OTEL_EXPORTER_OTLP_ENDPOINT: where traces go (OTLP over HTTP); null = tracing off, nothing of it loaded. */
  otlpEndpoint: string | null;
  /** OTEL_SERVICE_NAME: the service name traces carry; null = follow-feed-api or follow-feed-worker by process. */
  serviceName: string | null;
}

export interface WebSocketLimits {
  /** MAX_WEBSOCKETS: open WebSockets in one API process; one more is closed with 4430. */
  maxSockets: number;
  /** MAX_WEBSOCKETS_PER_USER: open WebSockets of one user in one API process; one more is closed with 4430. */
  maxSocketsPerUser: number;
  /** MAX_OPERATIONS_PER_WEBSOCKET: operations of any kind running at once on one WebSocket; one more is refused with RATE_LIMITED. */
  maxOperationsPerSocket: number;
  /** WEBSOCKET_MAX_BUFFERED_BYTES: unsent bytes a WebSocket may hold (a client that stopped reading); past it the socket is closed with 4413. */
  maxBufferedBytes: number;
}

/** Shortest METRICS_TOKEN: a short one could be guessed. */
const MIN_METRICS_TOKEN_LENGTH = 16;

/** A bad setting. Its message never holds a password: a URL in it is shown with `***` instead. */
export class ConfigError extends Error {
  override name = 'ConfigError';

  constructor(message: string) {
    super(hidePasswords(message));
  }
}

/**
 * The default of RESPONSE_MAX_BYTES: a full page of the largest blogs with margin. A
 * followFeed(first: 100) edge answers at most about 61 kB of JSON under today's input rules
 * (content 10,000 characters of up to 4 bytes, 40 kB; images 9 x 512 characters, 18.5 kB; title
 * 1 kB; cursor, ids, counts and the author's fields, under 3 kB), so a page is about 6.1 MB; a
 * blog stored before control characters were refused may answer 1.5 times that (6 bytes per
 * character), about 9 MB a page. 10 MiB serves both.
 */
const DEFAULT_RESPONSE_MAX_BYTES = 10 * 1024 * 1024;

type Env = Record<string, string | undefined>;

/**
 * Shortest JWT_SECRET, in bytes: HS256 signs with a 256-bit key (RFC 7518, 3.2); a shorter
 * secret, or a word, can be found by trying candidates against any one token.
 */
export const MIN_JWT_SECRET_BYTES = 32;

/**
 * The defaults of FEED_REBUILD_WAIT_MS and FEED_REBUILDS_IN_FLIGHT, which are also FeedService's
 * when it is built without them (the model test): feed.service.ts says why these values.
 */
export const DEFAULT_FEED_REBUILD_WAIT_MS = 1000;
export const DEFAULT_FEED_REBUILDS_IN_FLIGHT = 32;

/**
 * Secrets that have been published (this project's old defaults, common placeholders, jwt.io's
 * example), compared in lower case: with one of them anyone can sign tokens for any user.
 */
const KNOWN_PLACEHOLDER_SECRETS = new Set([
  'change-me-to-a-long-random-secret',
  'dev-only-insecure-secret-change-me',
  'secret',
  'changeme',
  'change-me',
  'change_me',
  'jwt-secret',
  'jwt_secret',
  'jwtsecret',
  'your-256-bit-secret',
  'your-secret',
  'your-secret-key',
  'your_jwt_secret',
  'mysecret',
  'supersecret',
  'secretkey',
  'secret-key',
  'password',
  'test-secret',
]);

/** Placeholders by their form: "change me", "replace me", "insecure", "example" anywhere in the text. */
const PLACEHOLDER_PATTERN = /change[-_ ]?me|replace[-_ ]?me|insecure|example|placeholder/i;

/** What is wrong with a secret for signing tokens, or null when nothing is. */
export function secretProblem(secret: string): { kind: 'placeholder' } | { kind: 'short'; bytes: number } | null {
  if (KNOWN_PLACEHOLDER_SECRETS.has(secret.toLowerCase()) || PLACEHOLDER_PATTERN.test(secret))
    return { kind: 'placeholder' };
  const bytes = Buffer.byteLength(secret, 'utf8');
  return bytes < MIN_JWT_SECRET_BYTES ? { kind: 'short', bytes } : null;
}

/**
 * JWT_SECRET: required in production; a placeholder or one under MIN_JWT_SECRET_BYTES is
 * refused in every mode but NODE_ENV=test (whose fixed test secrets sign nothing real).
 * null: not set outside production (see Config.jwtSecret).
 */
function parseJwtSecret(raw: string | undefined, nodeEnv: NodeEnv): string | null {
  if (raw === undefined || raw === '') {
    if (nodeEnv === 'production') {
      throw new ConfigError(
        'JWT_SECRET is required when NODE_ENV=production (got nothing); generate one with: openssl rand -base64 48',
      );
    }
    return null;
  }
  if (nodeEnv === 'test') return raw;
  const problem = secretProblem(raw);
  if (problem?.kind === 'placeholder') {
    throw new ConfigError(
      'JWT_SECRET is a known placeholder, so anyone could sign tokens with it; generate one with: openssl rand -base64 48',
    );
  }
  if (problem?.kind === 'short') {
    throw new ConfigError(
      `JWT_SECRET must be at least ${MIN_JWT_SECRET_BYTES} bytes (got ${problem.bytes}); generate one with: openssl rand -base64 48`,
    );
  }
  return raw;
}

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = parseNodeEnv(env.NODE_ENV);
  const jwtSecret = parseJwtSecret(env.JWT_SECRET, nodeEnv);
  const embedded = [env.DATABASE_URL, env.REDIS_URL, env.REDIS_CLUSTER_NODES].every(
    (value) => value === undefined || value === '',
  );
  return {
    nodeEnv,
    logLevel: parseLogLevel(env.LOG_LEVEL),
    // Outside production only this machine can reach the service unless HOST says otherwise
    // (a laptop on a café's network); the Docker image sets HOST=0.0.0.0.
    host: env.HOST || (nodeEnv === 'production' ? '0.0.0.0' : '127.0.0.1'),
    port: parseIntVar(env, 'PORT', 4000, 0, 65535),
    embedded,
    embeddedDbFile: env.EMBEDDED_DB_FILE || 'data/feed.sqlite',
    databaseUrl: parseUrlVar(env, 'DATABASE_URL', 'mysql://root@127.0.0.1:3306/feed', ['mysql:']),
    redisUrl: parseUrlVar(env, 'REDIS_URL', 'redis://127.0.0.1:6379/0', ['redis:', 'rediss:']),
    redisClusterNodes: parseClusterNodes(env.REDIS_CLUSTER_NODES),
    redisKeyPrefix: parseKeyPrefix(env.REDIS_KEY_PREFIX),
    redisCommandTimeoutMs: parseIntVar(env, 'REDIS_COMMAND_TIMEOUT_MS', 300, 10, 60_000),
    databasePoolSize: parseIntVar(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseStatementTimeoutMs: parseIntVar(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 10_000, 0, 3_600_000),
    databaseReplicaUrls: parseReplicaUrls(env.DATABASE_REPLICA_URLS),
    // 100 ms at least: the health check measures lag in steps of REPLICA_CHECK_INTERVAL_MS (250 ms).
    replicaMaxLagMs: parseIntVar(env, 'REPLICA_MAX_LAG_MS', 1000, 100, 3_600_000),
    jwtSecret,
    jwtSecretFile: env.JWT_SECRET_FILE || 'data/jwt-secret',
    jwtExpiresInSeconds: parseIntVar(env, 'JWT_EXPIRES_IN_SECONDS', 7 * 24 * 3600, 60, 365 * 24 * 3600),
    sessionRecheckSeconds: parseIntVar(env, 'SESSION_RECHECK_SECONDS', 30, 1, 3600),
    // OWASP's scrypt parameters (Password Storage Cheat Sheet): N=2^17, r=8, p=1, 128 MiB per hash.
    passwordHashCost: parsePowerOfTwo(env, 'PASSWORD_HASH_COST', 1 << 17, 1024, 1 << 20),
    // What large platforms allow (X: 5,000 before its ratio rules), far above any real reader's
    // needs, and a bound on what one account's follows can cost a feed page or a fan-out.
    maxFollowing: parseIntVar(env, 'MAX_FOLLOWING', 5000, 1, 1_000_000),
    feedModel: parseFeedModel(env.FEED_MODEL, embedded),
    feedMaxItems: parseIntVar(env, 'FEED_MAX_ITEMS', 800, 10, 100_000),
    // What a rebuild reads: after a Redis loss every active reader's inbox is rebuilt, so its depth
    // is what the loss costs MySQL (bench:mixed: a quarter of the rows a rebuild and twice the
    // rebuilds a second at 200 against 800); pages deeper than it read MySQL, as past any inbox.
    feedRebuildItems: parseIntVar(env, 'FEED_REBUILD_ITEMS', 200, 10, 100_000),
    // A page that waits for its rebuild reads the rebuilt inbox instead of MySQL: after a Redis
    // loss, one rebuild per reader instead of pulled pages too (feed.service.ts).
    feedRebuildWaitMs: parseIntVar(env, 'FEED_REBUILD_WAIT_MS', DEFAULT_FEED_REBUILD_WAIT_MS, 0, 60_000),
    // After a Redis loss every active reader's inbox is rebuilt: these many at once per process
    // bound what the loss costs MySQL (feed.service.ts says why 32).
    feedRebuildsInFlight: parseIntVar(env, 'FEED_REBUILDS_IN_FLIGHT', DEFAULT_FEED_REBUILDS_IN_FLIGHT, 1, 256),
    bigAuthorFollowers: parseIntVar(env, 'BIG_V_FOLLOWERS', 10_000, 1, 1_000_000_000),
    activeDays: parseIntVar(env, 'ACTIVE_DAYS', 7, 1, 3650),
    followBackfillItems: parseIntVar(env, 'FOLLOW_BACKFILL_ITEMS', 200, 1, 10_000),
    // How long a publish may take between adding its task to the fan-out watermark and its
    // commit; a watermark rebuilt after Redis lost it waits this long before it is trusted.
    watermarkSettleMs: parseIntVar(env, 'WATERMARK_SETTLE_MS', 1000, 0, 60_000),
    // Longer than the slowest rebuild (a snapshot of FEED_MAX_ITEMS entries takes milliseconds);
    // a build taken over too early only makes the first one's finish a no-op.
    buildStaleMs: parseIntVar(env, 'BUILD_STALE_MS', 30_000, 1000, 3_600_000),
    fanoutWorkers: parseIntVar(env, 'FANOUT_WORKERS', 1, 0, 64),
    fanoutConcurrency: parseIntVar(env, 'FANOUT_CONCURRENCY', 16, 1, 256),
    fanoutChunkSize: parseIntVar(env, 'FANOUT_CHUNK_SIZE', 1000, 1, 100_000),
    fanoutJobsPerSecond: parseIntVar(env, 'FANOUT_JOBS_PER_SECOND', 0, 0, 1_000_000),
    fanoutLockMs: parseIntVar(env, 'FANOUT_LOCK_MS', 30_000, 1000, 600_000),
    outboxRelayIntervalMs: parseIntVar(env, 'OUTBOX_RELAY_INTERVAL_MS', 1000, 50, 600_000),
    fanoutRedriveAfterMs: parseIntVar(env, 'FANOUT_REDRIVE_AFTER_MS', 60_000, 1000, 86_400_000),
    fanoutJobAttempts: parseIntVar(env, 'FANOUT_JOB_ATTEMPTS', 10, 1, 100),
    fanoutJobBackoffMs: parseIntVar(env, 'FANOUT_JOB_BACKOFF_MS', 500, 10, 600_000),
    fanoutRetentionDays: parseIntVar(env, 'FANOUT_RETENTION_DAYS', 7, 1, 3650),
    rateLimits: {
      enabled: parseOnOff(env, 'RATE_LIMITS', true),
      signUpPerIp: parseRule(env, 'RATE_LIMIT_SIGNUP_PER_IP', '10/3600'),
      loginPerIp: parseRule(env, 'RATE_LIMIT_LOGIN_PER_IP', '30/900'),
      loginPerNickNameIp: parseRule(env, 'RATE_LIMIT_LOGIN_PER_NICKNAME_IP', '10/900'),
      // Slower than the pair's: an hour's window, shared by every address that guesses.
      loginPerNickName: parseRule(env, 'RATE_LIMIT_LOGIN_PER_NICKNAME', '20/3600'),
      publishPerUser: parseRule(env, 'RATE_LIMIT_PUBLISH_PER_USER', '30/3600'),
      likePerUser: parseRule(env, 'RATE_LIMIT_LIKE_PER_USER', '300/600'),
      followPerUser: parseRule(env, 'RATE_LIMIT_FOLLOW_PER_USER', '200/3600'),
      subscribePerUser: parseRule(env, 'RATE_LIMIT_SUBSCRIBE_PER_USER', '60/600'),
      // A page view makes a few requests; 5 a second on average leaves room for a few dozen
      // visitors behind one NAT, and signed-in clients are not counted.
      anonymousPerIp: parseRule(env, 'RATE_LIMIT_ANONYMOUS_PER_IP', '300/60'),
    },
    corsOrigins: (env.CORS_ORIGINS ?? '')
      .split(',')
      .map((origin) => origin.trim())
      .filter((origin) => origin !== ''),
    trustedProxies: parseTrustedProxies(env.TRUSTED_PROXIES),
    introspection: parseOnOff(env, 'INTROSPECTION', true),
    persistedDocuments: parsePersistedDocuments(env),
    metricsToken: parseMetricsToken(env.METRICS_TOKEN),
    shutdownTimeoutMs: parseIntVar(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    // An app needs one subscription; 10 leaves room for a phone and a few tabs on one process.
    maxSubscriptionsPerUser: parseIntVar(env, 'MAX_SUBSCRIPTIONS_PER_USER', 10, 1, 1000),
    webSockets: {
      // The capacity plan (docs/scaling.md) puts 40,000-45,000 live readers on each API process;
      // at about 40 KB of RSS each (bench:live) 50,000 are 2 GB, what a process of a few GB holds
      // beside its HTTP traffic.
      maxSockets: parseIntVar(env, 'MAX_WEBSOCKETS', 50_000, 1, 1_000_000),
      // As MAX_SUBSCRIPTIONS_PER_USER: a phone and a few tabs, each with a socket of its own.
      maxSocketsPerUser: parseIntVar(env, 'MAX_WEBSOCKETS_PER_USER', 10, 1, 1000),
      // Room for MAX_SUBSCRIPTIONS_PER_USER's default on one socket and as many queries beside them.
      maxOperationsPerSocket: parseIntVar(env, 'MAX_OPERATIONS_PER_WEBSOCKET', 20, 1, 1000),
      // A few of the largest answers (a followFeed page of 100 long blogs is about 1.5 MB):
      // a client that reads at all never comes near it.
      maxBufferedBytes: parseIntVar(
        env,
        'WEBSOCKET_MAX_BUFFERED_BYTES',
        4 * 1024 * 1024,
        64 * 1024,
        1024 * 1024 * 1024,
      ),
    },
    // 64 kB at least: the smallest answers (a sign-up, an error) must always fit.
    responseMaxBytes: parseIntVar(env, 'RESPONSE_MAX_BYTES', DEFAULT_RESPONSE_MAX_BYTES, 64 * 1024, 1024 * 1024 * 1024),
    ...parseHttpTimeouts(env),
    operations: parseOperations(env, nodeEnv, embedded),
  };
}

/**
 * HTTP_HEADERS_TIMEOUT_MS (default 10 s: headers are a few hundred bytes, sent at once even on a
 * slow phone) and HTTP_REQUEST_TIMEOUT_MS (default 30 s: a 100 kB body at 30 kbit/s). node:http
 * refuses a headers timeout above the request timeout.
 */
function parseHttpTimeouts(env: Env): Pick<Config, 'httpHeadersTimeoutMs' | 'httpRequestTimeoutMs'> {
  const httpHeadersTimeoutMs = parseIntVar(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const httpRequestTimeoutMs = parseIntVar(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 600_000);
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    throw new ConfigError(
      `HTTP_HEADERS_TIMEOUT_MS (${httpHeadersTimeoutMs}) must not be above HTTP_REQUEST_TIMEOUT_MS (${httpRequestTimeoutMs})`,
    );
  }
  return { httpHeadersTimeoutMs, httpRequestTimeoutMs };
}

const MIGRATIONS_SIGN_NOTHING = 'migrations-sign-no-tokens-so-this-secret-is-never-used';

/**
 * What `npm run migrate` reads: where the database is (DATABASE_URL, or the embedded file when
 * none of the store URLs is set), by the same rules as loadConfig. Migrating needs no secret, so
 * JWT_SECRET is not required even in production.
 */
export function loadMigrationConfig(
  env: Env = process.env,
): Pick<Config, 'nodeEnv' | 'logLevel' | 'embedded' | 'embeddedDbFile' | 'databaseUrl'> {
  // Any valid secret: loadConfig checks the one it is given, and migrations sign nothing.
  const full = loadConfig({ ...env, JWT_SECRET: MIGRATIONS_SIGN_NOTHING });
  return {
    nodeEnv: full.nodeEnv,
    logLevel: full.logLevel,
    embedded: full.embedded,
    embeddedDbFile: full.embeddedDbFile,
    databaseUrl: full.databaseUrl,
  };
}

function parseOperations(env: Env, nodeEnv: NodeEnv, embedded: boolean): OperationsSettings {
  const serviceName = (env.OTEL_SERVICE_NAME ?? '').trim();
  return {
    migrateOnStart: parseOnOff(env, 'MIGRATE_ON_START', embedded || nodeEnv !== 'production'),
    workerPort: parseIntVar(env, 'WORKER_PORT', 4001, 0, 65535),
    otlpEndpoint: parseOtlpEndpoint(env.OTEL_EXPORTER_OTLP_ENDPOINT),
    serviceName: serviceName === '' ? null : serviceName,
  };
}

/** The collector's base URL (http or https); traces are posted to <endpoint>/v1/traces, as the OTLP specification says. */
function parseOtlpEndpoint(raw: string | undefined): string | null {
  if (raw === undefined || raw.trim() === '') return null;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT is not a valid URL (got "${raw}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT must start with http:// or https:// (got "${raw}")`);
  }
  return raw.trim().replace(/\/+$/, '');
}

/** "mysql://host:3306/feed,mysql://host2:3306/feed": each a mysql:// URL of a replica. */
function parseReplicaUrls(raw: string | undefined): string[] {
  const urls = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const url of urls) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`DATABASE_REPLICA_URLS must be comma-separated mysql:// URLs (got "${raw}")`);
    }
    if (parsed.protocol !== 'mysql:')
      throw new ConfigError(`DATABASE_REPLICA_URLS must be comma-separated mysql:// URLs (got "${raw}")`);
  }
  return urls;
}

/** Braces would turn into a Redis Cluster hash tag and put every key into one slot. */
function parseKeyPrefix(value: string | undefined): string {
  if (value !== undefined && /[{}]/.test(value)) {
    throw new ConfigError(`REDIS_KEY_PREFIX must not contain { or } (got "${value}")`);
  }
  return value ?? '';
}

/**
 * "10.0.0.1,10.1.0.0/16,fd00::/8": each an IPv4 or IPv6 address or CIDR range, as proxy-addr
 * (which applies them, in graphql/client-address.ts) reads them; its own check names the bad entry.
 */
function parseTrustedProxies(raw: string | undefined): string[] {
  const entries = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    // proxy-addr also takes names (loopback, ...) and netmasks; only addresses and CIDR ranges are documented here.
    if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(entry)) {
      throw new ConfigError(
        `TRUSTED_PROXIES must be comma-separated IP addresses or CIDR ranges, e.g. 10.0.0.1,10.1.0.0/16,fd00::/8 (got "${entry}")`,
      );
    }
    try {
      proxyaddr.compile(entry);
    } catch (error) {
      throw new ConfigError(`TRUSTED_PROXIES has a bad entry "${entry}": ${(error as Error).message}`);
    }
  }
  return entries;
}

function parseMetricsToken(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (raw.length < MIN_METRICS_TOKEN_LENGTH) {
    throw new ConfigError(`METRICS_TOKEN must be at least ${MIN_METRICS_TOKEN_LENGTH} characters (got ${raw.length})`);
  }
  return raw;
}

function parseLogLevel(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info';
  const level = LOG_LEVELS.find((known) => known === value.toLowerCase());
  if (!level) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${value}")`);
  return level;
}

function parseNodeEnv(value: string | undefined): NodeEnv {
  if (value === undefined || value === '') return 'development';
  if (value === 'production' || value === 'development' || value === 'test') return value;
  throw new ConfigError(`NODE_ENV must be production, development or test (got "${value}")`);
}

/** "host:port,host:port,..." */
function parseClusterNodes(raw: string | undefined): Array<{ host: string; port: number }> | null {
  if (raw === undefined || raw.trim() === '') return null;
  return raw.split(',').map((entry) => {
    const match = /^\s*([^\s:]+):(\d{1,5})\s*$/.exec(entry);
    if (!match || Number(match[2]) > 65535) {
      throw new ConfigError(`REDIS_CLUSTER_NODES must be host:port,host:port,... (got "${raw}")`);
    }
    return { host: match[1], port: Number(match[2]) };
  });
}

function parsePersistedDocuments(env: Env): PersistedDocumentsSettings {
  const mode = env.PERSISTED_DOCUMENTS ?? 'off';
  if (mode !== 'off' && mode !== 'allow' && mode !== 'only')
    throw new ConfigError(`PERSISTED_DOCUMENTS must be off, allow or only (got "${mode}")`);
  const manifestFile = env.PERSISTED_DOCUMENTS_MANIFEST || null;
  if (mode !== 'off' && !manifestFile) {
    throw new ConfigError(
      `PERSISTED_DOCUMENTS=${mode} needs PERSISTED_DOCUMENTS_MANIFEST, the path of the manifest of trusted documents`,
    );
  }
  if (mode === 'off' && manifestFile) {
    throw new ConfigError(
      `PERSISTED_DOCUMENTS_MANIFEST is set (got "${manifestFile}") but PERSISTED_DOCUMENTS is off: set it to allow or only`,
    );
  }
  return { mode, manifestFile };
}

function parseOnOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on') return true;
  if (raw === 'off') return false;
  throw new ConfigError(`${name} must be on or off (got "${raw}")`);
}

/** "points/seconds", e.g. "10/900": at most 10 per 15 minutes. */
function parseRule(env: Env, name: string, fallback: string): RateLimitRule {
  const raw = env[name] === undefined || env[name] === '' ? fallback : env[name];
  const match = /^(\d{1,9})\/(\d{1,9})$/.exec(raw.trim());
  if (!match || Number(match[1]) < 1 || Number(match[2]) < 1) {
    throw new ConfigError(`${name} must be <points>/<seconds>, e.g. 10/900 (got "${raw}")`);
  }
  return { points: Number(match[1]), seconds: Number(match[2]) };
}

/** hybrid by default; pull in the embedded mode, which has no Redis to keep inboxes in. */
function parseFeedModel(value: string | undefined, embedded: boolean): FeedModel {
  if (value === undefined || value === '') return embedded ? 'pull' : 'hybrid';
  if (value !== 'push' && value !== 'pull' && value !== 'hybrid') {
    throw new ConfigError(`FEED_MODEL must be push, pull or hybrid (got "${value}")`);
  }
  if (embedded && value !== 'pull') {
    throw new ConfigError(
      `FEED_MODEL=${value} keeps inboxes in Redis, but no REDIS_URL or REDIS_CLUSTER_NODES is set (the embedded mode ` +
        'has only FEED_MODEL=pull): set DATABASE_URL and REDIS_URL, or leave FEED_MODEL unset',
    );
  }
  return value;
}

function parseIntVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) {
    throw new ConfigError(`${name} must be a whole number (got "${raw}")`);
  }
  const value = Number(raw.trim());
  if (value < min || value > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max} (got ${value})`);
  }
  return value;
}

function parsePowerOfTwo(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = parseIntVar(env, name, fallback, min, max);
  if ((value & (value - 1)) !== 0) {
    throw new ConfigError(`${name} must be a power of two (got ${value})`);
  }
  return value;
}

function parseUrlVar(env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = env[name];
  const value = raw === undefined || raw === '' ? fallback : raw;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} is not a valid URL (got "${value}")`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(
      `${name} must start with ${protocols.map((protocol) => `${protocol}//`).join(' or ')} (got "${value}")`,
    );
  }
  return value;
}
