/**
 * Small helpers over raw, parameterised SQL. Every statement in the services binds its values
 * with `?` placeholders; nothing is ever concatenated into SQL text.
 *
 * The statements are MySQL's dialect. On the embedded store (SQLite) these helpers rewrite them
 * and their results (see sqlite.ts), so the services run unchanged on either.
 */
import { DataSource, EntityManager } from 'typeorm';
import { isSqliteDataSource, rowFromSqlite, toSqlite, writeLock } from './sqlite';

/** What an INSERT, UPDATE or DELETE reports, in mysql2's words on either database. */
export interface WriteResult {
  affectedRows: number;
  insertId: number | string;
}

/** A runner of raw statements: the DataSource itself or a transaction's EntityManager. */
export type Sql = DataSource | EntityManager;

function dataSourceOf(sql: Sql): DataSource {
  return sql instanceof DataSource ? sql : sql.dataSource;
}

/** Inside a transaction its statements already hold the embedded store's write lock. */
function inOpenTransaction(sql: Sql): boolean {
  return !(sql instanceof DataSource) && sql.queryRunner?.isTransactionActive === true;
}

export async function write(sql: Sql, statement: string, params: unknown[]): Promise<WriteResult> {
  const dataSource = dataSourceOf(sql);
  if (!isSqliteDataSource(dataSource)) return await sql.query<WriteResult>(statement, params);
  const run = async (): Promise<WriteResult> => {
    const rewritten = toSqlite(statement, params);
    // The structured result: the plain one of TypeORM's SQLite driver drops the changed-row count.
    const runner = sql instanceof DataSource || !sql.queryRunner ? dataSource.createQueryRunner() : sql.queryRunner;
    const result = await runner.query(rewritten.statement, rewritten.params, true);
    return { affectedRows: result.affected ?? 0, insertId: Number(result.raw) };
  };
  return inOpenTransaction(sql) ? run() : writeLock(dataSource).runExclusive(run);
}

/**
 * Rows per multi-row INSERT of insertRows: few statements, and well under SQLite's 32,766 bound
 * values and MySQL's max_allowed_packet for rows of a few columns.
 */
const ROWS_PER_INSERT = 2000;

/** `INSERT ... VALUES ?` for many rows (seeding, benchmarks), in statements of ROWS_PER_INSERT rows. */
export async function insertRows(sql: Sql, statement: string, rows: readonly unknown[][]): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    await write(sql, statement, [rows.slice(start, start + ROWS_PER_INSERT)]);
  }
}

export async function select<Row>(sql: Sql, statement: string, params: unknown[]): Promise<Row[]> {
  if (!isSqliteDataSource(dataSourceOf(sql))) return await sql.query<Row[]>(statement, params);
  const rewritten = toSqlite(statement, params);
  const rows = await sql.query<Array<Record<string, unknown>>>(rewritten.statement, rewritten.params);
  return rows.map((row) => rowFromSqlite<Row>(row));
}

function driverErrorCode(error: unknown): string | undefined {
  const driverError = (error as { driverError?: { code?: string } })?.driverError;
  return driverError?.code ?? (error as { code?: string })?.code;
}

/** Errors that mean "the database cannot be used right now", not "this statement is wrong". */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  // The embedded SQLite file stayed locked by another process past the busy timeout.
  'SQLITE_BUSY',
]);

export function isDatabaseUnavailable(error: unknown): boolean {
  const code = driverErrorCode(error);
  if (code !== undefined && UNAVAILABLE_CODES.has(code)) return true;
  return /closed state|connection lost|connect ETIMEDOUT|Pool is closed/i.test(String((error as Error)?.message ?? ''));
}

/**
 * MySQL stopped a statement at DATABASE_STATEMENT_TIMEOUT_MS: MariaDB's errno 1969 (which
 * mysql2 has no name for) or MySQL's ER_QUERY_TIMEOUT (3024). The database is too slow right
 * now; the statement changed nothing (its transaction is rolled back).
 */
const STATEMENT_TIMEOUT_ERRNOS = new Set([1969, 3024]);

export function isDatabaseTooSlow(error: unknown): boolean {
  const driverError = (error as { driverError?: { errno?: number } })?.driverError ?? (error as { errno?: number });
  return STATEMENT_TIMEOUT_ERRNOS.has(Number(driverError?.errno));
}

const DUPLICATE_KEY_CODES = new Set(['ER_DUP_ENTRY', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

export function isDuplicateKey(error: unknown): boolean {
  return DUPLICATE_KEY_CODES.has(driverErrorCode(error) ?? '');
}

function isTransient(error: unknown): boolean {
  const code = driverErrorCode(error);
  return code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT';
}

/** Attempts of a transaction that InnoDB rolled back as a deadlock victim. */
const TRANSACTION_ATTEMPTS = 3;

/**
 * Runs `work` in a transaction, retrying when InnoDB chose it as a deadlock victim: under heavy
 * concurrent likes or follows that is a normal outcome, and the whole transaction is safe to
 * run again because it was rolled back. Every statement of `work` must go through its `sql`
 * (on SQLite, a write through the DataSource would wait for this very transaction).
 */
export async function inTransaction<T>(dataSource: DataSource, work: (sql: Sql) => Promise<T>): Promise<T> {
  // SQLite: one transaction at a time on its one connection; there are no deadlocks to retry.
  if (isSqliteDataSource(dataSource)) return writeLock(dataSource).runExclusive(() => dataSource.transaction((manager) => work(manager)));
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await dataSource.transaction((manager) => work(manager));
    } catch (error) {
      if (attempt >= TRANSACTION_ATTEMPTS || !isTransient(error)) throw error;
    }
  }
}
