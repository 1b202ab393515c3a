/**
 * Reads that stand in for blogs not yet in an inbox never go to a lagging replica: a MariaDB
 * replica of the test's own that applies every transaction a few seconds late (MASTER_DELAY),
 * within REPLICA_MAX_LAG_MS, so that it keeps serving the reads that may lag. A blog whose fan-out
 * is still in flight (no fan-out worker runs here) is on the primary only: every page started
 * after its publish has it. A publish that could not commit within PUBLISH_DEADLINE_MS of its
 * created_at runs again with a new one. Only in `npm run test:replica`.
 */
import { createConnection } from 'mysql2/promise';
import { replicasOf } from '../../../src/db/replicas';
import { PUBLISH_DEADLINE_MS } from '../../../src/feed/feed.service';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { MariaDbPair, startMariaDbPair } from '../../support/mariadb-pair';
import {
  errorCode,
  feedTruth,
  follow,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';

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

/**
 * Readers age a blog by its created_at, the replica's lag counts from its commit: a publish held
 * up past PUBLISH_DEADLINE_MS between its INSERT and its COMMIT (here by a table lock, on a
 * clock the test moves) rolls back and runs again with a new created_at.
 */
describe('a publish held up past its deadline', () => {
  let slow: TestApp;
  let clockMs = Date.now();
  /** How far the clock moves at every reading (0: only when the test moves it). */
  let stepPerReading = 0;
  const now = () => new Date((clockMs += stepPerReading));
  const database = `feed_test_${process.env.TEST_NAMESPACE ?? ''}replica_deadline`;
  const publishMutation = 'mutation($i: PublishBlogInput!) { publishBlog(input: $i) { id createdAt } }';

  beforeAll(async () => {
    slow = await startTestApp('replica_deadline', {
      mysqlUrl: pair.primaryUrl,
      env: {
        DATABASE_REPLICA_URLS: `${pair.replicaUrl}/${database}`,
        REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
        FEED_MODEL: 'push',
        FANOUT_WORKERS: '0',
      },
      now,
    });
  }, 60_000);
  afterAll(() => slow?.close());

  async function blogsOf(user: TestUser): Promise<Array<{ id: string; created_at: Date }>> {
    return slow.query('SELECT id, created_at FROM tb_blog WHERE user_id = ? ORDER BY id', [fromGlobalId(user.id).id]);
  }

  it('runs again with a new created_at, and is published once', async () => {
    const author = await signUp(slow, 'held-up');
    const locker = await createConnection({ uri: `${pair.primaryUrl}/${database}` });
    try {
      await locker.query('LOCK TABLES tb_fanout_task WRITE');
      const publishing = slow.gql(publishMutation, { i: { title: 'held up', content: 'c' } }, author.token);
      // The blog row is inserted; its outbox row waits for the lock.
      for (let i = 0; ; i += 1) {
        const [{ waiting }] = await slow.query<{ waiting: string }>(
          "SELECT COUNT(*) AS waiting FROM information_schema.PROCESSLIST WHERE INFO LIKE 'INSERT INTO tb_fanout_task%'",
        );
        if (Number(waiting) > 0) break;
        if (i > 200) throw new Error('the publish never reached its outbox insert');
        await sleep(25);
      }
      const firstCreatedAt = clockMs;
      clockMs += PUBLISH_DEADLINE_MS + 1000;
      await locker.query('UNLOCK TABLES');
      const response = await publishing;
      expect(response.errors).toBeUndefined();
      const rows = await blogsOf(author);
      expect(rows.map((row) => Number(row.id))).toEqual([fromGlobalId(response.data.publishBlog.id).id]);
      expect(rows[0].created_at.getTime()).toBe(clockMs);
      expect(rows[0].created_at.getTime()).toBeGreaterThan(firstCreatedAt + PUBLISH_DEADLINE_MS);
      expect(new Date(response.data.publishBlog.createdAt).getTime()).toBe(clockMs);
      const [{ tasks }] = await slow.query<{ tasks: string }>(
        'SELECT COUNT(*) AS tasks FROM tb_fanout_task WHERE blog_id = ?',
        [rows[0].id],
      );
      expect(Number(tasks)).toBe(1);
    } finally {
      await locker.end();
    }
  });

  it('answers SERVICE_UNAVAILABLE, publishing nothing, when every attempt is too slow; the next publish goes through', async () => {
    const author = await signUp(slow, 'always-late');
    stepPerReading = PUBLISH_DEADLINE_MS + 500;
    let response;
    try {
      response = await slow.gql(publishMutation, { i: { title: 'late', content: 'c' } }, author.token);
    } finally {
      stepPerReading = 0;
    }
    expect(errorCode(response)).toBe('SERVICE_UNAVAILABLE');
    expect(response.errors![0].message).toMatch(/3 attempts each took over 2000 ms before their commit/);
    expect(await blogsOf(author)).toEqual([]);
    await publish(slow, author, 'on time');
    expect(await blogsOf(author)).toHaveLength(1);
  });
});
