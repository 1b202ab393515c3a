/**
 * A replica's reads and its health check, on the Database adapter itself (db/replicas.ts) over a
 * real MariaDB primary and GTID replica of this file's own (test/support/mariadb-pair.ts): which
 * server ran a statement is counted on the servers (pair.selects()). Only in `npm run test:replica`.
 */
import { createConnection } from 'mysql2/promise';
import { SqlStatementLog } from '../../../src/db/database';
import { MysqlPool } from '../../../src/db/mysql';
import { ReplicatedDatabase } from '../../../src/db/replicas';
import { readServerVariables, replicaStatusStatement, SERVER_VARIABLES_STATEMENT } from '../../../src/db/replication';
import { MariaDbPair, startMariaDbPair } from '../../support/mariadb-pair';

const DATABASE = `feed_test_${process.env.TEST_NAMESPACE ?? ''}replica_reads`;
const LIMITS = { poolSize: 4, statementTimeoutMs: 0 };

let pair: MariaDbPair;
let db: ReplicatedDatabase;

const quiet = { info: () => {}, warn: () => {}, error: () => {} };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function replicaBecomes(state: 'ok' | 'lagging' | 'down'): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (db.replicaStatuses()[0].state === state) return;
    await sleep(50);
  }
  throw new Error(`the replica never became ${state}: ${JSON.stringify(db.replicaStatuses())}`);
}

/** The SELECTs each server ran for `work`. */
async function selectsOf<T>(
  work: () => Promise<T>,
): Promise<{ primary: number; replica: number; result: PromiseSettledResult<T> }> {
  const before = await pair.selects();
  const [result] = await Promise.allSettled([work()]);
  const after = await pair.selects();
  return { primary: after.primary - before.primary, replica: after.replica - before.replica, result };
}

beforeAll(async () => {
  pair = await startMariaDbPair();
  const setup = await createConnection({ uri: pair.primaryUrl });
  await setup.query(`CREATE DATABASE ${DATABASE}`);
  await setup.query(`CREATE TABLE ${DATABASE}.item (id INT PRIMARY KEY, title VARCHAR(100) NOT NULL)`);
  await setup.query(`INSERT INTO ${DATABASE}.item VALUES (1, 'one'), (2, 'two')`);
  setup.destroy();
  await pair.synced();
  const log = new SqlStatementLog(quiet);
  db = new ReplicatedDatabase({
    primary: new MysqlPool(`${pair.primaryUrl}/${DATABASE}`, LIMITS, log),
    replicaUrls: [`${pair.replicaUrl}/${DATABASE}`],
    limits: LIMITS,
    log,
    settings: { maxLagMs: 1000 },
  });
  await db.start();
  await replicaBecomes('ok');
}, 60_000);

afterAll(async () => {
  await db?.close();
  await pair?.stop();
});

test('this MariaDB is told SHOW REPLICA STATUS, and its answer and GTID positions read as the health check reads them', async () => {
  const replica = await createConnection({ uri: pair.replicaUrl });
  try {
    const [variableRows] = await replica.query(SERVER_VARIABLES_STATEMENT);
    const variables = readServerVariables(variableRows as Array<{ Variable_name: string; Value: string }>);
    expect(variables.family).toBe('mariadb');
    expect(replicaStatusStatement(variables.version)).toBe('SHOW REPLICA STATUS');
    expect(variables.applied).toMatch(/^0-1-\d+$/);
    const [statusRows] = await replica.query(replicaStatusStatement(variables.version));
    expect(statusRows).toHaveLength(1);
  } finally {
    replica.destroy();
  }
  expect(db.replicaStatuses()[0]).toMatchObject({ state: 'ok', lagMs: 0 });
});

test('a read on the replica that times out fails, and is not run a second time on the primary', async () => {
  // SLEEP(3) outlasts the replica's read timeout (2 s): the replica still runs it when the client gives up.
  const slow = await selectsOf(() => db.lagging().select<{ slept: number }>('SELECT SLEEP(3) AS slept'));
  expect(slow.result.status).toBe('rejected');
  expect((slow.result as PromiseRejectedResult).reason).toMatchObject({ code: 'PROTOCOL_SEQUENCE_TIMEOUT' });
  expect(slow.primary).toBe(0);
  expect(db.reads.primary).toBe(0);
  // Given up on: the replica is skipped until its next health check finds it well (it is).
  await replicaBecomes('ok');
});

test('a read the replica refuses for its own sake (a statement error) is answered by the primary', async () => {
  const primary = await createConnection({ uri: pair.primaryUrl });
  try {
    // A table that only the primary has (created outside the binary log): the replica answers ER_NO_SUCH_TABLE.
    await primary.query('SET SESSION sql_log_bin = 0');
    await primary.query(`CREATE TABLE ${DATABASE}.primary_only (id INT PRIMARY KEY)`);
    await primary.query(`INSERT INTO ${DATABASE}.primary_only VALUES (7)`);
  } finally {
    primary.destroy();
  }
  const read = await selectsOf(() => db.lagging().select<{ id: number }>('SELECT id FROM primary_only'));
  expect(read.result).toEqual({ status: 'fulfilled', value: [{ id: 7 }] });
  expect(read.primary).toBe(1);
  expect(db.replicaStatuses()[0].state).toBe('ok');
});

test('a read whose connection to the replica cannot be made runs on the primary', async () => {
  await pair.killReplica();
  try {
    // Usually before the health check has noticed: the pool opens a new connection, refused, and
    // the rows come from the primary (the only server left to answer).
    await expect(db.lagging().select<{ title: string }>('SELECT title FROM item ORDER BY id')).resolves.toEqual([
      { title: 'one' },
      { title: 'two' },
    ]);
    expect(db.replicaStatuses()[0]).toMatchObject({ state: 'down', lagMs: null });
  } finally {
    await pair.restartReplica();
  }
  await pair.synced();
  await replicaBecomes('ok');
});

test("the health check needs only SELECT and MariaDB's REPLICA MONITOR on the replica (docs/operations.md, Database users)", async () => {
  const primary = await createConnection({ uri: pair.primaryUrl });
  try {
    // Made on the primary: replication brings both users to the replica.
    await primary.query("CREATE USER 'feed_reader'@'127.0.0.1', 'feed_blind'@'127.0.0.1'");
    await primary.query(`GRANT SELECT ON ${DATABASE}.* TO 'feed_reader'@'127.0.0.1', 'feed_blind'@'127.0.0.1'`);
    await primary.query("GRANT REPLICA MONITOR ON *.* TO 'feed_reader'@'127.0.0.1'");
  } finally {
    primary.destroy();
  }
  await pair.synced();
  const log = new SqlStatementLog(quiet);
  const as = (user: string) => {
    const url = new URL(`${pair.replicaUrl}/${DATABASE}`);
    url.username = user;
    return new ReplicatedDatabase({
      primary: new MysqlPool(`${pair.primaryUrl}/${DATABASE}`, LIMITS, log),
      replicaUrls: [url.toString()],
      limits: LIMITS,
      log,
      settings: { maxLagMs: 1000 },
    });
  };
  const [reader, blind] = [as('feed_reader'), as('feed_blind')];
  try {
    await Promise.all([reader.start(), blind.start()]);
    expect(reader.replicaStatuses()[0]).toMatchObject({ state: 'ok', lagMs: 0 });
    expect(blind.replicaStatuses()[0]).toMatchObject({ state: 'down' });
    expect(blind.replicaStatuses()[0].reason).toMatch(/denied.*(SLAVE|REPLICA) MONITOR/i);
    await expect(reader.lagging().select('SELECT title FROM item ORDER BY id')).resolves.toEqual([
      { title: 'one' },
      { title: 'two' },
    ]);
  } finally {
    await Promise.all([reader.close(), blind.close()]);
  }
});
