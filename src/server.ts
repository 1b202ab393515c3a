/**
 * `npm start`: configuration, the stores (MySQL and Redis, or the embedded SQLite file; created
 * and migrated when MIGRATE_ON_START says so), and the GraphQL endpoint at POST /graphql.
 *
 * Tracing starts first (telemetry.ts, when OTEL_EXPORTER_OTLP_ENDPOINT is set): its
 * instrumentations patch http, graphql, mysql2 and ioredis as they load, so everything that
 * loads them is imported after it, in main().
 */
import 'reflect-metadata';
import { resolve } from 'node:path';
import { readOrCreateSecretFile } from './auth/auth.secret';
import { Config, loadConfig } from './kernel/config';
import { runEntryPoint, stopOnSignals } from './kernel/lifecycle';
import { logger, setLogLevel } from './kernel/observability';
import { startTracing } from './telemetry';

async function main(): Promise<void> {
  const loaded = loadConfig();
  setLogLevel(loaded.logLevel);
  const tracing = await startTracing(loaded.operations, 'follow-feed-api');
  const [{ startApp }, { checkInboxEncoding }, { describeStores, openStores }] = await Promise.all([
    import('./app'),
    import('./redis/redis.client'),
    import('./stores'),
  ]);
  // The first line says what the process runs on (the embedded mode must never be a surprise).
  logger.info(describeStores(loaded));
  const stores = await openStores(loaded, logger);
  if (stores.redis && loaded.feedModel !== 'pull')
    void checkInboxEncoding(stores.redis, loaded.feedMaxItems, (message) => logger.warn(message));
  // Once the stores are open: a process that cannot serve makes no secret file.
  const config = withSigningSecret(loaded);
  const app = await startApp({ config, db: stores.db, redis: stores.redis });
  const workers = config.embedded ? 'no fan-out' : `FANOUT_WORKERS=${config.fanoutWorkers}`;
  const traced = config.operations.otlpEndpoint ? `, traces to ${config.operations.otlpEndpoint}` : '';
  stopOnSignals(
    'finishing in-flight requests',
    async () => {
      await app.stop();
      await stores.close();
      await tracing.shutdown();
    },
    config.shutdownTimeoutMs,
  );
  // Announced once the handlers are in place: a SIGTERM sent on seeing this line (a supervisor,
  // a test) is a graceful stop, never the default action that kills the process mid-step.
  logger.info(
    `follow-feed listening on ${app.url} (NODE_ENV=${config.nodeEnv}, FEED_MODEL=${config.feedModel}, ${workers}${traced})`,
  );
}

/**
 * The configuration with the secret that signs tokens: JWT_SECRET, or (outside production,
 * where it may be unset) the random one kept in JWT_SECRET_FILE, made at the first start.
 */
function withSigningSecret(config: Config): Config {
  if (config.jwtSecret !== null) return config;
  const file = resolve(config.jwtSecretFile);
  const { secret, created } = readOrCreateSecretFile(file);
  logger.warn(
    `JWT_SECRET is not set: tokens are signed with the random secret ${created ? 'generated now into' : 'kept in'} ${file} ` +
      '(JWT_SECRET_FILE). Every process that must accept the same tokens needs the same secret: set JWT_SECRET ' +
      '(required when NODE_ENV=production).',
  );
  return { ...config, jwtSecret: secret };
}

runEntryPoint(main);
