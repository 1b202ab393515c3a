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
import { logger } from '../kernel/observability';
import { readPrimaryInScope } from '../db/read-scope';
import { replicasOf } from '../db/replicas';
import { createApollo } from './apollo';
import { clientAddressOf } from './client-address';
import type { Context, Services } from './context';
import { graphqlHandler, isGraphQLPost } from './http';
import { PersistedDocuments } from './persisted-documents';
import { createLoaders, loaderSources } from './loaders';
import { serveSubscriptions } from './subscriptions';
import type { TokenCheck } from '../auth/auth.tokens';
import { RateLimits } from './rate-limits';
import { RecentWriters } from './read-your-writes';
import { createRoutes } from './routes';
import { buildFeedSchema } from './schema';

/** Largest request body accepted (a publishBlog at its limits is about 60 kB of UTF-8). */
export const MAX_BODY_BYTES = 100 * 1024;

/**
 * How often node:http looks for connections past HTTP_HEADERS_TIMEOUT_MS or
 * HTTP_REQUEST_TIMEOUT_MS (its default, 30 s, would let a slow client hold a connection up to
 * 30 s past either). A pass over the open connections each second costs nothing measurable.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

export interface RunningApi {
  url: string;
  services: Services;
  /** The HTTP server (probes: bench:mixed times its requests from their arrival to their answer written). */
  httpServer: http.Server;
  /** Stops accepting and finishes in-flight requests. */
  stop(): Promise<void>;
}

/** `documents`: the trusted documents, loaded (and their manifest checked) before anything started. */
export async function startApi(core: Core, documents: PersistedDocuments): Promise<RunningApi> {
  const { config } = core;
  const services: Services = { ...core, rateLimits: new RateLimits(core.redis, core.keys, config.rateLimits) };
  const routes = createRoutes(core);
  // POST /graphql, nearly all the traffic, skips Express (see http.ts). handleGraphQL is made
  // below, once Apollo has started; no request arrives before the server listens.
  // A client that sends its headers or its body too slowly (slow loris) is answered 408 and
  // cut: it cannot hold a connection and a request's memory for longer than these settings.
  const serverOptions: http.ServerOptions = {
    headersTimeout: config.httpHeadersTimeoutMs,
    requestTimeout: config.httpRequestTimeoutMs,
    connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, config.httpHeadersTimeoutMs),
  };
  const httpServer = http.createServer(serverOptions, (req, res) => {
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
      core.feed
        .recordActivity(viewerId)
        .catch((error: unknown) => core.warn(`recording activity of user ${viewerId} failed`, error));
    }
    return { auth, ip, requestId, services, loaders: createLoaders(sources, viewerId), wrote };
  };
  // A recent writer's operation reads the primary, which has their write (over HTTP and
  // WebSocket alike, each operation in a read scope of its own: http.ts, subscriptions.ts).
  const readsOf = async (context: Context): Promise<void> => {
    if (context.auth.kind === 'viewer' && (await recentWriters?.isRecent(context.auth.userId))) readPrimaryInScope();
  };
  const readScopes = config.databaseReplicaUrls.length > 0;

  const schema = buildFeedSchema();
  if (documents.mode !== 'off')
    logger.info(
      `trusted documents: PERSISTED_DOCUMENTS=${documents.mode}, ${documents.size} in ${config.persistedDocuments.manifestFile}`,
    );
  // Subscriptions over graphql-ws share the port and the path (ws://.../graphql).
  const subscriptions = serveSubscriptions(httpServer, {
    schema,
    services,
    checkToken: (authorization) => core.tokens.check(authorization),
    watchSession: (viewer, ended) => core.sessions.watch(viewer, ended),
    clientAddress,
    contextOf: contextFor,
    readsOf,
    documents,
    readScopes,
    maxSubscriptionsPerUser: config.maxSubscriptionsPerUser,
    limits: config.webSockets,
    registry: core.metrics.registry,
    warn: (message) => core.warn(message),
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
    documents,
    maxResponseBytes: config.responseMaxBytes,
    readScopes,
    requestIdOf,
    contextOf: async (req, requestId) => {
      const auth = await core.tokens.check(req.headers.authorization);
      const ip = clientAddress(req);
      // A forged or expired token counts as none: it would otherwise be a way around the limit.
      if (auth.kind !== 'viewer') await services.rateLimits.anonymousRequest(ip);
      const context = contextFor(auth, ip, requestId);
      await readsOf(context);
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
    httpServer,
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
