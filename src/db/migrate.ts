/**
 * Creating and migrating the database: the one job TypeORM keeps (its migrations and CLI). The
 * service itself runs its SQL through the Database adapter (database.ts); the tables are
 * described once, by the migrations in migrations/.
 */
import { createConnection } from 'mysql2/promise';
import { DataSource, Logger as TypeOrmLogger } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { LogSink, SqlStatementLog } from './database';
import { MysqlPool, PoolLimits } from './mysql';
import { SqliteFile } from './sqlite';

/** TypeORM's logger interface, reporting to our sink: migrations always, statements when asked. */
class MigrationLog implements TypeOrmLogger {
  constructor(private readonly sqlLog: SqlStatementLog) {}

  logQuery(query: string): void {
    if (this.sqlLog.printStatements) this.sqlLog.sink.info(`[sql] ${query}`);
  }
  logQueryError(error: string | Error, query: string): void {
    this.sqlLog.sink.error(`[sql] failed: ${query}: ${String(error)}`);
  }
  logQuerySlow(time: number, query: string): void {
    this.sqlLog.sink.warn(`[sql] slow (${time} ms): ${query.slice(0, 200)}`);
  }
  logSchemaBuild(message: string): void {
    if (this.sqlLog.printStatements) this.sqlLog.sink.info(`[schema] ${message}`);
  }
  logMigration(message: string): void {
    this.sqlLog.sink.info(`[migration] ${message}`);
  }
  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.sqlLog.sink.warn(`[typeorm] ${String(message)}`);
    else if (this.sqlLog.printStatements) this.sqlLog.sink.info(`[typeorm] ${String(message)}`);
  }
}

/** A TypeORM DataSource that knows the migrations: for migrating, and for the TypeORM CLI (ormconfig.ts). */
export function migrationDataSource(databaseUrl: string, log: SqlStatementLog, poolSize = 2): DataSource {
  return new DataSource({
    type: 'mysql',
    url: databaseUrl,
    migrations: MIGRATIONS,
    migrationsTransactionMode: 'each',
    charset: 'utf8mb4_unicode_ci',
    timezone: 'Z',
    poolSize,
    logger: new MigrationLog(log),
  });
}

/** The database name of a mysql:// URL, checked to be a plain identifier. */
export function databaseNameOf(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(name)) {
    throw new Error(`DATABASE_URL must name a database of letters, digits and _ (got "${name}")`);
  }
  return name;
}

/**
 * Creates the database named in the URL when it does not exist, so `npm start` works against a
 * bare server. (A database name cannot be a bound parameter; it is checked to be a plain
 * identifier above and quoted here.)
 */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const name = databaseNameOf(databaseUrl);
  const serverUrl = new URL(databaseUrl);
  serverUrl.pathname = '/';
  const connection = await createConnection({ uri: serverUrl.toString(), connectTimeout: 10_000 });
  try {
    await connection.query(`CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await connection.end();
  }
}

/** How long a process waits for another one that is running the migrations. */
const MIGRATION_LOCK_SECONDS = 120;

/**
 * Connects, creating the database and running pending migrations first. An API and a worker
 * starting together on a fresh database would both run the migrations: a named lock
 * (GET_LOCK) lets one run them while the other waits and then finds nothing pending.
 */
export async function openMysql(databaseUrl: string, log: SqlStatementLog, limits: PoolLimits): Promise<MysqlPool> {
  await ensureDatabase(databaseUrl);
  await migrateMysql(databaseUrl, log);
  const db = new MysqlPool(databaseUrl, limits, log);
  await db.select('SELECT 1');
  return db;
}

/** Runs the pending migrations, without a statement time limit (an ALTER of a big table may rightly take minutes). */
async function migrateMysql(databaseUrl: string, log: SqlStatementLog): Promise<void> {
  // Two connections: one holds the migration lock while the migrations run on the other.
  const dataSource = migrationDataSource(databaseUrl, log, 2);
  await dataSource.initialize();
  const runner = dataSource.createQueryRunner();
  try {
    const lockName = `migrations:${databaseNameOf(databaseUrl)}`;
    const [{ locked }] = (await runner.query('SELECT GET_LOCK(?, ?) AS locked', [lockName, MIGRATION_LOCK_SECONDS])) as Array<{ locked: unknown }>;
    if (Number(locked) !== 1) throw new Error(`another process held the migration lock for ${MIGRATION_LOCK_SECONDS} s`);
    try {
      await dataSource.runMigrations();
    } finally {
      await runner.query('SELECT RELEASE_LOCK(?)', [lockName]);
    }
  } finally {
    await runner.release();
    await dataSource.destroy();
  }
}

/**
 * The embedded store: a SQLite file, created when missing and migrated by the same migrations
 * as MySQL, then opened with better-sqlite3 directly.
 */
export async function openSqlite(file: string, log: SqlStatementLog): Promise<SqliteFile> {
  const dataSource = new DataSource({
    type: 'better-sqlite3',
    database: file,
    migrations: MIGRATIONS,
    migrationsTransactionMode: 'each',
    enableWAL: true,
    timeout: 10_000,
    logger: new MigrationLog(log),
  });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
  return new SqliteFile(file, log);
}

export type { LogSink };
