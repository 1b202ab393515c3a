/**
 * The MySQL pools (src/db/mysql.ts): single statements and transactions take their connections
 * from two pools, so a burst of transactions that hold their connections (a publish's waits on
 * Redis, a commit's flush) never makes a page's read wait for a connection, and a transaction
 * never waits for a statement's. Each pool keeps its own limit.
 */
import { SqlStatementLog } from '../../../src/db/database';
import { openMysql } from '../../../src/db/migrate';
import { MysqlPool } from '../../../src/db/mysql';
import { dropDatabase, MYSQL_URL, testDatabase } from '../../support/harness';

const QUIET = { info: () => undefined, warn: () => undefined, error: (message: string) => console.error(message) };
const DATABASE = testDatabase('mysql_pools');

/** A transaction that holds its connection until `release()`; `started` says its work began. */
function heldTransaction(db: MysqlPool): { started: () => boolean; release: () => void; done: Promise<number> } {
  let started = false;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const done = db.transaction(async (sql) => {
    started = true;
    await gate;
    const [row] = await sql.select<{ connection: string }>('SELECT CONNECTION_ID() AS connection');
    return Number(row.connection);
  });
  return { started: () => started, release, done };
}

/** Lets the pools and the server answer whatever is under way. */
const settle = (ms = 200) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the MySQL pools of statements and of transactions', () => {
  let db: MysqlPool;

  beforeAll(async () => {
    await dropDatabase(DATABASE);
    // Migrated once by openMysql; then one connection in each pool.
    await (
      await openMysql(`${MYSQL_URL}/${DATABASE}`, new SqlStatementLog(QUIET), { poolSize: 1, statementTimeoutMs: 0 })
    ).close();
    db = new MysqlPool(`${MYSQL_URL}/${DATABASE}`, { poolSize: 1, statementTimeoutMs: 0 }, new SqlStatementLog(QUIET));
  });

  afterAll(async () => {
    await db.close();
    await dropDatabase(DATABASE);
  });

  test('a statement is answered while every transaction connection is held', async () => {
    const held = heldTransaction(db);
    await settle();
    expect(held.started()).toBe(true);
    // With one pool of one connection, this would wait for the transaction to end.
    const answered = await Promise.race([
      db.select<{ one: number }>('SELECT 1 AS one').then((rows) => rows[0].one),
      settle(2_000).then(() => 'still waiting'),
    ]);
    expect(answered).toBe(1);
    held.release();
    await held.done;
  });

  test('a transaction waits for the transaction pool, not for statements, and gets a connection of its own', async () => {
    const first = heldTransaction(db);
    const second = heldTransaction(db);
    await settle();
    // The transaction pool has one connection: the second waits for the first.
    expect([first.started(), second.started()]).toEqual([true, false]);
    const [{ connection: statements }] = await db.select<{ connection: string }>(
      'SELECT CONNECTION_ID() AS connection',
    );
    first.release();
    second.release();
    const [a, b] = await Promise.all([first.done, second.done]);
    expect(second.started()).toBe(true);
    // One transaction connection, reused; the statements' connection is another one.
    expect(a).toBe(b);
    expect(Number(statements)).not.toBe(a);
  });

  test('close() ends both pools', async () => {
    const closing = new MysqlPool(
      `${MYSQL_URL}/${DATABASE}`,
      { poolSize: 1, statementTimeoutMs: 0 },
      new SqlStatementLog(QUIET),
    );
    await closing.select('SELECT 1');
    await closing.transaction((sql) => sql.select('SELECT 1'));
    await closing.close();
    await expect(closing.select('SELECT 1')).rejects.toThrow(/closed/i);
    await expect(closing.transaction((sql) => sql.select('SELECT 1'))).rejects.toThrow(/closed/i);
  });
});
