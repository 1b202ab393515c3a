/**
 * The MySQL-to-SQLite rewriting of src/db/sqlite.ts: property tests against a model, and one
 * check against a real in-memory SQLite that rewritten statements mean what MySQL's do.
 */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { dateFromSqliteText, rowFromSqlite, sqliteDateText, toSqlite } from '../../../src/db/sqlite';

// Dates from year 1000 to 9999, the range DATETIME holds, to the millisecond.
const date = fc.date({
  min: new Date('1000-01-01T00:00:00.000Z'),
  max: new Date('9999-12-31T23:59:59.999Z'),
  noInvalidDate: true,
});

it('stores a Date as text that reads back as the same instant', () => {
  fc.assert(
    fc.property(date, (at) => {
      expect(dateFromSqliteText(sqliteDateText(at)).getTime()).toBe(at.getTime());
    }),
    { numRuns: 500 },
  );
});

it('stores Dates as text that sorts in time order (so ORDER BY and <= work on it)', () => {
  fc.assert(
    fc.property(date, date, (a, b) => {
      const [ta, tb] = [sqliteDateText(a), sqliteDateText(b)];
      expect(Math.sign(ta < tb ? -1 : ta > tb ? 1 : 0)).toBe(Math.sign(a.getTime() - b.getTime()));
    }),
    { numRuns: 500 },
  );
});

/** One parameter: a scalar, a list (for IN), or rows (for VALUES). */
const scalar = fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.boolean(), fc.constant(null), date);
const param = fc.oneof(
  scalar,
  fc.array(scalar, { maxLength: 5 }),
  fc.array(fc.array(scalar, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
);

/** The model: what each parameter binds, flattened in order. */
function bindsOf(value: unknown): unknown[] {
  const one = (v: unknown) => (v instanceof Date ? sqliteDateText(v) : typeof v === 'boolean' ? Number(v) : v);
  if (!Array.isArray(value)) return [one(value)];
  return value.flat().map(one);
}

it('gives every ? as many placeholders as its parameter binds values, in order', () => {
  fc.assert(
    fc.property(fc.array(param, { maxLength: 6 }), (params) => {
      const statement = params.map((_, i) => `c${i} IN (?)`).join(' AND ');
      const rewritten = toSqlite(statement, params);
      expect(rewritten.params).toEqual(params.flatMap(bindsOf));
      expect(rewritten.statement.split('?').length - 1).toBe(rewritten.params.length);
    }),
    { numRuns: 500 },
  );
});

it('names the statement when placeholders and parameters do not match', () => {
  expect(() => toSqlite('SELECT ? + ?', [1])).toThrow('more placeholders than its 1 parameters: SELECT ? + ?');
  expect(() => toSqlite('SELECT ?', [1, 2])).toThrow('1 placeholders for 2 parameters');
});

it('turns *_at text columns back into Dates and leaves the others alone', () => {
  const row = rowFromSqlite<Record<string, unknown>>({
    id: 7,
    created_at: '2026-11-30 12:00:00.125',
    deleted_at: null,
    title: '2026-11-30 12:00:00.125',
  });
  expect(row).toEqual({
    id: 7,
    created_at: new Date('2026-11-30T12:00:00.125Z'),
    deleted_at: null,
    title: '2026-11-30 12:00:00.125',
  });
});

describe('on a real SQLite', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (a INTEGER NOT NULL, b INTEGER NOT NULL, at DATETIME NOT NULL, PRIMARY KEY (a, b))');
  const run = (statement: string, params: unknown[]) => {
    const rewritten = toSqlite(statement, params);
    return db.prepare(rewritten.statement).run(...rewritten.params);
  };
  const all = (statement: string, params: unknown[]) => {
    const rewritten = toSqlite(statement, params);
    return db.prepare(rewritten.statement).all(...rewritten.params);
  };

  it('runs VALUES ?, INSERT IGNORE, IN (?) with a list and with an empty list, and date comparisons', () => {
    const t0 = new Date('2026-01-01T00:00:00.000Z');
    const rows = [1, 2, 3].map((a) => [a, 10, new Date(t0.getTime() + a)]);
    expect(run('INSERT INTO t (a, b, at) VALUES ?', [rows]).changes).toBe(3);
    expect(run('INSERT IGNORE INTO t (a, b, at) VALUES (?, ?, ?)', [2, 10, t0]).changes).toBe(0);
    expect(all('SELECT a FROM t WHERE a IN (?) ORDER BY a', [[1, 3, 9]])).toEqual([{ a: 1 }, { a: 3 }]);
    expect(all('SELECT a FROM t WHERE a IN (?)', [[]])).toEqual([]);
    expect(
      all('SELECT a FROM t WHERE at <= ? ORDER BY at DESC LIMIT ?, ?', [new Date(t0.getTime() + 2), 0, 10]),
    ).toEqual([{ a: 2 }, { a: 1 }]);
  });
});
