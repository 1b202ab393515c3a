/**
 * The API process's HTTP side, assembled on the domain services (src/composition.ts): the
 * GraphQL endpoint, the routes beside it, and the per-request context.
 */
import 'reflect-metadata';
import cors from 'cors';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import type { Core } from '../composition';
import { Config, ConfigError } from '../kernel/config';
import { readPrimaryInScope, replicasOf } from '../db/replicas';
import { createApollo } from './apollo';
import { clientAddressOf } from './client-address';
import type { Context, Services } from './context';
import { graphqlHandler, isGraphQLPost } from './http';
import { createLoaders, loaderSources } from './loaders';
import { serveSubscriptions } from './subscriptions';
import type { TokenCheck } from '../auth/auth.tokens';
import { RateLimits } from './rate-limits';
import { RecentWriters } from './read-your-writes';
import { createRoutes } from './routes';
import { buildFeedSchema } from './schema';

/** Largest request body accepted (a publishBlog at its limits is about 60 kB of UTF-8). */
export const MAX_BODY_BYTES = 100 * 1024;

export interface RunningApi {
  url: string;
  services: Services;
  /** Stops accepting and finishes in-flight requests. */
  stop(): Promise<void>;
}

export async function startApi(core: Core): Promise<RunningApi> {
  const { config } = core;
  const services: Services = { ...core, rateLimits: new RateLimits(core.redis, core.keys, config.rateLimits) };
  const routes = createRoutes(core);
  // POST /graphql, nearly all the traffic, skips Express (see http.ts). handleGraphQL is made
  // below, once Apollo has started; no request arrives before the server listens.
  const httpServer = http.createServer((req, res) => {
    if (isGraphQLPost(req)) handleGraphQL(req, res);
    else routes(req, res);
  });

  const clientAddress = clientAddressOf(config.trustedProxies);
  const sources = loaderSources(core);
  // Only with replicas can a read miss a write.
  const recentWriters = replicasOf(core.db) ? new RecentWriters(core.redis, core.keys, config.replicaMaxLagMs) : null;
  const wrote = (userId: number): void => recentWriters?.wrote(userId);
  const contextFor = (auth: TokenCheck, ip: string, requestId: string): Context => {
    const viewerId = auth.kind === 'viewer' ? auth.userId : null;
    if (viewerId !== null) {
      core.feed.recordActivity(viewerId).catch((error: unknown) => core.warn(`recording activity of user ${viewerId} failed`, error));
    }
    return { auth, ip, requestId, services, loaders: createLoaders(sources, viewerId), wrote };
  };

  const schema = buildFeedSchema();
  // Subscriptions over graphql-ws share the port and the path (ws://.../graphql).
  const subscriptions = serveSubscriptions(httpServer, {
    schema,
    services,
    checkToken: (authorization) => core.tokens.check(authorization),
    clientAddress,
    contextOf: contextFor,
    maxSubscriptionsPerUser: config.maxSubscriptionsPerUser,
    production: config.nodeEnv === 'production',
    metrics: core.metrics,
  });
  const apollo = createApollo(schema, httpServer, config, core.metrics, [subscriptions]);
  await apollo.start();

  const handleGraphQL = graphqlHandler({
    apollo,
    // Browsers may call the API only from the configured origins (CORS_ORIGINS). Apollo's CSRF
    // prevention stays on: a request without a JSON content type or an Apollo header is refused.
    cors: cors({ origin: config.corsOrigins, credentials: false }),
    maxBodyBytes: MAX_BODY_BYTES,
    readScopes: config.databaseReplicaUrls.length > 0,
    requestIdOf,
    contextOf: async (req, requestId) => {
      const context = contextFor(core.tokens.check(req.headers.authorization), clientAddress(req), requestId);
      // A recent writer's request reads the primary, which has their write (the request runs in
      // a read scope of its own: http.ts).
      if (context.auth.kind === 'viewer' && (await recentWriters?.isRecent(context.auth.userId))) readPrimaryInScope();
      return context;
    },
  });
  // The rest of /graphql (GET queries, CORS preflights, other methods) reaches the same handler
  // through Express, after the GraphiQL route.
  routes.use('/graphql', (req, res) => handleGraphQL(req, res));

  await listen(httpServer, config);
  const { port } = httpServer.address() as AddressInfo;
  const host = config.host === '0.0.0.0' ? 'localhost' : config.host;
  return {
    url: `http://${host}:${port}/graphql`,
    services,
    stop: () => apollo.stop(),
  };
}

/** The caller's request id (a proxy's), or a new one; echoed so that logs can be matched. */
function requestIdOf(req: http.IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && given !== '' ? given.slice(0, 100) : randomUUID();
}

/** Starts listening; a taken or forbidden port is a configuration error that names PORT. */
async function listen(httpServer: http.Server, config: Pick<Config, 'host' | 'port'>): Promise<void> {
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
