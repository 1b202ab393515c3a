/**
 * Read replicas on a real MariaDB primary and GTID replica (test/support/mariadb-pair.ts): which
 * server serves a read is counted on the servers themselves (pair.selects()), and faults are
 * real (replication stopped, the replica frozen or killed). Only in `npm run test:replica`.
 */
import { createConnection } from 'mysql2/promise';
import { redactUrl } from '../../../src/db/replicas';
import { MariaDbPair, startMariaDbPair } from '../../support/mariadb-pair';
import { FEED_PAGE, follow, ok, publish, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';

/** Small, so that waiting out a writer's window (REPLICA_MAX_LAG_MS + one check interval) costs little. */
const MAX_LAG_MS = 300;
const WRITER_WINDOW_MS = MAX_LAG_MS + 250;

let pair: MariaDbPair;
let app: TestApp;
let author: TestUser;
let reader: TestUser;
let blogIds: string[];

type ReplicaReport = { replica: string; state: string; lagMs: number | null };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** /readyz lists the replicas only to a bearer of METRICS_TOKEN (which /metrics then needs too). */
const METRICS_TOKEN = 'replica-routing-token-0123456789';
const asOperator = { headers: { authorization: `Bearer ${METRICS_TOKEN}` } };

async function replicaStates(): Promise<ReplicaReport[]> {
  const response = await fetch(app.url.replace(/\/graphql$/, '/readyz'), asOperator);
  const body = (await response.json()) as { replicas: ReplicaReport[] };
  return body.replicas;
}

/** Polls /readyz until the replica is in `state` (the health check runs every 250 ms). */
async function replicaBecomes(state: 'ok' | 'lagging' | 'down'): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if ((await replicaStates())[0].state === state) return;
    await sleep(50);
  }
  throw new Error(`the replica never became ${state}: ${JSON.stringify(await replicaStates())}`);
}

/** The replica has every write, and the health check has seen it. */
async function caughtUp(): Promise<void> {
  await pair.synced();
  await replicaBecomes('ok');
}

/** The SELECTs each server ran for `work`. */
async function selectsOf(work: () => Promise<unknown>): Promise<{ primary: number; replica: number }> {
  const before = await pair.selects();
  await work();
  const after = await pair.selects();
  return { primary: after.primary - before.primary, replica: after.replica - before.replica };
}

const BLOG = 'query($id: ID!) { blog(id: $id) { id title likeCount isLiked author { nickName } } }';
const AUTHOR_BLOGS = 'query($id: ID!) { user(id: $id) { nickName blogs(first: 10) { edges { node { id title } } } } }';

beforeAll(async () => {
  pair = await startMariaDbPair();
  app = await startTestApp('replica_routing', {
    mysqlUrl: pair.primaryUrl,
    env: {
      // The pull model: every feed page is a MySQL read. No in-process fan-out workers: their
      // outbox relay would read the primary in the background and blur its counts.
      FEED_MODEL: 'pull',
      FANOUT_WORKERS: '0',
      DATABASE_REPLICA_URLS: `${pair.replicaUrl}/feed_test_${process.env.TEST_NAMESPACE ?? ''}replica_routing`,
      REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
      METRICS_TOKEN,
    },
  });
  author = await signUp(app, 'author');
  reader = await signUp(app, 'reader');
  await follow(app, reader, author);
  blogIds = [];
  for (const title of ['one', 'two', 'three']) blogIds.push(await publish(app, author, title));
  // An hour old: past the freshness window (REPLICA_MAX_LAG_MS + 10 s), within which a feed page
  // reads the primary because a replica may not have the newest blogs yet.
  const primary = await createConnection(
    `${pair.primaryUrl}/feed_test_${process.env.TEST_NAMESPACE ?? ''}replica_routing`,
  );
  await primary.query('UPDATE tb_blog SET created_at = created_at - INTERVAL 1 HOUR');
  await primary.end();
  await caughtUp();
  // The sign-ups, the follow and the publishes made both users recent writers.
  await sleep(WRITER_WINDOW_MS);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await pair?.stop();
});

/** The reader's feed cursor at the blog titled `title` (read on the primary: the top of the feed). */
async function cursorOf(title: string): Promise<string> {
  const data = ok(await app.gql(FEED_PAGE, { first: 10 }, reader.token));
  return data.followFeed.edges.find((edge: { node: { title: string } }) => edge.node.title === title).cursor;
}

test('the top of a feed is read on the primary; below it, a page of a reader who did not write recently and an anonymous profile are read on the replica', async () => {
  const top = await selectsOf(async () => {
    const data = ok(await app.gql(FEED_PAGE, { first: 1 }, reader.token));
    expect(data.followFeed.edges.map((edge: { node: { title: string } }) => edge.node.title)).toEqual(['three']);
  });
  expect(top.primary).toBeGreaterThan(0);

  const after = await cursorOf('three');
  let titles: string[] = [];
  const page = await selectsOf(async () => {
    const data = ok(await app.gql(FEED_PAGE, { first: 10, after }, reader.token));
    titles = data.followFeed.edges.map((edge: { node: { title: string } }) => edge.node.title);
  });
  expect(titles).toEqual(['two', 'one']);
  expect(page.primary).toBe(0);
  expect(page.replica).toBeGreaterThan(0);

  const profile = await selectsOf(async () => {
    const data = ok(await app.gql(AUTHOR_BLOGS, { id: author.id }));
    expect(data.user.blogs.edges).toHaveLength(3);
  });
  expect(profile.primary).toBe(0);
  expect(profile.replica).toBeGreaterThan(0);
  process.stdout.write(
    `replica-routing: a feed page: replica ${page.replica} selects, primary ${page.primary}; an anonymous profile: replica ${profile.replica}, primary ${profile.primary}\n`,
  );
});

test('right after publish, like and follow, the writer reads the primary and sees the write; an anonymous reader is served by the replica', async () => {
  const fresh = await publish(app, author, 'four');
  const own = await selectsOf(async () => {
    const data = ok(await app.gql(AUTHOR_BLOGS, { id: author.id }, author.token));
    expect(data.user.blogs.edges[0].node.id).toBe(fresh);
  });
  expect(own).toMatchObject({ replica: 0 });
  expect(own.primary).toBeGreaterThan(0);

  ok(await app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { id } }', { b: blogIds[0] }, reader.token));
  const liked = await selectsOf(async () => {
    const data = ok(await app.gql(BLOG, { id: blogIds[0] }, reader.token));
    expect(data.blog).toMatchObject({ likeCount: 1, isLiked: true });
  });
  expect(liked.replica).toBe(0);

  const third = await signUp(app, 'third');
  await follow(app, third, author);
  const feed = await selectsOf(async () => {
    const data = ok(await app.gql(FEED_PAGE, { first: 10 }, third.token));
    expect(data.followFeed.edges.map((edge: { node: { title: string } }) => edge.node.title)).toEqual([
      'four',
      'three',
      'two',
      'one',
    ]);
  });
  expect(feed.replica).toBe(0);

  await caughtUp();
  const anonymous = await selectsOf(async () => {
    const data = ok(await app.gql(BLOG, { id: blogIds[0] }));
    expect(data.blog).toMatchObject({ likeCount: 1, isLiked: false });
  });
  expect(anonymous).toMatchObject({ primary: 0 });
  expect(anonymous.replica).toBeGreaterThan(0);
});

test('a writer sees their writes while replication is stopped, and a lagging replica is bypassed for everyone', async () => {
  await pair.stopReplication();
  try {
    await replicaBecomes('lagging');
    const fresh = await publish(app, author, 'five');
    const own = ok(await app.gql(AUTHOR_BLOGS, { id: author.id }, author.token));
    expect(own.user.blogs.edges[0].node.id).toBe(fresh);
    const anonymous = await selectsOf(async () => {
      const data = ok(await app.gql(AUTHOR_BLOGS, { id: author.id }));
      expect(data.user.blogs.edges[0].node.id).toBe(fresh);
    });
    expect(anonymous).toMatchObject({ replica: 0 });
    expect(anonymous.primary).toBeGreaterThan(0);
    const metrics = await (await fetch(app.url.replace(/\/graphql$/, '/metrics'), asOperator)).text();
    expect(metrics).toMatch(/mysql_replica_healthy\{replica="mysql:\/\/root@127\.0\.0\.1:\d+\/feed_test_\w+"\} 0/);
    expect(metrics).toMatch(/mysql_replica_lag_seconds\{replica="[^"]+"\} [\d.]+/);
    expect(metrics).toMatch(/mysql_reads_total\{target="replica"\} [1-9]/);
    expect(metrics).toMatch(/mysql_reads_total\{target="primary"\} [1-9]/);
  } finally {
    await pair.startReplication();
  }
  await caughtUp();
});

test('a frozen replica is bypassed with no error to the client', async () => {
  pair.pauseReplica();
  try {
    await replicaBecomes('down');
    const data = ok(await app.gql(FEED_PAGE, { first: 10 }, reader.token));
    expect(data.followFeed.edges.length).toBeGreaterThan(0);
  } finally {
    pair.resumeReplica();
  }
  await caughtUp();
});

test('a killed replica fails the reads in flight over to the primary, is bypassed, and serves again once restarted', async () => {
  const below = { first: 10, after: await cursorOf('three') };
  await pair.killReplica();
  // Before the health check has noticed: the read fails on the replica and runs on the primary.
  const first = await app.gql(FEED_PAGE, below, reader.token);
  expect(first.errors).toBeUndefined();
  expect(first.data.followFeed.edges.map((edge: { node: { title: string } }) => edge.node.title)).toEqual([
    'two',
    'one',
  ]);
  await replicaBecomes('down');
  const [status] = await replicaStates();
  expect(status.lagMs).toBeNull();
  ok(await app.gql(AUTHOR_BLOGS, { id: author.id }));

  await pair.restartReplica();
  await caughtUp();
  const again = await selectsOf(async () => ok(await app.gql(FEED_PAGE, below, reader.token)));
  expect(again).toMatchObject({ primary: 0 });
  expect(again.replica).toBeGreaterThan(0);
});

test('replica URLs are shown without their passwords', () => {
  expect(redactUrl('mysql://reader:s3cret@replica-1:3306/feed')).toBe('mysql://reader:***@replica-1:3306/feed');
});
