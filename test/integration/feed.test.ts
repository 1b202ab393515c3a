/**
 * The follow feed end to end: fan-out into inboxes, scrolling with same-millisecond ties,
 * trimming, deletes, cursor validation, and the constant cost of a page.
 */
import { Redis } from 'ioredis';
import { fromGlobalId } from '../../src/graphql/global-id';
import { TestClock } from '../support/clock';
import { freePort, PrivateRedis } from '../support/processes';
import {
  addFollowers,
  inboxScores,
  errorCode,
  FEED_PAGE,
  feedTruth,
  follow,
  ok,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../support/harness';

const clock = new TestClock();
let app: TestApp;
let reader: TestUser;
let authors: TestUser[];

beforeAll(async () => {
  app = await startTestApp('feed', { now: clock.now, env: { FEED_MAX_ITEMS: '800' } });
  reader = await signUp(app, 'reader');
  authors = [];
  for (const name of ['ann', 'ben', 'cat']) authors.push(await signUp(app, name));
  for (const author of authors) await follow(app, reader, author);
});

afterAll(() => app.close());

const expectedFeed = (readerDbId: number) => feedTruth(app, readerDbId);

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

describe('scrolling', () => {
  beforeAll(async () => {
    // 126 blogs: groups of 7 share one millisecond, authors interleaved inside each group.
    for (let i = 0; i < 126; i += 1) {
      if (i % 7 === 0) clock.tick();
      await publish(app, authors[i % 3], `blog ${i}`);
    }
    await app.services.fanout.idle();
  });

  it.each([1, 2, 3, 7, 10, 13, 100])('pages of %i return every blog once, newest first, ties by larger id', async (first) => {
    const expected = await expectedFeed(dbId(reader));
    expect(expected).toHaveLength(126);
    expect(await scrollFeed(app, reader, first)).toEqual(expected);
  });

  it('gives every edge a cursor that resumes right after it', async () => {
    const expected = await expectedFeed(dbId(reader));
    const page = ok(await app.gql(FEED_PAGE, { first: 20 }, reader.token)).followFeed;
    for (const [i, edge] of page.edges.entries()) {
      const next = ok(await app.gql(FEED_PAGE, { first: 3, after: edge.cursor }, reader.token)).followFeed;
      expect(next.edges.map((e: any) => e.node.id)).toEqual(expected.slice(i + 1, i + 4));
    }
    expect(page.pageInfo.endCursor).toBe(page.edges[19].cursor);
    expect(page.pageInfo.startCursor).toBe(page.edges[0].cursor);
    expect(page.pageInfo.hasPreviousPage).toBe(false);
  });

  it('does not repeat or skip when new blogs arrive between pages', async () => {
    const before = await expectedFeed(dbId(reader));
    const first = ok(await app.gql(FEED_PAGE, { first: 5 }, reader.token)).followFeed;
    clock.tick(10);
    for (let i = 0; i < 4; i += 1) await publish(app, authors[i % 3], `late ${i}`);
    await app.services.fanout.idle();
    const seen = first.edges.map((e: any) => e.node.id);
    let after = first.pageInfo.endCursor;
    for (;;) {
      const page = ok(await app.gql(FEED_PAGE, { first: 9, after }, reader.token)).followFeed;
      seen.push(...page.edges.map((e: any) => e.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual(before);
    // ...and a fresh scroll starts with the new blogs.
    const fresh = await scrollFeed(app, reader, 50);
    expect(fresh).toEqual(await expectedFeed(dbId(reader)));
    expect(fresh).toHaveLength(130);
  });

  it('returns the fields of each blog with its author, likes and viewer state', async () => {
    const edge = ok(await app.gql(FEED_PAGE, { first: 1 }, reader.token)).followFeed.edges[0];
    expect(edge.node).toMatchObject({ likeCount: 0, isLiked: false, title: 'late 3' });
    expect(edge.node.author.nickName).toBe('ann');
    expect(edge.node.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe('inboxes', () => {
  it("hold the blog's created_at as score and a fixed-width member", async () => {
    clock.tick(5);
    const id = await publish(app, authors[1], 'scored');
    await app.services.fanout.idle();
    const blogDbId = fromGlobalId(id).id;
    const member = String(blogDbId).padStart(20, '0');
    const [row] = await app.db.query('SELECT created_at FROM tb_blog WHERE id = ?', [blogDbId]);
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).toBe(String(row.created_at.getTime()));
  });

  it("leave the author's own blogs out of the author's feed", async () => {
    const own = await scrollFeed(app, authors[0], 100);
    expect(own).toEqual([]);
  });

  it('lose a deleted blog everywhere', async () => {
    clock.tick(5);
    const id = await publish(app, authors[2], 'to delete');
    await app.services.fanout.idle();
    expect((await scrollFeed(app, reader, 100))[0]).toBe(id);
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: id }, authors[2].token));
    // Hidden at once, even before the inbox cleanup has run...
    expect(await scrollFeed(app, reader, 100)).not.toContain(id);
    await app.services.fanout.idle();
    // ...and gone from the inbox after it.
    const member = String(fromGlobalId(id).id).padStart(20, '0');
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
    await app.services.fanout.idle();
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
    await small.services.fanout.idle();
    // The newest 10 entries, and the sentinel that marks the inbox valid.
    expect(await small.redis.zcard(small.keys.feed(fromGlobalId(fan.id).id))).toBe(11);
    const expected: Array<{ id: string }> = await small.db.query('SELECT id FROM tb_blog ORDER BY created_at DESC, id DESC');
    const inInbox = await small.redis.zrevrangebyscore(small.keys.feed(fromGlobalId(fan.id).id), '+inf', 0);
    expect(inInbox.map(Number)).toEqual(expected.slice(0, 10).map((r) => Number(r.id)));
    // All 15, the 5 oldest through the cold path, with no seam.
    expect(await scrollFeed(small, fan, 4)).toEqual(expected.map((r) => Buffer.from(`Blog:${r.id}`).toString('base64')));
  });
});

describe('bad input', () => {
  const bad = async (variables: Record<string, unknown>) => {
    const response = await app.gql(FEED_PAGE, variables, reader.token);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    return response.errors![0];
  };

  it.each([
    ['garbage', 'not a cursor!'],
    ['base64 of text', Buffer.from('hello').toString('base64url')],
    ['tampered score', Buffer.from('12x:1').toString('base64url')],
    ['negative offset', Buffer.from('1000:-1').toString('base64url')],
    ['offset out of range', Buffer.from('1000:100001').toString('base64url')],
    ['score out of range', Buffer.from('9999999999999999:0').toString('base64url')],
    ['empty', ''],
  ])('rejects a %s cursor', async (_name, after) => {
    const error = await bad({ first: 5, after });
    expect(error.extensions?.field).toBe('after');
  });

  it.each([-1, 101, 1000])('rejects first = %i', async (first) => {
    const error = await bad({ first });
    expect(error.message).toContain(String(first));
    expect(error.extensions?.field).toBe('first');
  });

  it('accepts first = 0 and first = 100', async () => {
    const none = ok(await app.gql(FEED_PAGE, { first: 0 }, reader.token)).followFeed;
    expect(none.edges).toEqual([]);
    expect(none.pageInfo.hasNextPage).toBe(true);
    const hundred = ok(await app.gql(FEED_PAGE, { first: 100 }, reader.token)).followFeed;
    expect(hundred.edges).toHaveLength(100);
  });

  it('defaults to 10 items', async () => {
    const page = ok(await app.gql('{ followFeed { edges { cursor } } }', {}, reader.token)).followFeed;
    expect(page.edges).toHaveLength(10);
  });

  it('requires a viewer', async () => {
    expect(errorCode(await app.gql(FEED_PAGE, { first: 5 }))).toBe('UNAUTHENTICATED');
  });
});

describe('cost of a page', () => {
  // An app of its own without fan-out workers: the outbox relay and the workers would add their
  // own statements to the count while the page is measured.
  let quiet: TestApp;
  let viewer: TestUser;
  let server: PrivateRedis;
  beforeAll(async () => {
    // A redis-server of its own (also in the cluster pass): MONITOR then sees this app's
    // commands only, not those of the test files running beside it.
    server = new PrivateRedis(await freePort());
    await server.start();
    quiet = await startTestApp('feed_cost', { env: { FANOUT_WORKERS: '0', REDIS_URL: server.url } });
    viewer = await signUp(quiet, 'viewer');
    for (let a = 0; a < 6; a += 1) {
      const author = await signUp(quiet, `author${a}`);
      for (let i = 0; i < 10; i += 1) await publish(quiet, author, `post ${a}.${i}`);
      await follow(quiet, viewer, author); // the follow's backfill fills the inbox
    }
  });
  afterAll(async () => {
    await quiet.close();
    await server.stop();
  });

  /** SQL statements and Redis commands the app sends while answering one request. */
  async function measure(first: number): Promise<{ sql: number; redis: number; edges: number }> {
    const monitor = await (quiet.redis as Redis).monitor();
    const appPort = (quiet.redis as any).stream.localPort as number;
    const commands: string[][] = [];
    const marker = `end-of-request-${first}-${Date.now()}`;
    const done = new Promise<void>((resolve) =>
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (!source.endsWith(`:${appPort}`)) return;
        if (args[0]?.toLowerCase() === 'echo' && args[1] === marker) resolve();
        else commands.push(args);
      }),
    );
    const sqlBefore = quiet.sqlLog.statements;
    const data = ok(await quiet.gql(FEED_PAGE, { first }, viewer.token));
    const sql = quiet.sqlLog.statements - sqlBefore;
    await quiet.redis.echo(marker);
    await done;
    monitor.disconnect();
    return { sql, redis: commands.length, edges: data.followFeed.edges.length };
  }

  it('is the same few SQL statements and Redis commands for 5 and for 50 items', async () => {
    await measure(1); // the viewer's first request records their activity; count the next ones
    const five = await measure(5);
    const fifty = await measure(50);
    expect(five.edges).toBe(5);
    expect(fifty.edges).toBe(50);
    // One round trip to Redis (EXISTS + ZRANGE, pipelined). SQL: the big followees (hybrid),
    // then blogs, authors, likes and follows, one statement each.
    expect(five.redis).toBe(2);
    expect(fifty.redis).toBe(2);
    expect(five.sql).toBeLessThanOrEqual(5);
    expect(fifty.sql).toBe(five.sql);
  });
});
