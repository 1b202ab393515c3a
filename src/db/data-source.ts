/**
 * The DataSources (MySQL, or the embedded SQLite file), database creation and migrations.
 */
import mysql2, { PoolOptions } from 'mysql2';
import { createConnection } from 'mysql2/promise';
import { DataSource, Logger as TypeOrmLogger } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from './entities';

/**
 * Where the database layer reports: the service passes its pino logger (app.ts), so these lines
 * are JSON like every other log line and obey LOG_LEVEL; tools and tests may pass `console`.
 */
export interface LogSink {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * Counts SQL statements and reports failing ones. The count lets tests prove that a feed page
 * costs a constant number of statements, whatever its size.
 */
export class SqlStatementLog implements TypeOrmLogger {
  statements = 0;

  /** @param printStatements print every statement (debugging, and the TypeORM CLI) */
  constructor(
    readonly sink: LogSink,
    private readonly printStatements = false,
  ) {}

  logQuery(query: string): void {
    this.statements += 1;
    if (this.printStatements) this.sink.info(`[sql] ${query}`);
  }
  logQueryError(error: string | Error, query: string): void {
    // Expected failures (duplicate keys, dead connections) are handled by the caller; printing
    // them here too would only double the noise. Print only when asked to.
    if (this.printStatements) this.sink.error(`[sql] failed: ${query}: ${String(error)}`);
  }
  logQuerySlow(time: number, query: string): void {
    this.sink.warn(`[sql] slow (${time} ms): ${query.slice(0, 200)}`);
  }
  logSchemaBuild(message: string): void {
    if (this.printStatements) this.sink.info(`[schema] ${message}`);
  }
  logMigration(message: string): void {
    this.sink.info(`[migration] ${message}`);
  }
  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.sink.warn(`[typeorm] ${String(message)}`);
    else if (this.printStatements) this.sink.info(`[typeorm] ${String(message)}`);
  }
}

/** The limits of a MySQL pool (DATABASE_POOL_SIZE, DATABASE_STATEMENT_TIMEOUT_MS). */
export interface PoolLimits {
  poolSize: number;
  /** 0 = statements may run as long as they like (migrations, the TypeORM CLI). */
  statementTimeoutMs: number;
}

/** No statement limit: for migrations, whose ALTERs on a big table may rightly take minutes. */
export const UNLIMITED_POOL: PoolLimits = { poolSize: 10, statementTimeoutMs: 0 };

export function createDataSource(databaseUrl: string, logger: SqlStatementLog, limits: PoolLimits = UNLIMITED_POOL): DataSource {
  const dataSource = new DataSource({
    type: 'mysql',
    url: databaseUrl,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTransactionMode: 'each',
    // utf8mb4 end to end, and UTC so DATETIME(3) <-> epoch ms is exact whatever the host zone.
    charset: 'utf8mb4_unicode_ci',
    timezone: 'Z',
    supportBigNumbers: true,
    bigNumberStrings: true,
    maxQueryExecutionTime: 1000,
    poolSize: limits.poolSize,
    ...(limits.statementTimeoutMs > 0 ? { driver: mysqlWithStatementLimit(limits.statementTimeoutMs, logger.sink) } : {}),
    logger,
  });
  return dataSource;
}

/** What limitStatements needs of mysql2's connections (callback API). */
interface MysqlConnection {
  _handshakePacket?: { serverVersion?: string } | null;
  query(sql: string, params: unknown[], callback: (error: Error | null) => void): void;
}

/**
 * mysql2, with a session limit on statement time for every connection its pools open, set before
 * the connection's first statement (mysql2 runs a connection's commands in order): MariaDB's
 * max_statement_time (seconds; it also interrupts a statement waiting for a row lock) or MySQL's
 * max_execution_time (ms, SELECTs only). A statement over the limit fails with
 * ER_STATEMENT_TIMEOUT / ER_QUERY_TIMEOUT, answered SERVICE_UNAVAILABLE (db/sql.ts): a slow
 * database costs a request a bounded wait, and the connection returns to the pool.
 */
function mysqlWithStatementLimit(timeoutMs: number, sink: LogSink): typeof mysql2 {
  return {
    ...mysql2,
    createPool(options: PoolOptions) {
      const pool = mysql2.createPool(options);
      pool.on('connection', (connection) => {
        const raw = connection as unknown as MysqlConnection;
        const mariaDb = /mariadb/i.test(raw._handshakePacket?.serverVersion ?? '');
        const [statement, value] = mariaDb ? ['SET SESSION max_statement_time = ?', timeoutMs / 1000] : ['SET SESSION max_execution_time = ?', timeoutMs];
        raw.query(statement, [value], (error) => {
          if (error) sink.warn(`[sql] cannot limit statement time (DATABASE_STATEMENT_TIMEOUT_MS): ${error.message}`);
        });
      });
      return pool;
    },
  } as typeof mysql2;
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
export async function openDatabase(databaseUrl: string, logger: SqlStatementLog, limits: PoolLimits = UNLIMITED_POOL): Promise<DataSource> {
  await ensureDatabase(databaseUrl);
  await migrate(databaseUrl, logger);
  const dataSource = createDataSource(databaseUrl, logger, limits);
  await dataSource.initialize();
  return dataSource;
}

/** Runs the pending migrations on a connection of their own, without the statement limit. */
async function migrate(databaseUrl: string, logger: SqlStatementLog): Promise<void> {
  // Two connections: one holds the migration lock while the migrations run on the other.
  const dataSource = createDataSource(databaseUrl, logger, { poolSize: 2, statementTimeoutMs: 0 });
  await dataSource.initialize();
  try {
    await runMigrationsLocked(dataSource, databaseUrl);
  } finally {
    await dataSource.destroy();
  }
}

async function runMigrationsLocked(dataSource: DataSource, databaseUrl: string): Promise<void> {
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
  }
}

/**
 * The embedded store: a SQLite file (better-sqlite3), created with its folder when missing and
 * migrated by the same migrations as MySQL. WAL lets readers (`npm run seed` in a second
 * process, a sqlite3 shell) work while the service writes; a writer waits up to `timeout` ms for
 * another process's write to end.
 */
export function createEmbeddedDataSource(file: string, logger: SqlStatementLog): DataSource {
  return new DataSource({
    type: 'better-sqlite3',
    database: file,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTransactionMode: 'each',
    enableWAL: true,
    timeout: 10_000,
    maxQueryExecutionTime: 1000,
    logger,
  });
}

/** Opens (creating when needed) and migrates the embedded store. */
export async function openEmbeddedDatabase(file: string, logger: SqlStatementLog): Promise<DataSource> {
  const dataSource = createEmbeddedDataSource(file, logger);
  await dataSource.initialize();
  await dataSource.runMigrations();
  return dataSource;
}
