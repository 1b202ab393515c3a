/**
 * The storage seam: every SQL statement of the service goes through a `Database`, chosen once at
 * start (stores.ts) — MySQL (mysql.ts) or the embedded SQLite file (sqlite.ts).
 *
 * Why an adapter of our own rather than TypeORM at run time: a feed page runs five statements
 * or so, and TypeORM's query runner adds a promise wrapper, a captured stack and a logger call to
 * each (about 115 µs a statement measured under load, more than mysql2's own socket work). The
 * adapter is a thin layer over the driver: one promise per statement, no stack capture
 * (mysql2 `trace: false`), the statement counter the tests use, and the dialect differences.
 * TypeORM stays for what it is good at: the migrations and its CLI (migrate.ts).
 *
 * Rules every store follows:
 * - Statements are MySQL's dialect with `?` placeholders; nothing is ever concatenated into SQL
 *   text. On SQLite the adapter rewrites them (sqlite.ts); a store never asks which database
 *   answers.
 * - SQL that only MySQL can run (UPDATE ... JOIN, MySQL's functions) lives in stores that take a
 *   `MysqlDatabase`, so the compiler refuses to build them on the embedded store.
 * - A transaction is `db.transaction(work)`: the adapter retries a deadlock victim, and every
 *   statement of `work` goes through the `Sql` it is given.
 */

/** What an INSERT, UPDATE or DELETE reports, on either database. */
export interface WriteResult {
  affectedRows: number;
  insertId: number;
}

export type Params = readonly unknown[];

/** What runs statements: a Database, or the `Sql` of an open transaction. */
export interface Sql {
  select<Row>(statement: string, params?: Params): Promise<Row[]>;
  write(statement: string, params?: Params): Promise<WriteResult>;
}

/** The isolation levels the stores ask for (InnoDB's default is REPEATABLE READ). */
export type Isolation = 'READ COMMITTED' | 'REPEATABLE READ';

export interface Database extends Sql {
  readonly dialect: 'mysql' | 'sqlite';
  /**
   * Runs `work` in a transaction and commits it; rolls back when it throws. A transaction that
   * InnoDB chose as a deadlock victim is run again (it was rolled back whole, so that is safe).
   */
  transaction<T>(work: (sql: Sql) => Promise<T>, isolation?: Isolation): Promise<T>;
  /** The database's clock in epoch ms: the one clock that rebuilds and fan-out chunks compare. */
  now(): Promise<number>;
  /** Any statement, raw: rows for a SELECT, a WriteResult otherwise (scripts, tests, benchmarks). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw results for scripts and tests, whose callers know the shape
  query<T = any>(statement: string, params?: Params): Promise<T>;
  /** `INSERT ... VALUES ?` for many rows, in statements of ROWS_PER_INSERT rows. */
  insertRows(statement: string, rows: readonly unknown[][]): Promise<void>;
  /**
   * `select` (which has an ORDER BY and a LIMIT of its own) as a term of a UNION ALL that
   * returns `columns`: MySQL takes it in parentheses; SQLite only inside a subquery (`alias`),
   * which MariaDB would copy into a temporary table per term (about three times the cost).
   */
  unionTerm(select: string, columns: string, alias: string): string;
  /**
   * Where the reads that may lag run (feed pages, profiles, the graph, the loaders' batches): a
   * healthy replica when there are replicas and the request is not the reader's own recent
   * writer's (db/replicas.ts); else this database itself.
   */
  lagging(): Sql;
  close(): Promise<void>;
}

/** A Database that is MySQL (or MariaDB): stores with MySQL-only SQL take this type. */
export interface MysqlDatabase extends Database {
  readonly dialect: 'mysql';
}

/**
 * Rows per multi-row INSERT of insertRows: few statements, and well under SQLite's 32,766 bound
 * values and MySQL's max_allowed_packet for rows of a few columns.
 */
export const ROWS_PER_INSERT = 2000;

export async function insertInBatches(sql: Sql, statement: string, rows: readonly unknown[][]): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    await sql.write(statement, [rows.slice(start, start + ROWS_PER_INSERT)]);
  }
}

/** Where the database layer reports (the service's pino logger; tools and tests may pass `console`). */
export interface LogSink {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** A statement slower than this is logged. */
const SLOW_STATEMENT_MS = 1000;

/**
 * Counts SQL statements and reports slow ones. The count lets tests prove that a feed page costs
 * a constant number of statements, whatever its size.
 */
export class SqlStatementLog {
  statements = 0;

  /** @param printStatements print every statement (debugging, and the TypeORM CLI) */
  constructor(
    readonly sink: LogSink,
    readonly printStatements = false,
  ) {}

  /** One statement ran for `ms`. */
  ran(statement: string, ms: number): void {
    this.statements += 1;
    if (this.printStatements) this.sink.info(`[sql] ${statement}`);
    if (ms > SLOW_STATEMENT_MS) this.sink.warn(`[sql] slow (${Math.round(ms)} ms): ${statement.slice(0, 200)}`);
  }
}

function driverErrorCode(error: unknown): string | undefined {
  return (error as { code?: string })?.code;
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

/**
 * The database is too slow right now: it stopped a statement at its time limit (above), or the
 * client gave up waiting for an answer (mysql2's PROTOCOL_SEQUENCE_TIMEOUT: a replica's read
 * past its deadline, see replicas.ts).
 */
export function isDatabaseTooSlow(error: unknown): boolean {
  return (
    STATEMENT_TIMEOUT_ERRNOS.has(Number((error as { errno?: number })?.errno)) ||
    driverErrorCode(error) === 'PROTOCOL_SEQUENCE_TIMEOUT'
  );
}

const DUPLICATE_KEY_CODES = new Set(['ER_DUP_ENTRY', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

export function isDuplicateKey(error: unknown): boolean {
  return DUPLICATE_KEY_CODES.has(driverErrorCode(error) ?? '');
}

/** InnoDB rolled the transaction back (a deadlock victim, a lock wait timeout): running it again may succeed. */
export function isTransient(error: unknown): boolean {
  const code = driverErrorCode(error);
  return code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT';
}
