/**
 * The three feed models return the same pages, and the inbox paths degrade to MySQL without a
 * seam: past a trimmed inbox, after a FLUSHDB in the middle of a scroll, for a returning
 * inactive reader, and around a big author crossing the threshold either way.
 */
import { RedisInbox } from '../../../src/feed/inbox.redis';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { TestClock } from '../../support/clock';
import {
  dropInbox,
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
} from '../../support/harness';
import { freePort, PrivateRedis } from '../../support/processes';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

const truth = (app: TestApp, reader: TestUser) => feedTruth(app, dbId(reader));

/** Every page of a scroll with varying page sizes: edges (ids and cursors) and pageInfo. */
async function pages(app: TestApp, reader: TestUser): Promise<unknown[]> {
  const seen: unknown[] = [];
  let after: string | null = null;
  for (let i = 0; i < 500; i += 1) {
    const first = (i % 7) + 1;
    const page: any = ok(await app.gql(FEED_PAGE, { first, after }, reader.token)).followFeed;
    seen.push({ first, edges: page.edges.map((e: any) => [e.node.id, e.cursor]), pageInfo: page.pageInfo });
    if (!page.pageInfo.hasNextPage)
      return [...seen, ...(await pagesUp(app, reader, page.edges.at(-1)?.cursor ?? null))];
    after = page.pageInfo.endCursor;
  }
  throw new Error('the scroll did not end');
}

const FEED_UP = `query($last: Int, $before: String) {
  followFeed(last: $last, before: $before) {
    edges { cursor node { id } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

/** Every page of a scroll up (last/before) from `before` to the top, with varying page sizes. */
async function pagesUp(app: TestApp, reader: TestUser, before: string | null): Promise<unknown[]> {
  const seen: unknown[] = [];
  for (let i = 0; before !== null && i < 500; i += 1) {
    const last = (i % 5) + 1;
    const page: any = ok(await app.gql(FEED_UP, { last, before }, reader.token)).followFeed;
    seen.push({ last, up: true, edges: page.edges.map((e: any) => [e.node.id, e.cursor]), pageInfo: page.pageInfo });
    if (!page.pageInfo.hasPreviousPage) return seen;
    before = page.pageInfo.startCursor;
  }
  if (before === null) return seen;
  throw new Error('the scroll up did not end');
}

describe('push, pull and hybrid', () => {
  const models = ['push', 'pull', 'hybrid'] as const;
  const apps: Record<string, TestApp> = {};
  const results: Record<string, { pages: unknown[][]; truths: string[][] }> = {};

  beforeAll(async () => {
    for (const model of models) {
      const clock = new TestClock();
      const app = await startTestApp(`models_${model}`, {
        now: clock.now,
        env: { FEED_MODEL: model, BIG_V_FOLLOWERS: '3' },
      });
      apps[model] = app;
      // The same scenario, step by step, in each model (same ids, same clock).
      const reader = await signUp(app, 'reader');
      const big = await signUp(app, 'big');
      const small = await signUp(app, 'small');
      const fans = [await signUp(app, 'fan1'), await signUp(app, 'fan2')];
      const snapshots: unknown[][] = [];
      const truths: string[][] = [];
      const check = async () => {
        await app.services.fanout?.idle();
        await app.services.feed.idle();
        snapshots.push(await pages(app, reader));
        truths.push(await truth(app, reader));
      };
      await follow(app, reader, big);
      await follow(app, reader, small);
      for (let i = 0; i < 12; i += 1) {
        if (i % 4 === 0) clock.tick(); // groups of 4 blogs share a millisecond
        await publish(app, i % 3 === 0 ? big : small, `early ${i}`);
      }
      await check();
      // big crosses the threshold (3 followers): its blogs are no longer fanned out in hybrid.
      for (const fan of fans) await follow(app, fan, big);
      for (let i = 0; i < 10; i += 1) {
        if (i % 3 === 0) clock.tick();
        await publish(app, i % 2 === 0 ? big : small, `while big ${i}`);
      }
      await check();
      // An unfollow and a re-follow in between, then big drops below the threshold again.
      await follow(app, reader, small, false);
      await check();
      await follow(app, reader, small);
      await follow(app, fans[0], big, false);
      for (let i = 0; i < 6; i += 1) {
        clock.tick();
        await publish(app, i % 2 === 0 ? big : small, `after ${i}`);
      }
      await check();
      // Mutes: big leaves the feed (the follow kept) and new blogs of it stay out; big crosses the
      // threshold while muted, the unmute brings its blogs back, pulled and pushed ones alike.
      const mute = async (muted: boolean) =>
        ok(
          await app.gql(
            'mutation($u: ID!, $m: Boolean!) { mute(userId: $u, muted: $m) { id } }',
            { u: big.id, m: muted },
            reader.token,
          ),
        );
      await mute(true);
      await check();
      await follow(app, fans[0], big);
      for (let i = 0; i < 4; i += 1) {
        clock.tick();
        await publish(app, i % 2 === 0 ? big : small, `muted ${i}`);
      }
      await check();
      await mute(false);
      await check();
      // small blocks the reader: the reader's follow ends, and a new one is refused.
      ok(await app.gql('mutation($u: ID!) { block(userId: $u) { id } }', { u: reader.id }, small.token));
      await check();
      expect(
        (await app.gql('mutation($u: ID!) { follow(userId: $u) { id } }', { u: small.id }, reader.token)).errors?.[0]
          .extensions,
      ).toMatchObject({
        code: 'FORBIDDEN',
        reason: 'blocked',
      });
      results[model] = { pages: snapshots, truths };
    }
  });

  afterAll(async () => {
    for (const app of Object.values(apps)) await app.close();
  });

  it('serve the truth, page for page, in every model', () => {
    for (const model of models) {
      const { pages: snapshots, truths } = results[model];
      snapshots.forEach((snapshot, i) => {
        const ids = snapshot
          .filter((page: any) => !page.up)
          .flatMap((page: any) => page.edges.map(([id]: [string]) => id));
        expect(ids).toEqual(truths[i]);
        // Up from the oldest blog: every newer one, pages in reverse, each newest first.
        const up = snapshot
          .filter((page: any) => page.up)
          .reverse()
          .flatMap((page: any) => page.edges.map(([id]: [string]) => id));
        expect(up).toEqual(truths[i].slice(0, -1));
      });
    }
    expect(results.push.truths[3]).toHaveLength(28);
    // Muted: big's 12 blogs leave (small's 16 stay); two more of each while big is muted; unmuted:
    // all 32; small's 18 leave with the block.
    expect(results.push.truths.slice(4).map((truth) => truth.length)).toEqual([16, 18, 32, 14]);
  });

  it('return identical pages, cursors included', () => {
    expect(results.pull.pages).toEqual(results.push.pages);
    expect(results.hybrid.pages).toEqual(results.push.pages);
  });

  it('in hybrid, do not fan out the blogs of a big author', async () => {
    const rows = await apps.hybrid.db.query(
      "SELECT b.title, b.pushed FROM tb_blog b JOIN tb_user u ON u.id = b.user_id WHERE u.nick_name = 'big' ORDER BY b.id",
    );
    const pushedByTitle = Object.fromEntries(rows.map((row: any) => [row.title, Boolean(row.pushed)]));
    expect(pushedByTitle['early 0']).toBe(true);
    expect(pushedByTitle['while big 0']).toBe(false);
    expect(pushedByTitle['after 0']).toBe(true);
    const pushRows = await apps.push.db.query('SELECT COUNT(*) AS n FROM tb_blog WHERE NOT pushed');
    expect(Number(pushRows[0].n)).toBe(0);
  });
});

describe('the cold path', () => {
  let redis: PrivateRedis;
  let app: TestApp;
  let reader: TestUser;
  const authors: TestUser[] = [];

  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    app = await startTestApp('models_cold', {
      env: { REDIS_URL: redis.url, FEED_MODEL: 'push', FEED_MAX_ITEMS: '300', FEED_REBUILD_ITEMS: '120' },
    });
    reader = await signUp(app, 'reader');
    for (let a = 0; a < 4; a += 1) authors.push(await signUp(app, `author${a}`));
    // 2,000 followee blogs straight into MySQL, with ties, then follows (their backfills fill
    // the inbox with the newest blogs only).
    const base = Date.parse('2026-03-01T00:00:00Z');
    const rows = Array.from({ length: 2000 }, (_, i) => [
      dbId(authors[i % 4]),
      `bulk ${i}`,
      'text',
      '[]',
      new Date(base + Math.floor(i / 3)),
    ]);
    await app.db.query('INSERT INTO tb_blog (user_id, title, content, images, created_at) VALUES ?', [rows]);
    for (const author of authors) await follow(app, reader, author);
  });

  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it('scrolls past what the trimmed inbox holds to the very last blog', async () => {
    expect(await redis.client().zcard(app.keys.feed(dbId(reader)))).toBeLessThanOrEqual(300 + 1); // and the sentinel
    const expected = await truth(app, reader);
    expect(expected).toHaveLength(2000);
    expect(await scrollFeed(app, reader, 100)).toEqual(expected);
  });

  it('survives a FLUSHDB in the middle of a scroll, then rebuilds the inbox', async () => {
    const expected = await truth(app, reader);
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; ; page += 1) {
      if (page === 3) await redis.client().flushdb();
      const data: any = ok(await app.gql(FEED_PAGE, { first: 37, after }, reader.token)).followFeed;
      seen.push(...data.edges.map((e: any) => e.node.id));
      if (!data.pageInfo.hasNextPage) break;
      after = data.pageInfo.endCursor;
    }
    expect(seen).toEqual(expected);
    await app.services.feed.idle();
    // Rebuilt: the newest FEED_REBUILD_ITEMS entries (not FEED_MAX_ITEMS), less the millisecond at
    // the floor (groups of 3 here), which the read may not have reached whole.
    const size = (await redis.client().zcard(app.keys.feed(dbId(reader)))) - 1; // the sentinel left out
    expect(size).toBeLessThanOrEqual(120);
    expect(size).toBeGreaterThanOrEqual(117);
    // Likes, counts and sessions live in MySQL and the token: untouched by the flush.
    const viewer = ok(await app.gql('{ viewer { followingCount } }', {}, reader.token)).viewer;
    expect(viewer.followingCount).toBe(4);
  });
});

describe('inactive followers', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('models_inactive', { env: { FEED_MODEL: 'push', ACTIVE_DAYS: '7' } });
  });
  afterAll(() => app.close());

  it('are skipped by fan-out, served from MySQL on return, and get their inbox back', async () => {
    const author = await signUp(app, 'author');
    const away = await signUp(app, 'away');
    await follow(app, away, author);
    // Ten days without activity: the inbox has expired.
    await dropInbox(app, dbId(away));
    const missed = await publish(app, author, 'while you were away');
    await app.services.fanout?.idle();
    expect(await app.redis.exists(app.keys.feed(dbId(away)))).toBe(0); // skipped, not half-created
    // Back: the page comes from MySQL at once...
    expect((await scrollFeed(app, away, 10))[0]).toBe(missed);
    await app.services.feed.idle();
    // ...the inbox is rebuilt, and fan-out reaches it again.
    const member = String(fromGlobalId(missed).id).padStart(20, '0');
    expect(await app.redis.zscore(app.keys.feed(dbId(away)), member)).not.toBeNull();
    const next = await publish(app, author, 'welcome back');
    await app.services.fanout?.idle();
    expect(
      await app.redis.zscore(app.keys.feed(dbId(away)), String(fromGlobalId(next).id).padStart(20, '0')),
    ).not.toBeNull();
    // The rebuilt inbox lives ACTIVE_DAYS from now, its entries, hash and followees alike.
    for (const key of [app.keys.feed(dbId(away)), app.keys.feedMeta(dbId(away)), app.keys.feedFollowees(dbId(away))]) {
      expect(await app.redis.pttl(key)).toBeGreaterThan(7 * 86_400_000 - 60_000);
    }
  });

  it('keeps a blog out of the inbox of a reader who unfollowed, even if a fan-out chunk lands after the unfollow', async () => {
    const author = await signUp(app, 'author2');
    const reader = await signUp(app, 'reader2');
    await follow(app, reader, author);
    const id = await publish(app, author, 'racing');
    await app.services.fanout?.idle();
    await follow(app, reader, author, false);
    // The race: a chunk made before the unfollow is written after it. The inbox's followees no
    // longer hold the author: the script writes nothing, and nobody asks MySQL.
    const member = String(fromGlobalId(id).id).padStart(20, '0');
    const delivery = { entry: { id: fromGlobalId(id).id, score: Date.now() }, authorId: dbId(author) };
    const inbox = new RedisInbox({
      redis: app.redis,
      keys: app.keys,
      maxItems: app.config.feedMaxItems,
      ttlSeconds: 3600,
    });
    expect(await inbox.deliver([dbId(reader)], delivery)).toEqual({ written: [], unsure: [], live: [] });
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).toBeNull();
    // While a follow change of the reader is pending the inbox cannot say: it writes, reports the
    // reader, and the chunk's check against MySQL takes the blog back.
    await inbox.markPending(dbId(reader), 999_999);
    expect(await inbox.deliver([dbId(reader)], delivery)).toEqual({ written: [], unsure: [dbId(reader)], live: [] });
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).not.toBeNull();
    await app.services.feed.deliver([dbId(reader)], delivery);
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).toBeNull();
    await inbox.clearPending(dbId(reader), 999_999);
    expect(await scrollFeed(app, reader, 10)).toEqual([]);
    // The same after a rebuild that forgot the unfollow.
    await dropInbox(app, dbId(reader));
    await app.services.feed.rebuildInbox(dbId(reader));
    await app.services.feed.deliver([dbId(reader)], delivery);
    expect(await app.redis.zscore(app.keys.feed(dbId(reader)), member)).toBeNull();
    expect(await scrollFeed(app, reader, 10)).toEqual([]);
  });
});
