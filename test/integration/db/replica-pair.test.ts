/**
 * The primary/replica pair of test/support/mariadb-pair.ts does what the replica tests rely on:
 * rows written on the primary reach the replica, synced() waits for exactly that, selects() tells
 * which server served a read, and the replica can be made to lag, hang and die.
 */
import { Connection, createConnection, RowDataPacket } from 'mysql2/promise';
import { MariaDbPair, startMariaDbPair } from '../../support/mariadb-pair';

const DATABASE = 'feed_test_replica_pair';

let pair: MariaDbPair;
let primary: Connection;
let replica: Connection;

async function titles(connection: Connection): Promise<string[]> {
  const [rows] = await connection.query<RowDataPacket[]>(`SELECT title FROM ${DATABASE}.item ORDER BY id`);
  return rows.map((row) => row.title as string);
}

async function insert(id: number, title: string): Promise<void> {
  await primary.query(`INSERT INTO ${DATABASE}.item (id, title) VALUES (?, ?)`, [id, title]);
}

beforeAll(async () => {
  pair = await startMariaDbPair();
  primary = await createConnection({ uri: pair.primaryUrl });
  replica = await createConnection({ uri: pair.replicaUrl });
});

afterAll(async () => {
  primary?.destroy();
  replica?.destroy();
  await pair?.stop();
});

test('a row committed on the primary is on the replica once synced(), and selects() counts the read where it ran', async () => {
  await primary.query(`CREATE DATABASE ${DATABASE}`);
  await primary.query(`CREATE TABLE ${DATABASE}.item (id INT PRIMARY KEY, title VARCHAR(100) NOT NULL)`);
  await insert(1, 'first');
  await pair.synced();

  // Nothing of the pair's own counts: not its setup, not synced(), not the probe itself.
  expect(await pair.selects()).toEqual({ primary: 0, replica: 0 });
  expect(await pair.selects()).toEqual({ primary: 0, replica: 0 });

  expect(await titles(replica)).toEqual(['first']);
  expect(await pair.selects()).toEqual({ primary: 0, replica: 1 });

  expect(await titles(primary)).toEqual(['first']);
  expect(await pair.selects()).toEqual({ primary: 1, replica: 1 });
});

test("synced() resolves only once the replica has applied the primary's writes, not when it has received them", async () => {
  // The replication applier waits for this session's table lock.
  const blocker = await createConnection({ uri: pair.replicaUrl });
  await blocker.query(`LOCK TABLES ${DATABASE}.item READ`);
  await insert(2, 'second');
  let unlocked = false;
  const syncing = pair.synced().then(() => unlocked);
  await new Promise((resolve) => setTimeout(resolve, 300));
  unlocked = true;
  await blocker.query('UNLOCK TABLES');
  blocker.destroy();

  expect(await syncing).toBe(true);
  expect(await titles(replica)).toEqual(['first', 'second']);
});

test('with replication stopped the replica lags, and synced() times out saying so', async () => {
  await pair.stopReplication();
  await insert(3, 'third');

  expect(await titles(primary)).toEqual(['first', 'second', 'third']);
  expect(await titles(replica)).toEqual(['first', 'second']);

  const started = Date.now();
  await expect(pair.synced(200)).rejects.toThrow(
    /^the replica did not catch up with the primary within 200 ms: the primary is at GTID 0-1-5, the replica at 0-1-4; replication threads: IO No, SQL No$/,
  );
  const waited = Date.now() - started;
  expect(waited).toBeGreaterThanOrEqual(200);
  expect(waited).toBeLessThan(3_000);

  await pair.startReplication();
  await pair.synced();
  expect(await titles(replica)).toEqual(['first', 'second', 'third']);
});

test('a paused replica does not answer, and catches up once resumed', async () => {
  pair.pauseReplica();
  try {
    await insert(4, 'fourth');
    await expect(createConnection({ uri: pair.replicaUrl, connectTimeout: 300 })).rejects.toMatchObject({
      code: 'ETIMEDOUT',
    });
    await expect(pair.synced(200)).rejects.toThrow(
      /^the replica did not catch up with the primary within 200 ms: the replica did not answer MASTER_GTID_WAIT/,
    );
  } finally {
    pair.resumeReplica();
  }
  await pair.synced();
  // The connection opened before the pause still works.
  expect(await titles(replica)).toEqual(['first', 'second', 'third', 'fourth']);
});

test('a killed replica refuses connections; restarted, it replicates what it missed', async () => {
  await pair.killReplica();
  replica.destroy();
  await insert(5, 'fifth');
  await expect(createConnection({ uri: pair.replicaUrl })).rejects.toMatchObject({ code: 'ECONNREFUSED' });

  await pair.restartReplica();
  await pair.synced();
  replica = await createConnection({ uri: pair.replicaUrl });
  expect(await titles(replica)).toEqual(['first', 'second', 'third', 'fourth', 'fifth']);
});
