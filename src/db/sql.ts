/**
 * Small helpers over raw, parameterised SQL. Every statement in the services binds its values
 * with `?` placeholders; nothing is ever concatenated into SQL text.
 */
import { DataSource, EntityManager } from 'typeorm';

/** What mysql2 answers for INSERT, UPDATE and DELETE. */
export interface WriteResult {
  affectedRows: number;
  insertId: number | string;
}

/** A runner of raw statements: the DataSource itself or a transaction's EntityManager. */
export type Sql = Pick<EntityManager, 'query'>;

export async function write(sql: Sql, statement: string, params: unknown[]): Promise<WriteResult> {
  return (await sql.query(statement, params)) as WriteResult;
}

export async function select<Row>(sql: Sql, statement: string, params: unknown[]): Promise<Row[]> {
  return (await sql.query(statement, params)) as Row[];
}

function driverErrorCode(error: unknown): string | undefined {
  const driverError = (error as { driverError?: { code?: string } })?.driverError;
  return driverError?.code ?? (error as { code?: string })?.code;
}

/** Errors that mean "MySQL cannot be reached right now", not "this statement is wrong". */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
]);

export function isDatabaseUnavailable(error: unknown): boolean {
  const code = driverErrorCode(error);
  if (code !== undefined && UNAVAILABLE_CODES.has(code)) return true;
  return /closed state|connection lost|connect ETIMEDOUT|Pool is closed/i.test(String((error as Error)?.message ?? ''));
}

export function isDuplicateKey(error: unknown): boolean {
  return driverErrorCode(error) === 'ER_DUP_ENTRY';
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
 * run again because it was rolled back.
 */
export async function inTransaction<T>(dataSource: DataSource, work: (sql: Sql) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await dataSource.transaction((manager) => work(manager));
    } catch (error) {
      if (attempt >= TRANSACTION_ATTEMPTS || !isTransient(error)) throw error;
    }
  }
}
