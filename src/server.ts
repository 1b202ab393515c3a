/**
 * `npm start`: configuration, the stores (MySQL and Redis, or the embedded SQLite file; created
 * and migrated when needed), and the GraphQL endpoint at POST /graphql.
 */
import 'reflect-metadata';
import { startApp } from './app';
import { logger } from './kernel/observability';
import { loadConfig } from './kernel/config';
import { runEntryPoint, stopOnSignals } from './kernel/lifecycle';
import { checkInboxEncoding } from './redis/redis.client';
import { describeStores, openStores } from './stores';

async function main(): Promise<void> {
  const config = loadConfig();
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
  logger.info(`follow-feed listening on ${app.url} (NODE_ENV=${config.nodeEnv}, FEED_MODEL=${config.feedModel}, ${workers})`);
  stopOnSignals(
    'finishing in-flight requests',
    async () => {
      await app.stop();
      await stores.close();
    },
    config.shutdownTimeoutMs,
  );
}

runEntryPoint(main);
