/**
 * `npm start`: configuration, the stores (MySQL and Redis, or the embedded SQLite file; created
 * and migrated when MIGRATE_ON_START says so), and the GraphQL endpoint at POST /graphql.
 *
 * Tracing starts first (telemetry.ts, when OTEL_EXPORTER_OTLP_ENDPOINT is set): its
 * instrumentations patch http, graphql, mysql2 and ioredis as they load, so everything that
 * loads them is imported after it, in main().
 */
import 'reflect-metadata';
import { loadConfig } from './kernel/config';
import { runEntryPoint, stopOnSignals } from './kernel/lifecycle';
import { logger } from './kernel/observability';
import { startTracing } from './telemetry';

async function main(): Promise<void> {
  const config = loadConfig();
  const tracing = await startTracing(config.operations, 'follow-feed-api');
  const [{ startApp }, { checkInboxEncoding }, { describeStores, openStores }] = await Promise.all([
    import('./app'),
    import('./redis/redis.client'),
    import('./stores'),
  ]);
  // The first line says what the process runs on (the embedded mode must never be a surprise).
  logger.info(describeStores(config));
  if (config.jwtSecretIsDefault) {
    logger.warn(
      '!!! JWT_SECRET is not set: using the insecure development default. Anyone can forge tokens. ' +
        'Set JWT_SECRET (required when NODE_ENV=production). !!!',
    );
  }
  const stores = await openStores(config, logger);
  if (stores.redis && config.feedModel !== 'pull') void checkInboxEncoding(stores.redis, config.feedMaxItems, (message) => logger.warn(message));
  const app = await startApp({ config, db: stores.db, redis: stores.redis });
  const workers = config.embedded ? 'no fan-out' : `FANOUT_WORKERS=${config.fanoutWorkers}`;
  const traced = config.operations.otlpEndpoint ? `, traces to ${config.operations.otlpEndpoint}` : '';
  logger.info(`follow-feed listening on ${app.url} (NODE_ENV=${config.nodeEnv}, FEED_MODEL=${config.feedModel}, ${workers}${traced})`);
  stopOnSignals(
    'finishing in-flight requests',
    async () => {
      await app.stop();
      await stores.close();
      await tracing.shutdown();
    },
    config.shutdownTimeoutMs,
  );
}

runEntryPoint(main);
