/**
 * The races of the inbox models, as the issue that found them reproduced them, on the real
 * MySQL and Redis: a scroll while fan-out chunks are still landing, an unfollow and a follow of
 * one pair crossing each other, and a rebuild racing a follow. Each ends with the feed and the
 * inbox equal to the truth. (The same rules under every interleaving: test/unit/feed/feed-rules-model.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { FeedStore } from '../../../src/feed/feed.store';
import { RedisInbox } from '../../../src/feed/inbox.redis';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { blogIdOfMember } from '../../../src/redis/keys';
import { TestClock } from '../../support/clock';
import {
  currentGeneration,
  dropInbox,
  FEED_PAGE,
  feedTruth,
  follow,
  ok,
  postGraphQL,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';
import { freePort, startNodeProcess, startWorkerProcess, waitFor, WorkerProcess } from '../../support/processes';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;
const globalBlogId = (id: number) => Buffer.from(`Blog:${id}`).toString('base64');

/** The inbox's entries at or above its floor, newest first, as global ids; null when it does not exist. */
async function trustedInbox(app: TestApp, reader: TestUser): Promise<{ floor: number; ids: string[] } | null> {
  const floor = await app.redis.hget(app.keys.feedMeta(dbId(reader)), 'floor');
  if (floor === null) return null;
  const members = await app.redis.zrevrangebyscore(app.keys.feed(dbId(reader)), '(+inf', floor); // the sentinel at +inf left out
  return { floor: Number(floor), ids: members.map((member) => globalBlogId(blogIdOfMember(member))) };
}

/** The truth at or above a floor. */
async function truthFrom(app: TestApp, reader: TestUser, floor: number): Promise<string[]> {
  const rows = await app.query<{ id: string }>(
    `SELECT b.id FROM tb_blog b JOIN tb_follow f ON f.follow_user_id = b.user_id
     WHERE f.user_id = ? AND b.deleted_at IS NULL AND b.created_at >= ? ORDER BY b.created_at DESC, b.id DESC`,
    [dbId(reader), new Date(floor)],
  );
  return rows.map((row) => globalBlogId(Number(row.id)));
}

async function expectInboxIsTruth(app: TestApp, reader: TestUser): Promise<void> {
  const inbox = await trustedInbox(app, reader);
  expect(inbox).not.toBeNull();
  expect(inbox!.ids).toEqual(await truthFrom(app, reader, inbox!.floor));
}

describe('a scroll while fan-out is in flight', () => {
  let app: TestApp;
  beforeAll(async () => {
    // Delivery throttled to 20 jobs a second: 120 blogs (a job each: a task of one chunk runs it
    // in its dispatch) take about 6 s to reach the inbox.
    app = await startTestApp('races_inflight', { env: { FANOUT_JOBS_PER_SECOND: '20' } });
  });
  afterAll(() => app.close());

  it('pages of 1 show all 120 blogs once each, in order, while their chunks are still landing', async () => {
    const reader = await signUp(app, 'reader');
    const authors = [
      await signUp(app, 'a0'),
      await signUp(app, 'a1'),
      await signUp(app, 'a2'),
      await signUp(app, 'a3'),
    ];
    for (const author of authors) await follow(app, reader, author);
    for (let burst = 0; burst < 5; burst += 1) {
      // 24 at a time: six per author, sent together.
      await Promise.all(Array.from({ length: 24 }, (_, i) => publish(app, authors[i % 4], `burst ${burst}.${i}`)));
    }
    const truth = await feedTruth(app, dbId(reader));
    expect(truth).toHaveLength(120);
    // Pages of 100 already show all 120 (the span above the watermark comes from MySQL)...
    const big = ok(await app.gql(FEED_PAGE, { first: 100 }, reader.token)).followFeed;
    const rest = ok(await app.gql(FEED_PAGE, { first: 100, after: big.pageInfo.endCursor }, reader.token)).followFeed;
    expect([...big.edges, ...rest.edges].map((edge: any) => edge.node.id)).toEqual(truth);
    // ...and so do pages of 1, while the fan-out is not done.
    const [{ open }] = await app.query<{ open: number }>(
      "SELECT COUNT(*) AS open FROM tb_fanout_task WHERE status <> 'done'",
    );
    expect(Number(open)).toBeGreaterThan(0);
    expect(await scrollFeed(app, reader, 1)).toEqual(truth);
    await app.services.fanout?.idle(60_000);
    expect(await scrollFeed(app, reader, 1)).toEqual(truth);
    await expectInboxIsTruth(app, reader);
  });
});

describe('as users run it: two API processes in production and a fan-out worker process', () => {
  let app: TestApp;
  const processes: WorkerProcess[] = [];
  const urls: string[] = [];
  beforeAll(async () => {
    // The in-process app only prepares the database and reads the truth; it runs no workers.
    app = await startTestApp('races_processes', { env: { FANOUT_WORKERS: '0' } });
    for (let i = 0; i < 2; i += 1) {
      const port = await freePort();
      processes.push(
        startNodeProcess('server.js', { ...app.env, NODE_ENV: 'production', PORT: String(port), FANOUT_WORKERS: '0' }),
      );
      urls.push(`http://127.0.0.1:${port}/graphql`);
      await waitFor(
        'an API process to listen',
        async () => (await fetch(urls[i].replace('/graphql', '/healthz')).catch(() => null))?.ok === true,
        30_000,
      );
    }
    // Delivery throttled to 20 jobs a second in the worker (a job per blog): the scroll runs while it delivers.
    processes.push(startWorkerProcess({ ...app.env, NODE_ENV: 'production', FANOUT_JOBS_PER_SECOND: '20' }));
  });
  afterAll(async () => {
    for (const child of processes) await child.kill('SIGTERM');
    await app.close();
  });

  it('a scroll of pages of 1, alternating between the two processes, shows every blog once while chunks land', async () => {
    const gql = (i: number, query: string, variables: Record<string, unknown>, token?: string) =>
      postGraphQL(urls[i % 2], query, variables, token);
    const signUpAt = async (i: number, nickName: string) =>
      ok(
        await gql(i, 'mutation($n: String!) { signUp(nickName: $n, password: "password-123") { token user { id } } }', {
          n: nickName,
        }),
      ).signUp;
    const reader = await signUpAt(0, 'proc_reader');
    const authors = [
      await signUpAt(1, 'proc_a0'),
      await signUpAt(0, 'proc_a1'),
      await signUpAt(1, 'proc_a2'),
      await signUpAt(0, 'proc_a3'),
    ];
    for (const [i, author] of authors.entries())
      ok(await gql(i, 'mutation($u: ID!) { follow(userId: $u) { id } }', { u: author.user.id }, reader.token));
    for (let burst = 0; burst < 5; burst += 1) {
      await Promise.all(
        Array.from({ length: 24 }, async (_, i) =>
          ok(
            await gql(
              i,
              'mutation($t: String!) { publishBlog(input: { title: $t, content: "c" }) { id } }',
              { t: `burst ${burst}.${i}` },
              authors[i % 4].token,
            ),
          ),
        ),
      );
    }
    const truth = await feedTruth(app, fromGlobalId(reader.user.id).id);
    expect(truth).toHaveLength(120);
    const [{ open }] = await app.query<{ open: number }>(
      "SELECT COUNT(*) AS open FROM tb_fanout_task WHERE status <> 'done'",
    );
    expect(Number(open)).toBeGreaterThan(0);
    const scroll = async () => {
      const seen: string[] = [];
      let after: string | null = null;
      for (let page = 0; page < 500; page += 1) {
        const data: any = ok(await gql(page, FEED_PAGE, { first: 1, after }, reader.token)).followFeed;
        seen.push(...data.edges.map((edge: any) => edge.node.id));
        if (!data.pageInfo.hasNextPage) break;
        after = data.pageInfo.endCursor;
      }
      return seen;
    };
    expect(await scroll()).toEqual(truth);
    await waitFor(
      'the fan-out to finish',
      async () =>
        Number(
          (await app.query<{ open: number }>("SELECT COUNT(*) AS open FROM tb_fanout_task WHERE status <> 'done'"))[0]
            .open,
        ) === 0,
      60_000,
    );
    expect(await scroll()).toEqual(truth);
  });
});

describe('follow changes of one pair that cross each other', () => {
  const clock = new TestClock();
  let app: TestApp;
  let inbox: RedisInbox;
  let store: FeedStore;
  beforeAll(async () => {
    app = await startTestApp('races_pair', { now: clock.now });
    inbox = new RedisInbox({ redis: app.redis, keys: app.keys, maxItems: app.config.feedMaxItems, ttlSeconds: 3600 });
    store = new FeedStore(app.db);
  });
  afterAll(() => app.close());

  async function pair(name: string) {
    const reader = await signUp(app, `${name}_r`);
    const author = await signUp(app, `${name}_a`);
    for (let i = 0; i < 5; i += 1) {
      clock.tick(1000);
      await publish(app, author, `${name} ${i}`);
    }
    await app.services.fanout?.idle();
    return { reader, author };
  }

  it("an unfollow's cleanup that reads the inbox before a re-follow lands and removes after it leaves the re-follow's blogs", async () => {
    const { reader, author } = await pair('cross');
    // The two changes, committed as follow.service.ts commits them: follow v1, unfollow v2, follow v3.
    await follow(app, reader, author);
    await app.db.query('DELETE FROM tb_follow WHERE user_id = ? AND follow_user_id = ?', [dbId(reader), dbId(author)]);
    const unfollow = { version: 2, authorId: dbId(author) };
    const inInbox = await inbox.markUnfollow(dbId(reader), unfollow); // the unfollow reads the inbox...
    expect(inInbox).not.toBeNull();
    await app.db.query('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES (?, ?, ?)', [
      dbId(reader),
      dbId(author),
      new Date(),
    ]);
    await app.db.query('UPDATE tb_user SET feed_version = 3 WHERE id = ?', [dbId(reader)]);
    await app.services.feed.followed(dbId(reader), { version: 3, authorId: dbId(author) }); // ...a re-follow lands...
    await inbox.removeUnfollowed(dbId(reader), unfollow, await store.idsOfAuthorAmong(dbId(author), inInbox!)); // ...the unfollow removes
    expect(await scrollFeed(app, reader, 2)).toEqual(await feedTruth(app, dbId(reader)));
    await expectInboxIsTruth(app, reader);
    expect((await trustedInbox(app, reader))!.ids).toHaveLength(5);
  });

  it('a follow that reaches Redis after the newer unfollow changes nothing', async () => {
    const { reader, author } = await pair('late');
    await follow(app, reader, author); // v1, applied
    await follow(app, reader, author, false); // v2, applied
    await app.services.feed.followed(dbId(reader), { version: 1, authorId: dbId(author) }); // v1 again, late
    expect((await trustedInbox(app, reader))!.ids).toEqual([]);
    expect(await scrollFeed(app, reader, 2)).toEqual([]);
  });

  it('two devices toggling one follow at once end with the inbox equal to MySQL, every time', async () => {
    const { reader, author } = await pair('devices');
    for (let round = 0; round < 20; round += 1) {
      await Promise.all([follow(app, reader, author, round % 2 === 0), follow(app, reader, author, round % 2 === 1)]);
      await app.services.feed.idle();
      expect(await scrollFeed(app, reader, 3)).toEqual(await feedTruth(app, dbId(reader)));
      await expectInboxIsTruth(app, reader);
    }
  });
});

describe('a rebuild racing a follow', () => {
  const clock = new TestClock();
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('races_rebuild', { now: clock.now });
  });
  afterAll(() => app.close());

  it("a follow committed after the rebuild's snapshot makes the rebuild start again; the followee's older blogs are all there", async () => {
    const reader = await signUp(app, 'reader');
    const [old, followedLater] = [await signUp(app, 'old'), await signUp(app, 'later')];
    await follow(app, reader, old);
    for (let i = 0; i < 6; i += 1) {
      clock.tick(1000);
      await publish(app, i % 2 === 0 ? old : followedLater, `blog ${i}`);
    }
    await app.services.fanout?.idle();
    // The inbox expired; a read starts a rebuild: begin, then the snapshot...
    await dropInbox(app, dbId(reader));
    const inbox = new RedisInbox({
      redis: app.redis,
      keys: app.keys,
      maxItems: app.config.feedMaxItems,
      ttlSeconds: 3600,
    });
    const token = randomUUID();
    expect(await inbox.beginBuild(dbId(reader), token, await currentGeneration(app))).toBe(true);
    const snapshot = await new FeedStore(app.db).snapshot(dbId(reader), app.config.feedMaxItems);
    // ...the reader follows someone meanwhile...
    await follow(app, reader, followedLater);
    // ...and the snapshot, older than the follow, is not installed.
    expect(await inbox.finishBuild(dbId(reader), token, { ...snapshot, floor: 0 })).toBe('raced');
    expect(await scrollFeed(app, reader, 2)).toEqual(await feedTruth(app, dbId(reader)));
    await app.services.feed.idle();
    await expectInboxIsTruth(app, reader);
    expect((await trustedInbox(app, reader))!.ids).toHaveLength(6);
  });

  it('a first page and a follow sent at once, on an expired inbox, end with the inbox equal to MySQL', async () => {
    const reader = await signUp(app, 'reader2');
    const authors = [await signUp(app, 'x0'), await signUp(app, 'x1'), await signUp(app, 'x2')];
    await follow(app, reader, authors[0]);
    for (let i = 0; i < 9; i += 1) {
      clock.tick(1000);
      await publish(app, authors[i % 3], `post ${i}`);
    }
    await app.services.fanout?.idle();
    for (const [i, author] of authors.slice(1).entries()) {
      await dropInbox(app, dbId(reader));
      await Promise.all([
        app.gql(FEED_PAGE, { first: 2 }, reader.token),
        follow(app, reader, author),
        app.gql(FEED_PAGE, { first: 2 }, reader.token),
      ]);
      await app.services.feed.idle();
      expect(await scrollFeed(app, reader, 2)).toEqual(await feedTruth(app, dbId(reader)));
      await app.services.feed.idle();
      await expectInboxIsTruth(app, reader);
      expect((await trustedInbox(app, reader))!.ids).toHaveLength(3 * (i + 2));
    }
  });
});
