/**
 * `npm start`: configuration, database (created and migrated when needed), Redis, and the
 * GraphQL endpoint at POST /graphql.
 */
import 'reflect-metadata';
import { logger, startApp } from './app';
import { ConfigError, loadConfig } from './config';
import { openDatabase } from './db/data-source';
import { checkInboxEncoding, createRedis } from './redis/redis.client';

async function main(): Promise<void> {
  const config = loadConfig();
  if (config.jwtSecretIsDefault) {
    logger.warn(
      '!!! JWT_SECRET is not set: using the insecure development default. Anyone can forge tokens. ' +
        'Set JWT_SECRET (required when NODE_ENV=production). !!!',
    );
  }
  const db = await openDatabase(config.databaseUrl).catch((error: unknown) => {
    throw new ConfigError(`cannot open the database of DATABASE_URL (${redactUrl(config.databaseUrl)}): ${String(error)}`);
  });
  const redis = createRedis(config);
  if (config.feedModel !== 'pull') void checkInboxEncoding(redis, config.feedMaxItems);
  const app = await startApp({ config, db, redis });
  logger.info(`follow-feed listening on ${app.url} (NODE_ENV=${config.nodeEnv}, FEED_MODEL=${config.feedModel}, FANOUT_WORKERS=${config.fanoutWorkers})`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: finishing in-flight requests, then exiting`);
    await app.stop();
    await Promise.allSettled([db.destroy(), redis.quit()]);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** The URL without its password, for messages. */
function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
