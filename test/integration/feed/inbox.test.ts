/**
 * Inboxes in Redis (push and hybrid models): scores and members, fan-out to many followers,
 * deletes, trimming with the cold path, a rebuild's depth (FEED_REBUILD_ITEMS), a follow's
 * backfill, and the constant cost of a page.
 * The feeds they serve are checked in every mode by feed.test.ts and follow.test.ts.
 */
import { createConnection } from 'mysql2/promise';
import { SCRIPT_BATCH } from '../../../src/feed/inbox.redis';
import { START } from '../../../src/kernel/pagination/cursor';
import { isCluster } from '../../../src/redis/redis.client';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { TestClock } from '../../support/clock';
import { freePort, PrivateRedis, waitFor } from '../../support/processes';
import { RedisMonitor } from '../../support/redis-monitor';
import {
  addFollowers,
  countStatements,
  currentGeneration,
  inboxScores,
  FEED_PAGE,
  MYSQL_URL,
  feedTruth,
  follow,
  ok,
  publish,
  publishInTurns,
  readerOfThree,
  redisInboxOf,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
  testDatabase,
} from '../../support/harness';

const BACKFILL = 5;
const clock = new TestClock();
let app: TestApp;
let reader: TestUser;
let authors: TestUser[];

beforeAll(async () => {
  app = await startTestApp('inbox', {
    now: clock.now,
    env: { FEED_MAX_ITEMS: '800', FOLLOW_BACKFILL_ITEMS: String(BACKFILL) },
  });
  ({ reader, authors } = await readerOfThree(app));
});

afterAll(() => app.close());

const expectedFeed = (readerDbId: number) => feedTruth(app, readerDbId);

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

describe('inboxes', () => {
  it("hold the blog's created_at as score and a fixed-width member", async () => {
    clock.tick(5);
    const id = await publish(app, authors[1], 'scored');
    await app.services.fanout?.idle();
    const blogDbId = fromGlobalId(id).id;
    const member = String(blogDbId).padStart(20, '0');
    const [row] = await app.db.query('SELECT created_at FROM tb_blog WHERE id = ?', [blogDbId]);
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).toBe(String(row.created_at.getTime()));
  });

  it('lose a deleted blog (feed.test.ts checks that it is hidden at once)', async () => {
    clock.tick(5);
    const id = await publish(app, authors[2], 'to delete');
    await app.services.fanout?.idle();
    const member = String(fromGlobalId(id).id).padStart(20, '0');
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).not.toBeNull();
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: id }, authors[2].token));
    await app.services.fanout?.idle();
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).toBeNull();
    expect(await scrollFeed(app, reader, 100)).toEqual(await expectedFeed(dbId(reader)));
  });

  it('reach every follower of a popular author, in pipelined chunks', async () => {
    const star = await signUp(app, 'star');
    const fans: TestUser[] = [];
    for (let i = 0; i < 12; i += 1) fans.push(await signUp(app, `fan${i}`));
    for (const fan of fans) await follow(app, fan, star);
    // Add 2,500 followers in bulk (more than two fan-out chunks of 1,000).
    await addFollowers(app, star, 1_000_000, 2500);
    clock.tick(5);
    const id = await publish(app, star, 'for everyone');
    await app.services.fanout?.idle();
    const followers = Array.from({ length: 2500 }, (_, i) => 1_000_000 + i);
    const scores = await inboxScores(app, followers, id);
    expect(scores.filter((score) => score !== null)).toHaveLength(2500);
    for (const fan of fans) expect((await scrollFeed(app, fan, 10))[0]).toBe(id);
  });
});

describe('trimming', () => {
  let small: TestApp;
  afterAll(() => small.close());

  it('keeps each inbox at FEED_MAX_ITEMS, and serves the older blogs from MySQL', async () => {
    small = await startTestApp('feed_trim', { env: { FEED_MAX_ITEMS: '10' } });
    const author = await signUp(small, 'author');
    const fan = await signUp(small, 'fan');
    await follow(small, fan, author);
    const ids: string[] = [];
    for (let i = 0; i < 15; i += 1) ids.push(await publish(small, author, `t${i}`));
    await small.services.fanout?.idle();
    // The newest 10 entries.
    expect(await small.redis.zcard(small.keys.feed(fromGlobalId(fan.id).id))).toBe(10 + 1); // and the sentinel
    const expected: Array<{ id: string }> = await small.db.query(
      'SELECT id FROM tb_blog ORDER BY created_at DESC, id DESC',
    );
    const inInbox = await small.redis.zrevrangebyscore(small.keys.feed(fromGlobalId(fan.id).id), '(+inf', 0);
    expect(inInbox.map(Number)).toEqual(expected.slice(0, 10).map((r) => Number(r.id)));
    // All 15, the 5 oldest through the cold path, with no seam.
    expect(await scrollFeed(small, fan, 4)).toEqual(
      expected.map((r) => Buffer.from(`Blog:${r.id}`).toString('base64')),
    );
  });
});

describe('rebuilding', () => {
  let shallow: TestApp;
  afterAll(() => shallow.close());

  /** feed_page_reads_total of each source, as /metrics of `on` says now. */
  async function pageReads(on: TestApp): Promise<Record<string, number>> {
    const text = await (await fetch(on.url.replace('/graphql', '/metrics'))).text();
    const reads: Record<string, number> = {};
    for (const [, source, count] of text.matchAll(/^feed_page_reads_total\{source="(\w+)"\} (\d+)$/gm))
      reads[source] = Number(count);
    return reads;
  }

  it('serves the pages that find no inbox, or find it being rebuilt, from the inbox their rebuild makes, not from MySQL', async () => {
    // A wait long enough for this machine's slowest moment: the test is about where the pages come from.
    const waiting = await startTestApp('feed_rebuild_wait', { env: { FEED_REBUILD_WAIT_MS: '30000' } });
    try {
      const author = await signUp(waiting, 'author');
      const fan = await signUp(waiting, 'fan');
      await follow(waiting, fan, author);
      for (let i = 0; i < 6; i += 1) await publish(waiting, author, `rebuilt ${i}`);
      await waiting.services.fanout?.idle();
      const feed = await scrollFeed(waiting, fan, 10);
      expect(feed).toHaveLength(6);
      const fanId = dbId(fan);
      const meta = waiting.keys.feedMeta(fanId);
      await waiting.redis.del(waiting.keys.feed(fanId), meta, waiting.keys.feedFollowees(fanId));
      const before = await pageReads(waiting);
      // The rebuild is held at its snapshot (it reads tb_blog): the first page finds no inbox and
      // starts it; the next two find the inbox building, by this process, and wait for it too.
      const lock = await createConnection({ uri: `${MYSQL_URL}/${testDatabase('feed_rebuild_wait')}` });
      const page = () => waiting.gql(FEED_PAGE, { first: 10 }, fan.token);
      let pages: Array<ReturnType<typeof page>> = [];
      await lock.query('LOCK TABLES tb_blog WRITE');
      try {
        pages.push(page());
        await waitFor('the rebuild begun', async () => (await waiting.redis.hexists(meta, 'building')) === 1, 10_000);
        pages = pages.concat([page(), page()]);
        await new Promise((resolve) => setTimeout(resolve, 200));
      } finally {
        await lock.query('UNLOCK TABLES');
        await lock.end();
      }
      for (const answer of await Promise.all(pages))
        expect(ok(answer).followFeed.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(feed);
      const after = await pageReads(waiting);
      expect((after.inbox ?? 0) - (before.inbox ?? 0)).toBe(3);
      expect((after.pull ?? 0) - (before.pull ?? 0)).toBe(0);
      expect(await waiting.redis.zcount(waiting.keys.feed(fanId), '-inf', '(+inf')).toBe(6);
    } finally {
      await waiting.close();
    }
  });

  it('starts an inbox with the newest FEED_REBUILD_ITEMS, serves the older blogs from MySQL, and lets deliveries fill it to FEED_MAX_ITEMS', async () => {
    // A millisecond apart, so that the rebuilt inbox's depth does not depend on tie groups.
    const ticking = new TestClock(Date.now());
    const env = { FEED_MAX_ITEMS: '20', FEED_REBUILD_ITEMS: '10' };
    shallow = await startTestApp('feed_rebuild_depth', { now: ticking.now, env });
    const author = await signUp(shallow, 'author');
    const fan = await signUp(shallow, 'fan');
    await follow(shallow, fan, author);
    const publishSome = async (count: number) => {
      for (let i = 0; i < count; i += 1) {
        ticking.tick();
        await publish(shallow, author, `blog ${i}`);
      }
      await shallow.services.fanout?.idle();
    };
    await publishSome(25);
    const fanId = fromGlobalId(fan.id).id;
    const inbox = shallow.keys.feed(fanId);
    const newestIds = async (): Promise<number[]> => {
      const rows: Array<{ id: string }> = await shallow.db.query(
        'SELECT id FROM tb_blog ORDER BY created_at DESC, id DESC',
      );
      return rows.map((row) => Number(row.id));
    };
    const held = async () => (await shallow.redis.zrevrangebyscore(inbox, '(+inf', 0)).map(Number);
    expect(await held()).toEqual((await newestIds()).slice(0, 20));
    // Redis lost the inbox: the next page rebuilds it, 10 deep, and reads it.
    await shallow.redis.del(inbox, shallow.keys.feedMeta(fanId), shallow.keys.feedFollowees(fanId));
    const feed = async () => (await newestIds()).map((id) => Buffer.from(`Blog:${id}`).toString('base64'));
    expect(await scrollFeed(shallow, fan, 4)).toEqual(await feed());
    await shallow.services.feed.idle();
    // The 10 it read but the oldest: the floor goes just above it, since its millisecond may hold
    // blogs the read did not reach.
    expect(await held()).toEqual((await newestIds()).slice(0, 9));
    // Every blog still once, the 16 below the rebuilt inbox through the cold path, with no seam.
    for (const first of [3, 10, 11]) expect(await scrollFeed(shallow, fan, first)).toEqual(await feed());
    // Deliveries add to it up to FEED_MAX_ITEMS, then trim as before.
    await publishSome(6);
    expect(await held()).toEqual((await newestIds()).slice(0, 15));
    await publishSome(6);
    expect(await held()).toEqual((await newestIds()).slice(0, 20));
    expect(await scrollFeed(shallow, fan, 6)).toEqual(await feed());
  });
});

it("follow: the followee's newest blogs enter the inbox at once (the rest via the cold path); unfollow takes them out", async () => {
  const reader = await signUp(app, 'follower');
  const kept = await signUp(app, 'kept');
  const dropped = await signUp(app, 'dropped');
  const [keptIds, droppedIds] = await publishInTurns(app, clock, [kept, dropped], 8);
  await app.services.fanout?.idle();
  const inboxIds = async () =>
    (await app.redis.zrevrangebyscore(app.keys.feed(dbId(reader)), '(+inf', 0)).map((member) =>
      Buffer.from(`Blog:${Number(member)}`).toString('base64'),
    );
  await follow(app, reader, kept);
  // No waiting: the backfill is part of the follow. The inbox gets the newest BACKFILL blogs;
  // the older ones come from MySQL (the cold path), with no seam in the scroll.
  expect(await inboxIds()).toEqual(keptIds.slice(0, BACKFILL));
  expect(await scrollFeed(app, reader, 3)).toEqual(keptIds);
  await follow(app, reader, dropped);
  const both = await scrollFeed(app, reader, 4);
  expect([...both].sort()).toEqual([...keptIds, ...droppedIds].sort());
  // The backfill cut the inbox below the 5th newest blog of `dropped`: still complete above.
  expect(await inboxIds()).toEqual(both.slice(0, (await inboxIds()).length));
  // New blogs reach the reader through fan-out...
  clock.tick();
  const fresh = await publish(app, dropped, 'fresh');
  await app.services.fanout?.idle();
  expect((await scrollFeed(app, reader, 4))[0]).toBe(fresh);
  expect((await inboxIds())[0]).toBe(fresh);
  // ...and unfollowing removes the followee's blogs from the inbox itself, not only from view.
  await follow(app, reader, dropped, false);
  expect(await scrollFeed(app, reader, 4)).toEqual(keptIds);
  expect((await inboxIds()).filter((id) => droppedIds.includes(id) || id === fresh)).toEqual([]);
});

describe('cost of a page', () => {
  // An app of its own without fan-out workers: the outbox relay and the workers would add their
  // own statements to the count while the page is measured.
  let quiet: TestApp;
  let viewer: TestUser;
  /** Follows the first five authors only. */
  let stranger: TestUser;
  let authors: TestUser[];
  let server: PrivateRedis;
  beforeAll(async () => {
    // A redis-server of its own (also in the cluster pass): MONITOR then sees this app's
    // commands only, not those of the test files running beside it.
    server = new PrivateRedis(await freePort());
    await server.start();
    quiet = await startTestApp('feed_cost', { env: { FANOUT_WORKERS: '0', REDIS_URL: server.url } });
    viewer = await signUp(quiet, 'viewer');
    stranger = await signUp(quiet, 'stranger');
    authors = [];
    for (let a = 0; a < 6; a += 1) {
      const author = await signUp(quiet, `author${a}`);
      authors.push(author);
      for (let i = 0; i < 10; i += 1) await publish(quiet, author, `post ${a}.${i}`);
      await follow(quiet, viewer, author); // the follow's backfill fills the inbox
      if (a < 5) await follow(quiet, stranger, author);
    }
  });
  afterAll(async () => {
    await quiet.close();
    await server.stop();
  });

  /** SQL statements and Redis commands the app sends while answering one request of `who`. */
  async function measure(
    first: number,
    who: TestUser = viewer,
  ): Promise<{ sql: number; redis: number; edges: number }> {
    const monitor = await RedisMonitor.start(server.url);
    const appPort = (quiet.redis as any).stream.localPort as number;
    const commands: string[][] = [];
    const marker = `end-of-request-${first}-${Date.now()}`;
    const done = new Promise<void>((resolve) =>
      monitor.onCommand(({ args, source }) => {
        if (!source.endsWith(`:${appPort}`)) return;
        if (args[0]?.toLowerCase() === 'echo' && args[1] === marker) resolve();
        // The process's check of the Redis generation (feed/generation.ts) is not the request's.
        else if (args[0]?.toLowerCase() !== 'info') commands.push(args);
      }),
    );
    // Without the hydration cache's periodic settle (a statement of its own every 5 s).
    const { result: data, statements: sql } = await countStatements(quiet, async () =>
      ok(await quiet.gql(FEED_PAGE, { first }, who.token)),
    );
    try {
      await quiet.redis.echo(marker);
      await Promise.race([done, monitor.failed]);
    } finally {
      monitor.stop();
    }
    return { sql, redis: commands.length, edges: data.followFeed.edges.length };
  }

  it('is the same few SQL statements and Redis commands for 5 and for 50 items', async () => {
    // The viewer's first request records their activity, sets the big-author generation and
    // fills the hydration cache with the blogs and authors of the pages; the second keeps the
    // viewer's list of big followees (hybrid). Count the next ones.
    for (const who of [viewer, stranger]) {
      await measure(50, who);
      await measure(50, who);
    }
    // No worker runs here: the 60 publishes are still "in flight", so the page also reads its
    // followees' blogs above the fan-out watermark from MySQL: one statement more (a bounded
    // range of each followee in flight), whatever the page size.
    const inFlight = [await measure(5), await measure(50)];
    // The fan-out of the first five authors finishes (as a worker would record it): a reader
    // who follows none of those still in flight pays nothing for it; the viewer still does.
    const finish = async (authorIds: number[]) => {
      const tasks: Array<{ id: string; author_id: string }> = await quiet.db.query(
        "SELECT id, author_id FROM tb_fanout_task WHERE kind = 'deliver' AND author_id IN (?)",
        [authorIds],
      );
      await quiet.db.query('UPDATE tb_fanout_task SET status = ? WHERE id IN (?)', [
        'done',
        tasks.map((task) => task.id),
      ]);
      await quiet.services.feed.deliveryFinished(
        tasks.map((task) => ({ taskId: Number(task.id), authorId: Number(task.author_id) })),
      );
    };
    await finish(authors.slice(0, 5).map(dbId));
    const strangers = [await measure(5, stranger), await measure(50, stranger)];
    inFlight.push(await measure(5));
    // Now the last one's too: the page is back to its usual cost.
    await finish([dbId(authors[5])]);
    const five = await measure(5);
    const fifty = await measure(50);
    expect(five.edges).toBe(5);
    expect(fifty.edges).toBe(50);
    // Four Redis commands: the inbox script (it reads the watermark and the big-author generation
    // too: a single server), the page's blogs with their like counts and the viewer's likes (one
    // script), their authors, and the follow checks from the inbox (together). No SQL: the list
    // of big followees is kept (with none, no pulled blogs are read), and the page's data comes
    // from the hydration cache.
    expect(five.redis).toBe(4);
    expect(fifty.redis).toBe(4);
    expect(five.sql).toBe(0);
    expect(fifty.sql).toBe(five.sql);
    for (const page of inFlight) {
      expect(page.redis).toBe(4);
      expect(page.sql).toBe(five.sql + 1);
    }
    for (const page of strangers) expect({ redis: page.redis, sql: page.sql }).toEqual({ redis: 4, sql: five.sql });
  });
});

describe('a delivery that lands while a follow change is pending', () => {
  // Reader ids of their own (no tb_user rows needed: the inbox alone is under test).
  const AUTHOR = 900_001;
  const member = (blogId: number) => String(blogId).padStart(20, '0');
  const inboxOf = () => redisInboxOf(app);

  /** A reader whose inbox follows AUTHOR (version 1), with follow change `changeId` marked pending. */
  async function pendingReader(readerId: number, changeId: number) {
    const inbox = inboxOf();
    await inbox.create(readerId, 0, await currentGeneration(app));
    await inbox.applyFollow(readerId, { version: 1, authorId: AUTHOR }, [], null);
    await inbox.markPending(readerId, changeId);
    return inbox;
  }

  // The model test's seed -69334293: the mute's clear came between the chunk's write and the
  // chunk's own take-back, and a page in that window trusted the inbox and showed the blog.
  it("is gone when the last mark clears, if it was an unfollowed author's (before the executor's take-back)", async () => {
    const readerId = 900_101;
    const inbox = await pendingReader(readerId, 1);
    await inbox.markUnfollow(readerId, { version: 2, authorId: AUTHOR });
    await inbox.removeUnfollowed(readerId, { version: 2, authorId: AUTHOR }, []);
    const outcome = await inbox.deliver([readerId], { entry: { id: 77, score: 1_000 }, authorId: AUTHOR });
    expect(outcome.unsure).toEqual([readerId]); // written: the pending change may have been a follow
    expect(await app.redis.zscore(app.keys.feed(readerId), member(77))).toBe('1000');
    await inbox.clearPending(readerId, 1);
    expect(await app.redis.zscore(app.keys.feed(readerId), member(77))).toBeNull();
  });

  it('stays when the last mark clears, if the followees hold its author by then (a follow applied)', async () => {
    const readerId = 900_102;
    const inbox = await pendingReader(readerId, 1);
    await inbox.markUnfollow(readerId, { version: 2, authorId: AUTHOR });
    await inbox.deliver([readerId], { entry: { id: 78, score: 1_000 }, authorId: AUTHOR });
    await inbox.markPending(readerId, 2);
    await inbox.applyFollow(readerId, { version: 3, authorId: AUTHOR }, [], null);
    await inbox.clearPending(readerId, 1); // not the last mark: nothing is decided yet
    expect(await app.redis.zscore(app.keys.feed(readerId), member(78))).toBe('1000');
    await inbox.clearPending(readerId, 2);
    expect(await app.redis.zscore(app.keys.feed(readerId), member(78))).toBe('1000');
  });
});

describe("a delivery's live readers", () => {
  const AUTHOR = 910_001;
  const FIRST_READER = 910_100;

  // deliver.lua looks the live marks of a batch up together, halving the batch until each part
  // is all live or none: every mix of live and not, with and without an inbox, must come out exact.
  it('are exactly the readers with a live mark, written or without an inbox, across several script calls', async () => {
    const inbox = redisInboxOf(app);
    const generation = await currentGeneration(app);
    const readers = Array.from({ length: 2 * SCRIPT_BATCH + 37 }, (_, i) => FIRST_READER + i);
    // Every third reader has no inbox; every other of the rest follows the author; live marks on
    // a scattered tenth, one run of 40 in a row, and the last reader.
    const withInbox = readers.filter((_, i) => i % 3 !== 0);
    const following = withInbox.filter((_, i) => i % 2 === 0);
    const live = new Set(readers.filter((_, i) => i % 10 === 7 || (i >= 300 && i < 340) || i === readers.length - 1));
    for (const id of withInbox) await inbox.create(id, 0, generation);
    for (const id of following) await inbox.applyFollow(id, { version: 1, authorId: AUTHOR }, [], null);
    for (const id of live) await app.redis.hset(app.keys.live(id), 'bench-process', '1');

    const outcome = await inbox.deliver(readers, { entry: { id: 91, score: 2_000 }, authorId: AUTHOR });
    const withoutInbox = readers.filter((id) => !withInbox.includes(id));
    const expectedLive = [...following, ...withoutInbox].filter((id) => live.has(id)).sort((a, b) => a - b);
    expect([...outcome.live].sort((a, b) => a - b)).toEqual(expectedLive);
    expect([...outcome.written].sort((a, b) => a - b)).toEqual(following);
    expect(outcome.unsure).toEqual([]);
    // A batch where nobody is live reports nobody.
    await Promise.all([...live].map((id) => app.redis.del(app.keys.live(id))));
    const quiet = await inbox.deliver(readers, { entry: { id: 92, score: 2_001 }, authorId: AUTHOR });
    expect(quiet.live).toEqual([]);
    expect(quiet.written.length).toBe(following.length);
  });
});

it("reads the pulled-blog tokens a page guesses in the inbox's own command, as many as a reader may follow", async () => {
  const inbox = redisInboxOf(app);
  const epoch = await currentGeneration(app);
  // More big followees than Lua's unpack takes (about 8,000 values).
  const authorIds = Array.from({ length: 10_000 }, (_, i) => 500_000 + i);
  for (const authorId of [authorIds[0], authorIds[4_321], authorIds[9_999]])
    await inbox.renewPulledBlogs(authorId, 'changed', epoch);
  const read = await inbox.read(dbId(reader), START, 10, epoch, authorIds);
  const tokens = await inbox.pulledBlogTokens(authorIds, epoch);
  expect(tokens.filter((token) => token !== null)).toHaveLength(3);
  // On a cluster the tokens are in other slots than the inbox: the page reads them after it.
  expect(read.pulledTokens).toEqual(isCluster(app.redis) ? undefined : tokens);
});
