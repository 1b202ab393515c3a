/**
 * Integration-test harness: a real app over the real MariaDB/MySQL and Redis.
 *
 * Each test file passes its own name and gets its own database (feed_test_<name>, dropped and
 * re-created) and its own Redis key prefix (test:<name>:, emptied), so files run in parallel
 * without touching each other's data. TEST_MYSQL_URL and TEST_REDIS_URL point elsewhere when the
 * servers are not on localhost.
 *
 * The embedded pass (TEST_EMBEDDED=on, `npm run test:embedded`) runs the core scenario files
 * again in the embedded mode: each app on a SQLite file of its own (feed_test_<name>.sqlite in
 * the temp folder, deleted first), no Redis, the pull model.
 */
import 'reflect-metadata';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { RunningApp, startApp } from '../../src/app';
import { RedisInbox } from '../../src/feed/inbox.redis';
import { Database, MysqlDatabase, SqlStatementLog } from '../../src/db/database';
import { isMysql } from '../../src/db/mysql';
import { Config, loadConfig } from '../../src/kernel/config';
import { RedisKeys } from '../../src/redis/keys';
import { isCluster, RedisClient } from '../../src/redis/redis.client';
import { openStores } from '../../src/stores';
import { restartAfterCrash } from './mariadb-pair';

export const MYSQL_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
export const TEST_JWT_SECRET = 'test-secret-for-integration-tests';
/** The embedded pass: apps run on SQLite without Redis. */
export const EMBEDDED = process.env.TEST_EMBEDDED === 'on';

export interface GqlResponse<T = any> {
  status: number;
  data?: T;
  errors?: Array<{ message: string; extensions?: Record<string, unknown>; path?: string[] }>;
}

export interface TestApp extends RunningApp {
  config: Config;
  /** The environment the app's config came from: hand it to a worker process to share its data. */
  env: Record<string, string>;
  db: Database;
  /** The app's database as MySQL; using it in the embedded pass fails the test. */
  mysql: MysqlDatabase;
  /** The app's Redis; using it in the embedded pass fails the test (that pass has none). */
  redis: RedisClient;
  keys: RedisKeys;
  sqlLog: SqlStatementLog;
  /** A SELECT in MySQL's dialect, on whichever database the app runs (see src/db/database.ts). */
  query<Row = any>(statement: string, params?: unknown[]): Promise<Row[]>;
  gql<T = any>(query: string, variables?: Record<string, unknown>, token?: string): Promise<GqlResponse<T>>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  now?: () => Date;
  /** A MySQL server of the test's own (no database name) instead of MYSQL_URL: a replica test's primary. */
  mysqlUrl?: string;
  /** A second API process on the stores of this app (same database, Redis and key prefix), not emptied. */
  shareWith?: TestApp;
}

export async function dropDatabase(name: string, mysqlUrl = MYSQL_URL): Promise<void> {
  const connection = await createConnection({ uri: mysqlUrl });
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await connection.end();
  }
}

export async function deleteKeys(redis: RedisClient, pattern: string): Promise<void> {
  if (isCluster(redis)) {
    for (const node of redis.nodes('master')) await deleteKeys(node, pattern);
    return;
  }
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    // One DEL per key (keys of a cluster node lie in different slots), sent together.
    await Promise.all(keys.map((key) => redis.del(key)));
    cursor = next;
  } while (cursor !== '0');
}

/**
 * TEST_NAMESPACE (optional) goes into every database name and key prefix, so that two checkouts
 * can run the suite against the same MariaDB and Redis at once.
 */
const NAMESPACE = process.env.TEST_NAMESPACE ?? '';

/** The database a test file named `name` owns. */
export const testDatabase = (name: string): string => `feed_test_${NAMESPACE}${name}`;
/** The Redis key prefix a test file named `name` owns. */
export const testKeyPrefix = (name: string): string => `test:${NAMESPACE}${name}:`;

/**
 * REDIS_COMMAND_TIMEOUT_MS of an app on the suite's shared Redis (or cluster), unless the test
 * sets its own. The service's 300 ms says "Redis is in trouble" in production; here two test
 * files share two cores with MariaDB and Redis, and a reply that arrived while the event loop
 * was busy (a full GC, a burst of work) still counts as late when the timer runs first. One
 * such false timeout opened the breaker in CI: a file's setup failed, and a test's live events
 * were skipped while the breaker was open. The tests of a Redis that hangs or dies bring a
 * redis-server of their own (REDIS_URL) and keep the production default or set theirs.
 */
const SUITE_REDIS_TIMEOUT_MS = '5000';

function onSuiteRedis(env: Record<string, string>): boolean {
  const suiteCluster = process.env.TEST_REDIS_CLUSTER_NODES;
  return env.REDIS_CLUSTER_NODES !== undefined ? env.REDIS_CLUSTER_NODES === suiteCluster : env.REDIS_URL === REDIS_URL;
}

/** The stores part of a test app's environment: its own database (and key prefix), emptied. */
async function freshStoresEnv(name: string, mysqlUrl = MYSQL_URL): Promise<Record<string, string>> {
  const database = testDatabase(name);
  if (EMBEDDED) {
    const file = join(tmpdir(), `${database}.sqlite`);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
    return { EMBEDDED_DB_FILE: file };
  }
  await dropDatabase(database, mysqlUrl);
  return { DATABASE_URL: `${mysqlUrl}/${database}`, REDIS_URL, REDIS_KEY_PREFIX: testKeyPrefix(name) };
}

/** The stores part of another test app's environment, to run a second process on its data. */
function sharedStoresEnv(app: TestApp): Record<string, string> {
  const names = ['DATABASE_URL', 'REDIS_URL', 'REDIS_KEY_PREFIX', 'EMBEDDED_DB_FILE', 'REDIS_CLUSTER_NODES'];
  return Object.fromEntries(names.filter((name) => app.env[name] !== undefined).map((name) => [name, app.env[name]]));
}

/** POSTs one operation to a GraphQL endpoint, with a bearer token when given. */
export async function postGraphQL<T = any>(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
  token?: string,
): Promise<GqlResponse<T>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, ...((await response.json()) as object) };
}

export async function startTestApp(name: string, options: TestAppOptions = {}): Promise<TestApp> {
  try {
    return await startTestAppOnce(name, options);
  } catch (error) {
    // A private MariaDB (mariadb-pair.ts) that crashed under the migrations is restarted: start again, from an empty database.
    if (!options.mysqlUrl || !(await restartedAfterCrash(options.mysqlUrl))) throw error;
    return startTestAppOnce(name, options);
  }
}

/** Whether the pair server at `url` crashed (it says so once its process has exited), once it has been restarted. */
async function restartedAfterCrash(url: string): Promise<boolean> {
  for (let waited = 0; waited < 2_000; waited += 100) {
    const restart = restartAfterCrash(url);
    if (restart) {
      await restart;
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

async function startTestAppOnce(name: string, options: TestAppOptions): Promise<TestApp> {
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    // Warnings and errors only (test/support/setup-env.ts): one line per request would drown the output.
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    HOST: '127.0.0.1',
    PORT: '0',
    ...(options.shareWith ? sharedStoresEnv(options.shareWith) : await freshStoresEnv(name, options.mysqlUrl)),
    JWT_SECRET: TEST_JWT_SECRET,
    PASSWORD_HASH_COST: '1024',
    // Tests wait for fan-out: look for stranded outbox events often.
    OUTBOX_RELAY_INTERVAL_MS: '200',
    // Tests sign up many users from one address; the rate-limit test turns them on.
    RATE_LIMITS: 'off',
    // The suite's publishes commit in milliseconds: a rebuilt fan-out watermark need not wait 1 s.
    WATERMARK_SETTLE_MS: '50',
    // A worker process started on this app's environment listens on a free port (test files run in parallel).
    WORKER_PORT: '0',
    // Each file's fresh database is migrated by its app, NODE_ENV=production included.
    MIGRATE_ON_START: 'on',
    // The cluster pass of the suite (npm run test:cluster) runs every app on a Redis Cluster,
    // except those that bring a Redis of their own (REDIS_URL: fault tests, a command count).
    // An app that shares another's stores takes its Redis too, whichever it is.
    ...(process.env.TEST_REDIS_CLUSTER_NODES && !options.env?.REDIS_URL && !options.shareWith
      ? { REDIS_CLUSTER_NODES: process.env.TEST_REDIS_CLUSTER_NODES }
      : {}),
    ...options.env,
  };
  if (env.REDIS_COMMAND_TIMEOUT_MS === undefined && onSuiteRedis(env))
    env.REDIS_COMMAND_TIMEOUT_MS = SUITE_REDIS_TIMEOUT_MS;
  const config = loadConfig(env);
  const sqlLog = new SqlStatementLog(console);
  const stores = await openStores(config, console, sqlLog);
  const { db, redis } = stores;
  const keys = new RedisKeys(config.redisKeyPrefix);
  if (redis) {
    // Start connected: a rate limit counted in memory while the client still connects would
    // split its count between memory and Redis.
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    if (!options.shareWith) await deleteKeys(redis, keys.all());
  }
  const app = await startApp({ config, db, redis, now: options.now });
  await app.services.feed.ready(); // the Redis generation confirmed, the fan-out watermark of a fresh key prefix synced

  const gql = <T>(query: string, variables?: Record<string, unknown>, token?: string) =>
    postGraphQL<T>(app.url, query, variables, token);

  return {
    ...app,
    config,
    env,
    db,
    get mysql(): MysqlDatabase {
      if (!isMysql(db)) throw new Error(`the app of "${name}" runs in the embedded mode, on SQLite`);
      return db;
    },
    get redis(): RedisClient {
      if (!redis) throw new Error(`the app of "${name}" runs in the embedded mode, without Redis`);
      return redis;
    },
    keys,
    sqlLog,
    query: (statement, params = []) => db.select(statement, params),
    gql,
    async close() {
      await app.stop();
      await stores.close();
    },
  };
}

/**
 * The SQL statements `work` runs on `app`, and its result. The hydration cache settles its debts
 * every SETTLE_EVERY_MS with statements of its own, which are not `work`'s: a count starts when
 * no settle runs (one that has not finished may leave the cache untrusted for `work`), and the
 * statements of a settle that ran meanwhile are taken off. `work` runs once: running it again
 * would count a second page, which finds the lists and caches the first one filled.
 */
export async function countStatements<T>(
  app: TestApp,
  work: () => Promise<T>,
): Promise<{ result: T; statements: number }> {
  const cache = app.services.hydration;
  while (cache?.settlingNow) await cache.settle();
  // The outbox marks of earlier publishes are not the work's: each is an UPDATE due 100 ms after
  // its publish (FanoutService.markQueuedSoon), which landed inside a counted request now and
  // then (social.test.ts, about one run in seven).
  await app.services.fanout?.flush();
  const settleBefore = cache?.settleStatements ?? 0;
  const before = app.sqlLog.statements;
  const result = await work();
  const settled = (cache?.settleStatements ?? 0) - settleBefore;
  return { result, statements: app.sqlLog.statements - before - settled };
}

/**
 * Two API processes on one MySQL and Redis in the hybrid model, where two followers make a big
 * author: `writer` with its fan-out workers, and `reader` as users run it (NODE_ENV=production)
 * with none, so that the statements counted there are its pages' alone.
 */
export async function startHybridPair(name: string): Promise<{ writer: TestApp; reader: TestApp }> {
  const writer = await startTestApp(name, { env: { FEED_MODEL: 'hybrid', BIG_V_FOLLOWERS: '2' } });
  const reader = await startTestApp(name, {
    shareWith: writer,
    env: { NODE_ENV: 'production', FEED_MODEL: 'hybrid', BIG_V_FOLLOWERS: '2', FANOUT_WORKERS: '0' },
  });
  return { writer, reader };
}

/** Waits until a hybrid pair has nothing in flight: the writer's fan-out, and both processes' feed chores. */
export async function settleHybridPair({ writer, reader }: { writer: TestApp; reader: TestApp }): Promise<void> {
  await writer.services.fanout?.idle();
  await writer.services.feed.idle();
  await reader.services.feed.idle();
}

/** The viewer's first feed page of `first` on `app`, and the SQL statements it took there. */
export async function pageWithStatements(
  app: TestApp,
  viewer: TestUser,
  first = 20,
): Promise<{ ids: string[]; sql: number }> {
  const { result: data, statements } = await countStatements(app, async () =>
    ok(await app.gql(FEED_PAGE, { first }, viewer.token)),
  );
  return { ids: data.followFeed.edges.map((edge: any) => edge.node.id), sql: statements };
}

/** The data of a response that must have succeeded; fails the test with the errors otherwise. */
export function ok<T = any>(response: GqlResponse<T>): T {
  if (response.errors?.length || response.data === undefined || response.data === null) {
    throw new Error(`expected success, got ${JSON.stringify(response)}`);
  }
  return response.data;
}

/** The single error's code of a response that must have failed. */
export function errorCode(response: GqlResponse): unknown {
  if (!response.errors?.length) throw new Error(`expected an error, got ${JSON.stringify(response)}`);
  return response.errors[0].extensions?.code;
}

export interface TestUser {
  id: string;
  token: string;
  nickName: string;
}

export async function signUp(app: TestApp, nickName: string, password = 'password-123'): Promise<TestUser> {
  const data = ok(
    await app.gql(
      'mutation($n: String!, $p: String!) { signUp(nickName: $n, password: $p) { token user { id nickName } } }',
      { n: nickName, p: password },
    ),
  );
  return { id: data.signUp.user.id, token: data.signUp.token, nickName };
}

export async function follow(app: TestApp, reader: TestUser, author: TestUser, yes = true): Promise<void> {
  ok(
    await app.gql(
      'mutation($u: ID!, $f: Boolean!) { follow(userId: $u, follow: $f) { id } }',
      { u: author.id, f: yes },
      reader.token,
    ),
  );
}

export async function publish(
  app: TestApp,
  author: TestUser,
  title = 'a title',
  content = 'some content',
): Promise<string> {
  const data = ok(
    await app.gql(
      'mutation($i: PublishBlogInput!) { publishBlog(input: $i) { id } }',
      { i: { title, content } },
      author.token,
    ),
  );
  return data.publishBlog.id;
}

/** A reader who follows three authors (ann, ben, cat): the setting of the feed tests. */
export async function readerOfThree(app: TestApp): Promise<{ reader: TestUser; authors: TestUser[] }> {
  const reader = await signUp(app, 'reader');
  const authors: TestUser[] = [];
  for (const name of ['ann', 'ben', 'cat']) authors.push(await signUp(app, name));
  for (const author of authors) await follow(app, reader, author);
  return { reader, authors };
}

/**
 * `rounds` rounds in which each author publishes one blog, each a clock tick after the last.
 * Returns each author's blog ids, newest first.
 */
export async function publishInTurns(
  app: TestApp,
  clock: { tick(): void },
  authors: TestUser[],
  rounds: number,
): Promise<string[][]> {
  const ids: string[][] = authors.map(() => []);
  for (let round = 0; round < rounds; round += 1) {
    for (const [i, author] of authors.entries()) {
      clock.tick();
      ids[i].unshift(await publish(app, author, `${author.nickName} ${round}`));
    }
  }
  return ids;
}

/**
 * Adds `count` active followers to an author in bulk: users with ids from `firstId` on, their
 * (empty, valid) inboxes, and the follows.
 */
export async function addFollowers(app: TestApp, author: TestUser, firstId: number, count: number): Promise<number[]> {
  const authorId = Number(Buffer.from(author.id, 'base64').toString().split(':')[1]);
  const ids = Array.from({ length: count }, (_, i) => firstId + i);
  // Their inboxes as a follow leaves them: valid, holding the follow (version 1) and nothing else.
  const inbox = redisInboxOf(app);
  const epoch = await currentGeneration(app);
  const openFollowing = async (readerId: number) => {
    await inbox.create(readerId, 0, epoch);
    await inbox.applyFollow(readerId, { version: 1, authorId }, [], null);
  };
  for (let start = 0; start < ids.length; start += 5000) {
    const batch = ids.slice(start, start + 5000);
    await app.db.query(
      'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at, feed_version, following_count) VALUES ?',
      [batch.map((id) => [id, `f${id}`, `f${id}`, 'not-a-hash', new Date(), 1, 1])],
    );
    await app.db.query('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', [
      batch.map((id) => [id, authorId, new Date()]),
    ]);
    // Two script calls per inbox (auto-pipelined, per node on a cluster), 250 inboxes at a time,
    // so that the last call of a batch does not wait for REDIS_COMMAND_TIMEOUT_MS behind the
    // others on a busy machine. (The author's follower_count is left as it was: a test that wants
    // the author big says so with BIG_V_FOLLOWERS.)
    for (let i = 0; i < batch.length; i += 250) await Promise.all(batch.slice(i, i + 250).map(openFollowing));
  }
  return ids;
}

/** Opens a valid, empty inbox for a user the test inserted by hand. */
export async function openInbox(app: TestApp, readerDbId: number): Promise<void> {
  await app.services.feed.openInbox(readerDbId);
}

/** Forgets a reader's inbox, as Redis does when it expires: the next read rebuilds it. */
export async function dropInbox(app: TestApp, readerDbId: number): Promise<void> {
  await app.redis.del(app.keys.feed(readerDbId), app.keys.feedMeta(readerDbId), app.keys.feedFollowees(readerDbId));
}

/** The Redis generation the app's inboxes are written in (feed/generation.ts). */
/** The app's Redis inbox adapter, as its services make it (its keys, item limit and time to live). */
export function redisInboxOf(app: TestApp): RedisInbox {
  return new RedisInbox({
    redis: app.redis,
    keys: app.keys,
    maxItems: app.config.feedMaxItems,
    ttlSeconds: app.config.activeDays * 86_400,
  });
}

export async function currentGeneration(app: TestApp): Promise<number> {
  const [row] = await app.query<{ epoch: string }>('SELECT epoch FROM tb_feed_generation WHERE id = 1');
  return Number(row.epoch);
}

/** Which of `readerIds` have `blogId` (a global id) in their inbox, with which score. */
export async function inboxScores(
  app: TestApp,
  readerIds: readonly number[],
  blogId: string,
): Promise<Array<string | null>> {
  const member = Buffer.from(blogId, 'base64').toString().split(':')[1].padStart(20, '0');
  const scores: Array<string | null> = [];
  for (let start = 0; start < readerIds.length; start += 1000) {
    scores.push(
      ...(await Promise.all(
        readerIds.slice(start, start + 1000).map((id) => app.redis.zscore(app.keys.feed(id), member)),
      )),
    );
  }
  return scores;
}

/** The reader's feed as MySQL, the truth, says it must be: live blogs of the followees not muted, canonical order. */
export async function feedTruth(app: TestApp, readerDbId: number): Promise<string[]> {
  const rows = await app.query<{ id: string }>(
    `SELECT b.id FROM tb_blog b JOIN tb_follow f ON f.follow_user_id = b.user_id
     WHERE f.user_id = ? AND f.muted = 0 AND b.deleted_at IS NULL ORDER BY b.created_at DESC, b.id DESC`,
    [readerDbId],
  );
  return rows.map((row) => Buffer.from(`Blog:${row.id}`).toString('base64'));
}

export const FEED_PAGE = `query($first: Int, $after: String) {
  followFeed(first: $first, after: $after) {
    edges { cursor node { id title createdAt likeCount isLiked author { id nickName } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

/** Scrolls a viewer's whole feed with pages of `first`; returns the blog ids in order. */
export async function scrollFeed(app: TestApp, viewer: TestUser, first: number): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (let page = 0; page < 10_000; page += 1) {
    const data: any = ok(await app.gql(FEED_PAGE, { first, after }, viewer.token));
    ids.push(...data.followFeed.edges.map((edge: any) => edge.node.id));
    if (!data.followFeed.pageInfo.hasNextPage) return ids;
    after = data.followFeed.pageInfo.endCursor;
  }
  throw new Error('the scroll did not end');
}
