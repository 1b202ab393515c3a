/**
 * The MySQL pools (src/db/mysql.ts): single statements and transactions take their connections
 * from two pools, so a burst of transactions that hold their connections (a publish's waits on
 * Redis, a commit's flush) never makes a page's read wait for a connection, and a transaction
 * never waits for a statement's. Each pool keeps its own limit. Transactions start with their
 * first statement (the transaction pool's connections run with autocommit off), so they must
 * still be all or nothing and leave nothing open behind them. Transactions that ask for a level
 * (READ COMMITTED: follow changes; REPEATABLE READ: rebuild snapshots) have a pool per level whose
 * connections' sessions run at it: no SET TRANSACTION per transaction, no level leaking into the
 * other transactions, and no snapshot waiting for the writes' connections.
 */
import { Isolation, SqlStatementLog } from '../../../src/db/database';
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

/** A pool of one connection each, whose statements are printed into `printed`. */
function countingPool(): { pool: MysqlPool; printed: string[] } {
  const printed: string[] = [];
  const log = new SqlStatementLog({ ...QUIET, info: (line: string) => printed.push(line) }, true);
  return { pool: new MysqlPool(`${MYSQL_URL}/${DATABASE}`, { poolSize: 1, statementTimeoutMs: 0 }, log), printed };
}

/**
 * Reads row 1 of `table` twice in one transaction, around a commit of another connection that
 * counts its v up: 1 when the second read saw that commit (READ COMMITTED), 0 when not.
 */
function rereadAround(db: MysqlPool, table: string, isolation?: Isolation): Promise<number> {
  return db.transaction(async (sql) => {
    const [before] = await sql.select<{ v: number }>(`SELECT v FROM ${table} WHERE id = 1`);
    await db.write(`UPDATE ${table} SET v = v + 1 WHERE id = 1`);
    const [after] = await sql.select<{ v: number }>(`SELECT v FROM ${table} WHERE id = 1`);
    return after.v - before.v;
  }, isolation);
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

  test('a transaction sends no START TRANSACTION, and is still all or nothing', async () => {
    const { pool: counting, printed } = countingPool();
    try {
      await counting.write('CREATE TABLE IF NOT EXISTS t_atomic (id INT PRIMARY KEY) ENGINE=InnoDB');
      await counting.write('DELETE FROM t_atomic');
      // The first transaction of a connection switches it (one statement, once).
      await counting.transaction((sql) => sql.write('INSERT INTO t_atomic (id) VALUES (1)'));
      printed.length = 0;
      await counting.transaction(async (sql) => {
        await sql.write('INSERT INTO t_atomic (id) VALUES (2)');
        await sql.write('INSERT INTO t_atomic (id) VALUES (3)');
      });
      expect(printed).toEqual([
        '[sql] INSERT INTO t_atomic (id) VALUES (2)',
        '[sql] INSERT INTO t_atomic (id) VALUES (3)',
        '[sql] COMMIT',
      ]);
      // A failure after a write takes the write back.
      await expect(
        counting.transaction(async (sql) => {
          await sql.write('INSERT INTO t_atomic (id) VALUES (4)');
          await sql.write('INSERT INTO t_atomic (id) VALUES (1)');
        }),
      ).rejects.toThrow(/Duplicate entry '1'/);
      const rows = await counting.select<{ id: number }>('SELECT id FROM t_atomic ORDER BY id');
      expect(rows.map((row) => row.id)).toEqual([1, 2, 3]);
    } finally {
      await counting.close();
    }
  });

  test('a READ COMMITTED transaction sends no SET TRANSACTION, and its level leaks into no other transaction', async () => {
    const { pool: counting, printed } = countingPool();
    try {
      await counting.write('CREATE TABLE IF NOT EXISTS t_levels (id INT PRIMARY KEY, v INT) ENGINE=InnoDB');
      await counting.write('DELETE FROM t_levels');
      await counting.write('INSERT INTO t_levels (id, v) VALUES (1, 0)');
      const reread = (isolation?: Isolation) => rereadAround(counting, 't_levels', isolation);
      // Its first transaction sets the connection's session up (autocommit, the level), once.
      expect(await reread('READ COMMITTED')).toBe(1);
      printed.length = 0;
      expect(await reread('READ COMMITTED')).toBe(1);
      expect(printed.filter((line) => /^\[sql\] (SET|START) /.test(line))).toEqual([]);
      // The default transactions, before and after, keep the server's level (REPEATABLE READ here)
      // on connections of their own.
      expect(await reread()).toBe(0);
      expect(await reread('READ COMMITTED')).toBe(1);
      expect(await reread()).toBe(0);
      expect(await reread('REPEATABLE READ')).toBe(0);
      const [{ connection: committed }] = await counting.transaction(
        (sql) => sql.select<{ connection: string }>('SELECT CONNECTION_ID() AS connection'),
        'READ COMMITTED',
      );
      const [{ connection: plain }] = await counting.transaction((sql) =>
        sql.select<{ connection: string }>('SELECT CONNECTION_ID() AS connection'),
      );
      expect(committed).not.toBe(plain);
    } finally {
      await counting.close();
    }
  });

  test('a REPEATABLE READ transaction (a rebuild snapshot) waits for no other transaction, and sets its level once', async () => {
    const { pool: counting, printed } = countingPool();
    try {
      // The one connection of the default transactions is held (as publishes hold theirs).
      const held = heldTransaction(counting);
      await settle();
      expect(held.started()).toBe(true);
      const snapshot = () =>
        counting.transaction(
          (sql) =>
            sql.select<{ level: string; connection: number }>(
              'SELECT @@session.tx_isolation AS level, CONNECTION_ID() AS connection',
            ),
          'REPEATABLE READ',
        );
      const answered = await Promise.race([snapshot(), settle(2_000).then(() => 'still waiting')]);
      expect(answered).toEqual([{ level: 'REPEATABLE-READ', connection: expect.any(Number) }]);
      printed.length = 0;
      const [again] = await snapshot();
      expect(again.level).toBe('REPEATABLE-READ');
      expect(printed.filter((line) => /^\[sql\] (SET|START) /.test(line))).toEqual([]);
      held.release();
      expect(await held.done).not.toBe(again.connection);
    } finally {
      await counting.close();
    }
  });

  test('a transaction leaves no lock and no snapshot behind on its connection', async () => {
    await db.write('CREATE TABLE IF NOT EXISTS t_locks (id INT PRIMARY KEY, v INT) ENGINE=InnoDB');
    await db.write('DELETE FROM t_locks');
    await db.write('INSERT INTO t_locks (id, v) VALUES (1, 0)');
    // Locks the row, then commits: the row must be free for a statement at once after.
    await db.transaction((sql) => sql.select('SELECT v FROM t_locks WHERE id = 1 FOR UPDATE'));
    await db.write('SET SESSION innodb_lock_wait_timeout = 1');
    try {
      await expect(db.write('UPDATE t_locks SET v = 1 WHERE id = 1')).resolves.toMatchObject({ affectedRows: 1 });
    } finally {
      await db.write('SET SESSION innodb_lock_wait_timeout = DEFAULT');
    }
    // The next transaction on the same connection reads what was committed after the last one
    // (a snapshot left open by the previous transaction would still show v = 0).
    await db.write('UPDATE t_locks SET v = 2 WHERE id = 1');
    const [row] = await db.transaction((sql) => sql.select<{ v: number }>('SELECT v FROM t_locks WHERE id = 1'));
    expect(row.v).toBe(2);
    // Within one transaction, a commit made meanwhile by another connection is seen under READ
    // COMMITTED and not under the default REPEATABLE READ: the snapshot is the transaction's own,
    // and a level set for one transaction (without START TRANSACTION) holds for that one only.
    expect(await rereadAround(db, 't_locks')).toBe(0);
    expect(await rereadAround(db, 't_locks', 'READ COMMITTED')).toBe(1);
    expect(await rereadAround(db, 't_locks')).toBe(0);
  });

  test('a deadlock victim runs again, and both transactions commit', async () => {
    const two = new MysqlPool(
      `${MYSQL_URL}/${DATABASE}`,
      { poolSize: 2, statementTimeoutMs: 0 },
      new SqlStatementLog(QUIET),
    );
    try {
      await two.write('CREATE TABLE t_crossing (id INT PRIMARY KEY, v INT NOT NULL)');
      await two.write('INSERT INTO t_crossing VALUES (1, 0), (2, 0)');
      // Each locks its first row, waits until the other has too, then asks for the other's: InnoDB
      // rolls one back. Only first attempts wait, so the victim's next attempt goes through.
      const attempts = [0, 0];
      let locked = 0;
      let meet!: () => void;
      const met = new Promise<void>((resolve) => (meet = resolve));
      const crossing = (index: 0 | 1) =>
        two.transaction(async (sql) => {
          attempts[index] += 1;
          const [first, second] = index === 0 ? [1, 2] : [2, 1];
          await sql.write('UPDATE t_crossing SET v = v + 1 WHERE id = ?', [first]);
          if (attempts[index] === 1) {
            locked += 1;
            if (locked === 2) meet();
            await met;
          }
          await sql.write('UPDATE t_crossing SET v = v + 1 WHERE id = ?', [second]);
        });
      await Promise.all([crossing(0), crossing(1)]);
      expect([...attempts].sort()).toEqual([1, 2]);
      expect(await two.select<{ v: number }>('SELECT v FROM t_crossing ORDER BY id')).toEqual([{ v: 2 }, { v: 2 }]);
    } finally {
      await two.close();
    }
  });

  test('close() ends every pool', async () => {
    const closing = new MysqlPool(
      `${MYSQL_URL}/${DATABASE}`,
      { poolSize: 1, statementTimeoutMs: 0 },
      new SqlStatementLog(QUIET),
    );
    await closing.select('SELECT 1');
    await closing.transaction((sql) => sql.select('SELECT 1'));
    await closing.transaction((sql) => sql.select('SELECT 1'), 'READ COMMITTED');
    await closing.close();
    await expect(closing.select('SELECT 1')).rejects.toThrow(/closed/i);
    await expect(closing.transaction((sql) => sql.select('SELECT 1'))).rejects.toThrow(/closed/i);
    await expect(closing.transaction((sql) => sql.select('SELECT 1'), 'READ COMMITTED')).rejects.toThrow(/closed/i);
  });
});
