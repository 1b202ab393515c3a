/**
 * The composition root: builds the services from their dependencies, and the HTTP app around
 * Apollo Server. Nothing here reads the environment: the caller passes a Config (server.ts from
 * the real environment, tests from their own).
 */
import 'reflect-metadata';
import { ApolloServer, ApolloServerPlugin } from '@apollo/server';
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import cors from 'cors';
import express from 'express';
import { GraphQLError, GraphQLFormattedError, OperationDefinitionNode } from 'graphql';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { PasswordHasher } from './auth/auth.passwords';
import { AuthService } from './auth/auth.service';
import { TokenService } from './auth/auth.tokens';
import { BlogService } from './blog/blog.service';
import { Config, ConfigError } from './kernel/config';
import { FanoutQueue } from './fanout/fanout.queue';
import { FanoutService } from './fanout/fanout.service';
import { FanoutStore } from './fanout/fanout.store';
import { FanoutWorkers } from './fanout/fanout.worker';
import { createFeedService } from './feed/feed.setup';
import { createLogger, Metrics, operationLabeler } from './kernel/observability';
import { FollowService } from './follow/follow.service';
import { Context, Services } from './graphql/context';
import { createDataSource, SqlStatementLog } from './db/data-source';
import { isDatabaseTooSlow, isDatabaseUnavailable } from './db/sql';
import { poolLimits } from './stores';
import { ErrorCode, internalServerError, serviceUnavailable, validationFailed } from './kernel/errors';
import { clientAddressOf } from './graphql/client-address';
import { queryLimitsPlugin } from './graphql/limits';
import { graphqlHandler, isGraphQLPost } from './graphql/http';
import { createLoaders } from './graphql/loaders';
import { RateLimits } from './graphql/rate-limits';
import { buildFeedSchema } from './graphql/schema';
import { LikeService } from './like/like.service';
import { RedisKeys } from './redis/keys';
import { withTimeout } from './kernel/timeout';
import type { RedisClient } from './redis/redis.client';
import { breakerOf } from './redis/breaker';
import { UserService } from './user/user.service';

/** dist/graphiql, from dist/src (compiled) or src (ts-jest). */
const GRAPHIQL_DIR = join(__dirname, ...(__dirname.endsWith(join('dist', 'src')) ? ['..'] : ['..', 'dist']), 'graphiql');

const GRAPHIQL_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>follow-feed GraphiQL</title>
  <link rel="stylesheet" href="/graphiql/app.css" />
  <style>body { margin: 0; } #graphiql { height: 100dvh; }</style>
</head>
<body>
  <div id="graphiql">Loading GraphiQL...</div>
  <script type="module" src="/graphiql/app.js"></script>
</body>
</html>
`;

/** How long /readyz waits for MySQL and Redis. */
const READY_TIMEOUT_MS = 1000;

/** Largest request body accepted (a publishBlog at its limits is about 60 kB of UTF-8). */
export const MAX_BODY_BYTES = 100 * 1024;

export interface AppDeps {
  config: Config;
  db: DataSource;
  /** null in the embedded mode: no inboxes, no fan-out queue, rate limits in memory. */
  redis: RedisClient | null;
  /** The clock for created_at values; tests pass a fixed one to create same-millisecond ties. */
  now?: () => Date;
}

/** The service's log (JSON lines, see observability.ts). */
export const logger = createLogger();

/** Warnings of background work (fan-out, relay): logged, never thrown at a request. */
export function warn(message: string, error?: unknown): void {
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a thrown non-Error has nothing better than its String() form
  logger.warn(error === undefined ? { msg: message } : { msg: message, err: error instanceof Error ? error.message : String(error) });
}

export interface AppServices extends Services {
  tokens: TokenService;
  /** null without Redis (the embedded mode), where nothing is fanned out. */
  fanoutQueue: FanoutQueue | null;
  metrics: Metrics;
}

export function createServices({ config, db, redis, now = () => new Date() }: AppDeps): AppServices {
  const keys = new RedisKeys(config.redisKeyPrefix);
  const fanoutQueue = redis ? new FanoutQueue(config) : null;
  const metrics = new Metrics(fanoutQueue ? () => fanoutQueue.queue.getJobCounts('waiting', 'delayed', 'active', 'failed') : undefined);
  const tokens = new TokenService(config.jwtSecret, config.jwtExpiresInSeconds);
  const users = new UserService(db, now);
  const fanoutStore = new FanoutStore(db, now);
  const feed = createFeedService(config, db, redis, { warn, metrics, inFlight: fanoutStore });
  const follows = new FollowService(db, users, feed, now);
  const fanout = new FanoutService(fanoutStore, fanoutQueue, warn);
  const blogs = new BlogService(db, fanout, feed, now);
  const likes = new LikeService(db, blogs, now);
  // A new user's inbox is only a head start: like any missing inbox, it is built from MySQL on
  // the first feed read. So with Redis away the account is created and the sign-up succeeds
  // (failing it would make the retry say "taken"); the inbox is skipped with a warning.
  const openInbox = (id: number): Promise<void> =>
    feed.openInbox(id).catch((error: unknown) => warn(`opening the inbox of new user ${id} failed; it is built on their first feed read`, error));
  const auth = new AuthService(users, new PasswordHasher(config.passwordHashCost), tokens, openInbox);
  const rateLimits = new RateLimits(redis, keys, config.rateLimits);
  return { auth, users, blogs, follows, likes, feed, fanout, rateLimits, tokens, fanoutQueue, metrics };
}

export interface RunningApp {
  url: string;
  services: AppServices;
  /**
   * Stops accepting, finishes in-flight requests and the running fan-out jobs of this process
   * (queued ones stay queued for the next worker). Closing the pools is the caller's.
   */
  stop(): Promise<void>;
}

export async function startApp(deps: AppDeps): Promise<RunningApp> {
  const { config } = deps;
  const services = createServices(deps);
  // A fresh (or flushed) Redis has no watermark: until it is rebuilt, pages come from MySQL.
  services.feed.syncInBackground();
  const { redis } = deps;
  // In-process fan-out workers get a MySQL pool of their own (DATABASE_POOL_SIZE connections): a
  // burst of chunk jobs, FANOUT_CONCURRENCY at once per worker, must never hold the connections
  // that requests wait for.
  const workerDb = redis && services.fanoutQueue && config.fanoutWorkers > 0 ? await openWorkerPool(config) : null;
  const workers =
    redis && services.fanoutQueue && workerDb
      ? new FanoutWorkers({ ...deps, db: workerDb, redis, queue: services.fanoutQueue, warn, metrics: services.metrics })
      : null;
  workers?.start(config.fanoutWorkers);
  const app = express();
  // POST /graphql, nearly all the traffic, skips Express (see graphql/http.ts). handleGraphQL is
  // made below, once Apollo has started; no request arrives before the server listens.
  const httpServer = http.createServer((req, res) => {
    if (isGraphQLPost(req)) handleGraphQL(req, res);
    else app(req, res);
  });
  const schema = buildFeedSchema();
  const apollo = new ApolloServer<Context>({
    schema,
    includeStacktraceInErrorResponses: config.nodeEnv !== 'production',
    // Apollo's default turns introspection off under NODE_ENV=production, which leaves GraphiQL
    // without a schema and codegen without input; the schema is public anyway
    // (schema/schema.graphql). INTROSPECTION=off turns it off.
    introspection: config.introspection,
    // server.ts owns SIGTERM/SIGINT; a second, overlapping stop() from Apollo's own handler
    // never settles and would keep the process from exiting.
    stopOnTerminationSignals: false,
    formatError: (formatted, error) => formatError(formatted, error, config.nodeEnv === 'production'),
    plugins: [
      // Connections still open halfway through SHUTDOWN_TIMEOUT_MS are cut (a keep-alive client
      // may never close its side), leaving the other half to fan-out jobs and the pools.
      ApolloServerPluginDrainHttpServer({ httpServer, stopGracePeriodMillis: Math.floor(config.shutdownTimeoutMs / 2) }),
      ApolloServerPluginLandingPageDisabled(),
      // The default cache-control plugin wraps every field resolver to compute HTTP cache hints;
      // feeds are per viewer and never cacheable, and the wrapping halved feed throughput.
      ApolloServerPluginCacheControlDisabled(),
      // Inline traces go to an Apollo gateway; there is none.
      ApolloServerPluginInlineTraceDisabled(),
      queryLimitsPlugin(schema),
      requestLogPlugin(services.metrics, operationLabeler(schema)),
    ],
  });
  await apollo.start();

  // Liveness: the process answers. Readiness: it can reach its database and Redis (orchestrators
  // send traffic only to ready instances; a not-ready one still serves degraded feeds).
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // GraphiQL for a browser (Accept: text/html) at the API's own address; its bundle is served
  // from /graphiql (built by `npm run build`, no CDN). Clients posting JSON never see it.
  app.use('/graphiql', express.static(GRAPHIQL_DIR, { maxAge: '1h' }));
  app.get('/graphql', (req, res, next) => {
    if (req.accepts(['json', 'html']) !== 'html') return next();
    if (!existsSync(join(GRAPHIQL_DIR, 'app.js'))) {
      res.status(503).type('text').send('GraphiQL is not built: run `npm run build`.');
      return;
    }
    res.type('html').send(GRAPHIQL_PAGE);
  });
  const metricsAllowed = metricsAuthorization(config.metricsToken);
  app.get('/metrics', async (req, res) => {
    if (!metricsAllowed(req.headers.authorization)) {
      res.status(401).set('www-authenticate', 'Bearer realm="metrics"').type('text').send('send METRICS_TOKEN as Authorization: Bearer <token>');
      return;
    }
    res.type(services.metrics.registry.contentType).send(await services.metrics.registry.metrics());
  });
  // Ready means "can serve": MySQL answers. Redis only speeds things up (feeds fall back to MySQL,
  // rate limits to memory, fan-out waits in the outbox), so a Redis that is down or hangs makes
  // the instance "degraded", still 200: failing readiness then would take every instance out of
  // the load balancer at once for an outage they all ride out.
  app.get('/readyz', async (_req, res) => {
    const check = (name: string, probe: Promise<unknown>) =>
      withTimeout(probe, READY_TIMEOUT_MS, name).then(
        () => 'ok',
        (error: unknown) => String(error),
      );
    const database = config.embedded ? 'sqlite' : 'mysql';
    const [db, redisCheck] = await Promise.all([
      check(config.embedded ? 'SQLite' : 'MySQL', deps.db.query('SELECT 1')),
      redis ? check('Redis', redis.ping()) : undefined,
    ]);
    const results: Record<string, string> = { [database]: db };
    if (redis) {
      const breaker = breakerOf(redis)?.state ?? 'closed';
      results.redis = redisCheck === 'ok' && breaker === 'closed' ? 'ok' : 'degraded';
      if (results.redis !== 'ok') results.redisError = redisCheck === 'ok' ? `circuit breaker ${breaker}` : redisCheck!;
    }
    res.status(db === 'ok' ? 200 : 503).json(results);
  });
  const clientAddress = clientAddressOf(config.trustedProxies);
  const contextOf = async (req: http.IncomingMessage, requestId: string): Promise<Context> => {
    const auth = services.tokens.check(req.headers.authorization);
    const viewerId = auth.kind === 'viewer' ? auth.userId : null;
    if (viewerId !== null) {
      services.feed.recordActivity(viewerId).catch((error: unknown) => warn(`recording activity of user ${viewerId} failed`, error));
    }
    const ip = clientAddress(req);
    return { auth, ip, requestId, services, loaders: createLoaders(services, viewerId) };
  };
  const handleGraphQL = graphqlHandler({
    apollo,
    // Browsers may call the API only from the configured origins (CORS_ORIGINS). Apollo's CSRF
    // prevention stays on: a request without a JSON content type or an Apollo header is refused.
    cors: cors({ origin: config.corsOrigins, credentials: false }),
    maxBodyBytes: MAX_BODY_BYTES,
    requestIdOf,
    contextOf,
  });
  // The rest of /graphql (GET queries, CORS preflights, other methods) reaches the same handler
  // through Express, after the GraphiQL route above.
  app.use('/graphql', (req, res) => handleGraphQL(req, res));

  await listen(httpServer, config);
  const { port } = httpServer.address() as AddressInfo;
  const host = config.host === '0.0.0.0' ? 'localhost' : config.host;
  return {
    url: `http://${host}:${port}/graphql`,
    services,
    async stop() {
      await apollo.stop();
      await services.fanout.flush();
      await workers?.stop();
      await workerDb?.destroy();
      await services.fanoutQueue?.close();
    },
  };
}

/**
 * Whether an Authorization header may read /metrics: anyone without METRICS_TOKEN, else only
 * `Bearer <METRICS_TOKEN>`. Both sides are hashed first so that timingSafeEqual compares equal
 * lengths, and the time taken says nothing about how much of a guess was right.
 */
function metricsAuthorization(token: string | null): (header: string | undefined) => boolean {
  if (token === null) return () => true;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  // The scheme is case-insensitive (RFC 9110); the token is not.
  return (header) => timingSafeEqual(digest(/^bearer +(.+)$/i.exec(header ?? '')?.[1] ?? ''), expected);
}

/** The in-process fan-out workers' MySQL pool (migrations have run: the API's pool opened first). */
async function openWorkerPool(config: Config): Promise<DataSource> {
  const db = createDataSource(config.databaseUrl, new SqlStatementLog(logger), poolLimits(config));
  await db.initialize();
  return db;
}

/** The caller's request id (a proxy's), or a new one; echoed so that logs can be matched. */
function requestIdOf(req: http.IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && given !== '' ? given.slice(0, 100) : randomUUID();
}

/** Starts listening; a taken or forbidden port is a configuration error that names PORT. */
async function listen(httpServer: http.Server, config: Config): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  }).catch((error: NodeJS.ErrnoException) => {
    const why = error.code === 'EADDRINUSE' ? 'it is in use (is another server running?)' : error.message;
    throw new ConfigError(`cannot listen on ${config.host}:${config.port} (PORT, HOST): ${why}`);
  });
}

/** Longest operationName written to a log line (a client may send 100 kB of it). */
const MAX_LOGGED_OPERATION_NAME = 100;

/**
 * One log line and one latency observation per GraphQL request. The metric is labelled with
 * the bounded `label` (see operationLabeler); the log line, where cardinality costs nothing,
 * also keeps the client's operationName.
 */
function requestLogPlugin(metrics: Metrics, label: (operation: OperationDefinitionNode | undefined) => string): ApolloServerPlugin<Context> {
  return {
    async requestDidStart({ contextValue }) {
      const started = performance.now();
      return {
        async willSendResponse({ operationName, operation: definition, errors, response }) {
          const seconds = (performance.now() - started) / 1000;
          const rootField = label(definition);
          metrics.request(rootField, seconds);
          const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
          const codes = [...(errors ?? []), ...(body?.errors ?? [])].map((error) => error.extensions?.code).filter(Boolean);
          logger.info({
            requestId: contextValue.requestId,
            operation: (operationName ?? 'anonymous').slice(0, MAX_LOGGED_OPERATION_NAME),
            rootField,
            durationMs: Math.round(seconds * 1000 * 10) / 10,
            viewerId: contextValue.auth?.kind === 'viewer' ? contextValue.auth.userId : null,
            ...(codes.length ? { errors: [...new Set(codes)] } : {}),
          });
        },
      };
    },
  };
}

/**
 * Errors the client caused keep their message and code. Anything else is a fault of ours: it is
 * logged in full, and in production the client sees only a generic message (no internals).
 */
function formatError(formatted: GraphQLFormattedError, error: unknown, production: boolean): GraphQLFormattedError {
  // MySQL too slow: a statement ran past DATABASE_STATEMENT_TIMEOUT_MS and was stopped.
  if (isDatabaseTooSlow((error as { originalError?: unknown })?.originalError ?? error)) {
    return serviceUnavailable('the database is too slow right now (a statement ran out of time); nothing changed; retry shortly', formatted);
  }
  // MySQL unreachable: the request failed for a reason the client can wait out.
  if (isDatabaseUnavailable((error as { originalError?: unknown })?.originalError ?? error)) {
    return serviceUnavailable('the database is unavailable; retry shortly', formatted);
  }
  // graphql-js's own refusals before any resolver ran (e.g. a subscription, which this schema
  // does not have) carry no original error: the request was at fault, not the server.
  const original = (error as { originalError?: unknown })?.originalError;
  if (formatted.extensions?.code === ErrorCode.INTERNAL_SERVER_ERROR && error instanceof GraphQLError && !original && !formatted.path) {
    return validationFailed(formatted.message, formatted);
  }
  // Our typed errors and Apollo's own (GRAPHQL_PARSE_FAILED, ...) carry their code; Apollo
  // marks everything else INTERNAL_SERVER_ERROR.
  // A stack trace of an error the client caused only says where we noticed it: leave it out.
  if (formatted.extensions?.code !== ErrorCode.INTERNAL_SERVER_ERROR) {
    const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
    return { ...formatted, extensions };
  }
  const cause = (error as { originalError?: unknown })?.originalError ?? error;
  logger.error({ msg: 'internal error', err: cause instanceof Error ? { message: cause.message, stack: cause.stack } : String(cause) });
  if (!production) return formatted;
  return internalServerError(formatted);
}
