/**
 * The embedded store: the services' SQL, written for MySQL, run on SQLite (better-sqlite3).
 *
 * The services write one dialect, MySQL's, with `?` placeholders, and never know which database
 * answers. When it is SQLite, sql.ts passes every statement through `toSqlite` and every result
 * row through `rowFromSqlite`. The differences that matter, and what is done about each:
 *
 * - `IN (?)` with an array: mysql2 expands the array into a list; better-sqlite3 binds one value
 *   per `?`. Here the `?` becomes `?, ?, ?` and the array is spread (an empty array becomes NULL,
 *   which matches nothing, as mysql2 does). A `VALUES ?` with an array of rows becomes
 *   `(?, ?), (?, ?)` the same way.
 * - `INSERT IGNORE` is spelled `INSERT OR IGNORE`.
 * - Dates: SQLite has no date type, and better-sqlite3 binds no Date objects. A Date is stored
 *   as UTC text `YYYY-MM-DD HH:MM:SS.mmm` (TypeORM's own choice for SQLite), which sorts and
 *   compares in time order, so `created_at <= ?` and ORDER BY created_at work unchanged. Read
 *   back, a column named `*_at` (every time column follows that rule) becomes a Date again.
 * - Booleans bind as 1 and 0, the values MySQL's BOOLEAN (TINYINT) holds and returns too.
 * - `LIMIT ?, ?`, `CASE WHEN`, `UNION ALL` and TRUE are the same in both.
 *
 * SQLite is one file with one writer, and TypeORM's better-sqlite3 driver shares one connection
 * between all callers, where a transaction is a state of that connection. Two requests writing
 * at once would therefore land in one transaction (or nest as savepoints). `writeLock` gives
 * every write and every transaction the connection to itself, one at a time; statements inside
 * a transaction run under its hold. Reads do not wait: a read that runs while a transaction is
 * open can see its uncommitted rows, which only matters if it then rolls back (a like of a blog
 * deleted that very moment), and then only for that one read.
 */
import { Mutex } from 'async-mutex';
import { DataSource } from 'typeorm';

/** Whether this DataSource is the embedded SQLite store. */
export function isSqliteDataSource(dataSource: DataSource): boolean {
  return dataSource.options.type === 'better-sqlite3';
}

const writeLocks = new WeakMap<DataSource, Mutex>();

/** The one-writer-at-a-time lock of an embedded store (see above). */
export function writeLock(dataSource: DataSource): Mutex {
  let lock = writeLocks.get(dataSource);
  if (!lock) {
    lock = new Mutex();
    writeLocks.set(dataSource, lock);
  }
  return lock;
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
