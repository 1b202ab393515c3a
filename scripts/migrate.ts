/**
 * `npm run migrate` (in an image: `node dist/scripts/migrate.js`): creates the database named
 * in DATABASE_URL when it does not exist and runs the pending migrations, then exits; with no
 * DATABASE_URL, REDIS_URL or REDIS_CLUSTER_NODES, the embedded SQLite file (EMBEDDED_DB_FILE).
 *
 * The step a deploy runs once before it starts (or rolls) the API and the workers, as a user with
 * DDL rights, so that they can run with MIGRATE_ON_START=off as a user without (docs/operations.md,
 * "Database users"). Two runs at once are safe: a named lock lets one migrate while the other
 * waits and then finds nothing pending. Exits 1 with the reason when a migration fails.
 */
import 'reflect-metadata';
import { resolve } from 'node:path';
import { SqlStatementLog } from '../src/db/database';
import { migrateDatabase, migrateSqlite } from '../src/db/migrate';
import { redactUrl } from '../src/db/replicas';
import { loadMigrationConfig } from '../src/kernel/config';
import { runEntryPoint } from '../src/kernel/lifecycle';
import { logger, setLogLevel } from '../src/kernel/observability';

async function main(): Promise<void> {
  const config = loadMigrationConfig();
  setLogLevel(config.logLevel);
  const log = new SqlStatementLog(logger);
  const target = config.embedded
    ? `the embedded SQLite file ${resolve(config.embeddedDbFile)}`
    : `MySQL ${redactUrl(config.databaseUrl)}`;
  logger.info(`migrating ${target}`);
  const ran = config.embedded
    ? await migrateSqlite(config.embeddedDbFile, log)
    : await migrateDatabase(config.databaseUrl, log);
  logger.info(
    ran.length === 0
      ? `no pending migrations on ${target}`
      : `ran ${ran.length} migration(s) on ${target}: ${ran.join(', ')}`,
  );
}

runEntryPoint(main);
