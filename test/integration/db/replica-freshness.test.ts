/**
 * Reads that stand in for blogs not yet in an inbox never go to a lagging replica: a MariaDB
 * replica of the test's own that applies every transaction a few seconds late (MASTER_DELAY),
 * within REPLICA_MAX_LAG_MS, so that it keeps serving the reads that may lag. A blog whose fan-out
 * is still in flight (no fan-out worker runs here) is on the primary only: every page started
 * after its publish has it. Only in `npm run test:replica`.
 */
import { replicasOf } from '../../../src/db/replicas';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { MariaDbPair, startMariaDbPair } from '../../support/mariadb-pair';
import { feedTruth, follow, publish, scrollFeed, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';

/** The replica's steady lag, and the bound it stays within (so it keeps serving). */
const DELAY_SECONDS = 3;
const MAX_LAG_MS = 6_000;
/** After a write, a user's reads go to the primary this long (read-your-writes): the reader's follow is waited out. */
const WRITER_WINDOW_MS = MAX_LAG_MS + 250;

let pair: MariaDbPair;
let app: TestApp;
let author: TestUser;
let reader: TestUser;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  pair = await startMariaDbPair();
  app = await startTestApp('replica_freshness', {
    mysqlUrl: pair.primaryUrl,
    env: {
      DATABASE_REPLICA_URLS: `${pair.replicaUrl}/feed_test_${process.env.TEST_NAMESPACE ?? ''}replica_freshness`,
      REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
      FEED_MODEL: 'push',
      FANOUT_WORKERS: '0',
    },
  });
  author = await signUp(app, 'author');
  reader = await signUp(app, 'reader');
  for (let i = 0; i < 3; i += 1) await publish(app, author, `older ${i}`);
  await follow(app, reader, author); // the backfill fills the inbox
  await pair.synced();
  await pair.delayReplication(DELAY_SECONDS);
  await sleep(WRITER_WINDOW_MS);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await pair?.stop();
});

it('shows a blog whose fan-out is in flight on every page after its publish, while the replica that serves other reads lags', async () => {
  const inFlight = await publish(app, author, 'in flight');
  // The reader wrote nothing: their lag-tolerant reads go to the replica, which lacks the blog.
  const [{ id: onReplica }] = (await app.db
    .lagging()
    .select<{ id: string }>('SELECT COUNT(*) AS id FROM tb_blog WHERE id = ?', [fromGlobalId(inFlight).id])) as never[];
  expect(Number(onReplica)).toBe(0);
  expect(replicasOf(app.db)!.replicaStatuses()[0].state).toBe('ok');
  for (let round = 0; round < 3; round += 1) {
    const feed = await scrollFeed(app, reader, 2);
    expect(feed[0]).toBe(inFlight);
    expect(feed).toEqual(await feedTruth(app, fromGlobalId(reader.id).id));
  }
});
