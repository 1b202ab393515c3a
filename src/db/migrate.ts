/**
 * Creating and migrating the database: the one job TypeORM keeps (its migrations and CLI). The
 * service itself runs its SQL through the Database adapter (database.ts); the tables are
 * described once, by the migrations in migrations/.
 */
import { createConnection } from 'mysql2/promise';
import { DataSource, Logger as TypeOrmLogger } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { Database, LogSink, SqlStatementLog } from './database';
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
    await connection.query(
      `CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await connection.end();
  }
}

/** How long a process waits for another one that is running the migrations. */
const MIGRATION_LOCK_SECONDS = 120;

/**
 * Connects; with `migrate`, creates the database and runs pending migrations first. An API and a
 * worker starting together on a fresh database would both run the migrations: a named lock
 * (GET_LOCK) lets one run them while the other waits and then finds nothing pending. Without
 * `migrate` (MIGRATE_ON_START=off) it runs no DDL at all, and refuses a database that lacks
 * migrations (MigrationsPending).
 */
export async function openMysql(
  databaseUrl: string,
  log: SqlStatementLog,
  limits: PoolLimits,
  migrate = true,
): Promise<MysqlPool> {
  if (migrate) {
    await ensureDatabase(databaseUrl);
    await migrateMysql(databaseUrl, log);
  }
  const db = new MysqlPool(databaseUrl, limits, log);
  try {
    await db.select('SELECT 1');
    if (!migrate) await requireMigrated(db);
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  return db;
}

/** The names of the migrations this code knows, in order (TypeORM records each by its `name`). */
export function migrationNames(): string[] {
  return MIGRATIONS.map((Migration) => new Migration().name ?? Migration.name);
}

/** The database lacks migrations this code needs: `npm run migrate` runs them. */
export class MigrationsPending extends Error {
  override name = 'MigrationsPending';

  constructor(readonly pending: string[]) {
    super(
      `${pending.length} migration(s) not run yet (${pending.join(', ')}): run \`npm run migrate\` first (MIGRATE_ON_START=off)`,
    );
  }
}

/**
 * Throws MigrationsPending unless every migration of this code has run, read from TypeORM's
 * `migrations` table with a plain SELECT (a user without DDL rights may read it; a missing
 * table means none has run). Migrations newer than the code (a rollback of the code) are fine.
 */
export async function requireMigrated(db: Database): Promise<void> {
  let done: Set<string>;
  try {
    done = new Set((await db.select<{ name: string }>('SELECT name FROM migrations')).map((row) => row.name));
  } catch (error) {
    if (
      !/ER_NO_SUCH_TABLE|no such table/i.test(`${(error as { code?: string }).code ?? ''} ${(error as Error).message}`)
    )
      throw error;
    done = new Set();
  }
  const pending = migrationNames().filter((name) => !done.has(name));
  if (pending.length > 0) throw new MigrationsPending(pending);
}

/**
 * Creates the database if needed and runs the pending migrations (`npm run migrate`, and every
 * start with MIGRATE_ON_START=on); returns the names of those it ran.
 */
export async function migrateDatabase(databaseUrl: string, log: SqlStatementLog): Promise<string[]> {
  await ensureDatabase(databaseUrl);
  return migrateMysql(databaseUrl, log);
}

/** Runs the pending migrations, without a statement time limit (an ALTER of a big table may rightly take minutes). */
async function migrateMysql(databaseUrl: string, log: SqlStatementLog): Promise<string[]> {
  // Two connections: one holds the migration lock while the migrations run on the other.
  const dataSource = migrationDataSource(databaseUrl, log, 2);
  await dataSource.initialize();
  const runner = dataSource.createQueryRunner();
  try {
    const lockName = `migrations:${databaseNameOf(databaseUrl)}`;
    const [{ locked }] = (await runner.query('SELECT GET_LOCK(?, ?) AS locked', [
      lockName,
      MIGRATION_LOCK_SECONDS,
    ])) as Array<{ locked: unknown }>;
    if (Number(locked) !== 1)
      throw new Error(`another process held the migration lock for ${MIGRATION_LOCK_SECONDS} s`);
    try {
      return (await dataSource.runMigrations()).map((migration) => migration.name);
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
 * as MySQL (unless `migrate` is false: then it must have been migrated already), then opened
 * with better-sqlite3 directly.
 */
export async function openSqlite(file: string, log: SqlStatementLog, migrate = true): Promise<SqliteFile> {
  if (migrate) await migrateSqlite(file, log);
  const db = new SqliteFile(file, log);
  if (!migrate) {
    try {
      await requireMigrated(db);
    } catch (error) {
      await db.close();
      throw error;
    }
  }
  return db;
}

/** Creates the SQLite file if needed and runs its pending migrations; returns the names of those it ran. */
export async function migrateSqlite(file: string, log: SqlStatementLog): Promise<string[]> {
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
    return (await dataSource.runMigrations()).map((migration) => migration.name);
  } finally {
    await dataSource.destroy();
  }
}

export type { LogSink };
