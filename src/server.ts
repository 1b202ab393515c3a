/**
 * `npm start`: configuration, the stores (MySQL and Redis, or the embedded SQLite file; created
 * and migrated when needed), and the GraphQL endpoint at POST /graphql.
 */
import 'reflect-metadata';
import { resolve } from 'node:path';
import { startApp } from './app';
import { readOrCreateSecretFile } from './auth/auth.secret';
import { logger } from './kernel/observability';
import { Config, loadConfig } from './kernel/config';
import { runEntryPoint, stopOnSignals } from './kernel/lifecycle';
import { checkInboxEncoding } from './redis/redis.client';
import { describeStores, openStores } from './stores';

async function main(): Promise<void> {
  const loaded = loadConfig();
  // The first line says what the process runs on (the embedded mode must never be a surprise).
  logger.info(describeStores(loaded));
  const stores = await openStores(loaded, logger);
  if (stores.redis && loaded.feedModel !== 'pull') void checkInboxEncoding(stores.redis, loaded.feedMaxItems, (message) => logger.warn(message));
  // Once the stores are open: a process that cannot serve makes no secret file.
  const config = withSigningSecret(loaded);
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
