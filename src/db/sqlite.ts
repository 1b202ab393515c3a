/**
 * The embedded Database: the stores' SQL, written for MySQL, run on a SQLite file
 * (better-sqlite3, used directly).
 *
 * The stores write one dialect, MySQL's, with `?` placeholders, and never know which database
 * answers. Here every statement passes through `toSqlite` and every result row through
 * `rowFromSqlite`. The differences that matter, and what is done about each:
 *
 * - `IN (?)` with an array: mysql2 expands the array into a list; better-sqlite3 binds one value
 *   per `?`. Here the `?` becomes `?, ?, ?` and the array is spread (an empty array becomes NULL,
 *   which matches nothing, as mysql2 does). A `VALUES ?` with an array of rows becomes
 *   `(?, ?), (?, ?)` the same way.
 * - `INSERT IGNORE` is spelled `INSERT OR IGNORE`.
 * - Dates: SQLite has no date type, and better-sqlite3 binds no Date objects. A Date is stored
 *   as UTC text `YYYY-MM-DD HH:MM:SS.mmm` (TypeORM's own choice for SQLite, whose migrations
 *   create the tables), which sorts and compares in time order, so `created_at <= ?` and ORDER
 *   BY created_at work unchanged. Read back, a column named `*_at` (every time column follows
 *   that rule) becomes a Date again.
 * - Booleans bind as 1 and 0, the values MySQL's BOOLEAN (TINYINT) holds and returns too.
 * - `LIMIT ?, ?`, `CASE WHEN`, `UNION ALL` and TRUE are the same in both.
 *
 * SQLite is one file with one writer, and this process holds one connection to it, where a
 * transaction is a state of that connection. Two requests writing at once would therefore land
 * in one transaction. A lock gives every write and every transaction the connection to itself,
 * one at a time; statements inside a transaction run under its hold. Reads do not wait: a read
 * that runs while a transaction is open can see its uncommitted rows, which only matters if it
 * then rolls back (a like of a blog deleted that very moment), and then only for that one read.
 */
import BetterSqlite3 from 'better-sqlite3';
import { Mutex } from 'async-mutex';
import { Database, insertInBatches, Params, Sql, SqlStatementLog, WriteResult } from './database';

/** How long a write waits for another process's write to the same file (the seed script, a sqlite3 shell). */
const BUSY_TIMEOUT_MS = 10_000;

/** Prepared statements kept per connection: the stores' statements, times the IN-list lengths in use. */
const STATEMENT_CACHE_SIZE = 500;

export class SqliteFile implements Database {
  readonly dialect = 'sqlite' as const;
  private readonly db: BetterSqlite3.Database;
  private readonly writeLock = new Mutex();
  private readonly prepared = new Map<string, BetterSqlite3.Statement>();

  constructor(
    file: string,
    private readonly log: SqlStatementLog,
  ) {
    this.db = new BetterSqlite3(file, { timeout: BUSY_TIMEOUT_MS });
    // WAL lets readers in other processes work while this one writes.
    this.db.pragma('journal_mode = WAL');
  }

  select<Row>(statement: string, params: Params = []): Promise<Row[]> {
    return Promise.resolve(this.run(statement, params) as Row[]);
  }

  write(statement: string, params: Params = []): Promise<WriteResult> {
    return this.writeLock.runExclusive(() => this.run(statement, params) as WriteResult);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw results for scripts and tests, whose callers know the shape
  query<T = any>(statement: string, params: Params = []): Promise<T> {
    return this.writeLock.runExclusive(() => this.run(statement, params) as T);
  }

  insertRows(statement: string, rows: readonly unknown[][]): Promise<void> {
    return insertInBatches(this, statement, rows);
  }

  unionTerm(select: string, columns: string, alias: string): string {
    return `SELECT ${columns} FROM (${select}) AS ${alias}`;
  }

  now(): Promise<number> {
    return Promise.resolve(Date.now());
  }

  /** One transaction at a time on the one connection; SQLite has no deadlocks to retry. */
  transaction<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    const sql: Sql = {
      select: <Row>(statement: string, params: Params = []) => Promise.resolve(this.run(statement, params) as Row[]),
      write: (statement: string, params: Params = []) => Promise.resolve(this.run(statement, params) as WriteResult),
    };
    return this.writeLock.runExclusive(async () => {
      this.run('BEGIN IMMEDIATE', []);
      try {
        const result = await work(sql);
        this.run('COMMIT', []);
        return result;
      } catch (error) {
        this.run('ROLLBACK', []);
        throw error;
      }
    });
  }

  /** One file: every read is its own. */
  lagging(): Sql {
    return this;
  }

  close(): Promise<void> {
    this.db.close();
    return Promise.resolve();
  }

  /** Runs one statement: the rows of a read, the WriteResult of anything else. */
  private run(statement: string, params: Params): unknown {
    const started = performance.now();
    const rewritten = toSqlite(statement, params);
    const prepared = this.prepare(rewritten.statement);
    try {
      if (prepared.reader)
        return (prepared.all(...rewritten.params) as Array<Record<string, unknown>>).map((row) => rowFromSqlite(row));
      const info = prepared.run(...rewritten.params);
      return { affectedRows: info.changes, insertId: Number(info.lastInsertRowid) } satisfies WriteResult;
    } finally {
      this.log.ran(statement, performance.now() - started);
    }
  }

  private prepare(statement: string): BetterSqlite3.Statement {
    let prepared = this.prepared.get(statement);
    if (prepared) return prepared;
    prepared = this.db.prepare(statement);
    if (this.prepared.size >= STATEMENT_CACHE_SIZE) this.prepared.delete(this.prepared.keys().next().value!);
    this.prepared.set(statement, prepared);
    return prepared;
  }
}

/** A Date as SQLite stores it: UTC, millisecond precision, sortable as text. */
export function sqliteDateText(date: Date): string {
  return date.toISOString().replace('T', ' ').replace('Z', '');
}

/** The text of sqliteDateText (or a plain `YYYY-MM-DD HH:MM:SS`) as a Date. */
export function dateFromSqliteText(text: string): Date {
  return new Date(`${text.replace(' ', 'T')}Z`);
}

function bindable(value: unknown): unknown {
  if (value instanceof Date) return sqliteDateText(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value === undefined) return null;
  return value;
}

/** The placeholder text for one parameter, and the values it binds. */
function expand(value: unknown): { text: string; values: unknown[] } {
  if (!Array.isArray(value)) return { text: '?', values: [bindable(value)] };
  if (value.length === 0) return { text: 'NULL', values: [] };
  if (Array.isArray(value[0])) {
    // VALUES ? with rows: (?, ?), (?, ?)
    const rows = value as unknown[][];
    return {
      text: rows.map((row) => `(${row.map(() => '?').join(', ')})`).join(', '),
      values: rows.flatMap((row) => row.map(bindable)),
    };
  }
  return { text: value.map(() => '?').join(', '), values: value.map(bindable) };
}

/**
 * A MySQL-flavoured statement and its parameters, rewritten for SQLite. The statements are the
 * services' own: their `?` are all placeholders (no `?` inside string literals), so the n-th
 * `?` is the n-th parameter.
 */
export function toSqlite(statement: string, params: readonly unknown[]): { statement: string; params: unknown[] } {
  const bound: unknown[] = [];
  let next = 0;
  const rewritten = statement.replace(/\bINSERT IGNORE\b/gi, 'INSERT OR IGNORE').replace(/\?/g, () => {
    if (next >= params.length) {
      throw new Error(`the statement has more placeholders than its ${params.length} parameters: ${statement}`);
    }
    const { text, values } = expand(params[next]);
    next += 1;
    bound.push(...values);
    return text;
  });
  if (next !== params.length) {
    throw new Error(`the statement has ${next} placeholders for ${params.length} parameters: ${statement}`);
  }
  return { statement: rewritten, params: bound };
}

/** A result row from SQLite with its time columns (`*_at`) as Dates, as mysql2 returns them. */
export function rowFromSqlite<Row>(row: Record<string, unknown>): Row {
  for (const [column, value] of Object.entries(row)) {
    if (column.endsWith('_at') && typeof value === 'string') row[column] = dateFromSqliteText(value);
  }
  return row as Row;
}
