/**
 * Resuming the live feed and hearing what left it, through a real graphql-ws client:
 * followFeedAdded(after:) replays every blog newer than the client's newest, oldest first, then
 * goes live with nothing missed or repeated at the switch (publishes race the subscribe);
 * followFeedRemoved tells of a deleted blog and of an unfollowed author's blogs. In every feed
 * model on MySQL + Redis, and in the embedded pass (SQLite, the in-process bus).
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import { MAX_RESUME_BLOGS } from '../../../src/feed/feed.live';
import { TestClock } from '../../support/clock';
import {
  EMBEDDED,
  FEED_PAGE,
  follow,
  ok,
  publish,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';
import { FOLLOW_FEED_REMOVED, liveClient, LiveClient } from '../../support/live-client';
import { waitFor } from '../../support/processes';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

const RESUME =
  'subscription($after: String) { followFeedAdded(after: $after) { cursor node { id title author { nickName } } } }';

const clients: LiveClient[] = [];
const open = (url: string, token: string, query: string, variables?: Record<string, unknown>) => {
  const client = liveClient(url, token, query, variables);
  clients.push(client);
  return client;
};
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.dispose()));
});

describe.each(EMBEDDED ? ['pull'] : ['push', 'hybrid', 'pull'])('FEED_MODEL=%s', (model) => {
  let app: TestApp;
  const clock = new TestClock(Date.now());
  beforeAll(async () => {
    app = await startTestApp(`resume_${model}`, {
      now: clock.now,
      env: EMBEDDED ? {} : { FEED_MODEL: model, BIG_V_FOLLOWERS: '2' },
    });
  });
  afterAll(() => app.close());

  /** Waits until the reader's subscription listens (and on these authors' channels). */
  async function listening(reader: TestUser, authors: TestUser[]): Promise<void> {
    const buses = app.services.liveBuses;
    await waitFor('the subscription to be live', async () => {
      const readers = await buses.readers.liveAmong([dbId(reader)]);
      const listened = await buses.authors.liveAmong(authors.map(dbId));
      return readers.length === 1 && listened.length === authors.length;
    });
  }

  it('replays every blog newer than after, oldest first, then goes live: each exactly once across the switch', async () => {
    const [reader, author, star] = [
      await signUp(app, 'reader'),
      await signUp(app, 'author'),
      await signUp(app, 'star'),
    ];
    await follow(app, reader, author);
    await follow(app, reader, star);
    // A second follower makes star a big author in hybrid (nobody fans its blogs out).
    await follow(app, await signUp(app, 'fan'), star);
    for (const title of ['held 1', 'held 2']) {
      clock.tick();
      await publish(app, author, title);
    }
    await app.services.fanout?.idle();
    const held = ok(await app.gql(FEED_PAGE, { first: 10 }, reader.token)).followFeed;
    expect(held.edges.map((edge: any) => edge.node.title)).toEqual(['held 2', 'held 1']);
    // Offline: three blogs, two of them in one millisecond.
    clock.tick();
    await publish(app, author, 'missed 1');
    await publish(app, star, 'missed 2');
    clock.tick();
    await publish(app, author, 'missed 3');
    // Resume, while more blogs are published at the same moment (they race the replay's read).
    const client = open(app.url, reader.token, RESUME, { after: held.pageInfo.startCursor });
    const racing = (async () => {
      for (let i = 1; i <= 4; i += 1) {
        clock.tick();
        await publish(app, i % 2 === 0 ? star : author, `racing ${i}`);
      }
    })();
    await racing;
    await app.services.fanout?.idle();
    await listening(reader, model === 'push' ? [] : [author, star]);
    clock.tick();
    await publish(app, author, 'live');
    await client.received(8);
    await app.services.fanout?.idle();
    // Whatever was in flight has arrived: nothing more comes.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const titles = client.edges.map((edge) => edge.node.title);
    expect(new Set(titles).size).toBe(titles.length);
    expect([...titles].sort()).toEqual([
      'live',
      'missed 1',
      'missed 2',
      'missed 3',
      'racing 1',
      'racing 2',
      'racing 3',
      'racing 4',
    ]);
    // The replay comes first, oldest first: a client that prepends each edge ends with its feed in order.
    expect(titles.slice(0, 3)).toEqual(['missed 1', 'missed 2', 'missed 3']);
    expect(titles[titles.length - 1]).toBe('live');
    const prepended = [...client.edges].reverse().map((edge) => edge.node.id);
    const top = ok(await app.gql(FEED_PAGE, { first: 8 }, reader.token)).followFeed.edges.map(
      (edge: any) => edge.node.id,
    );
    expect(new Set(prepended)).toEqual(new Set(top));
    expect(prepended.slice(-3)).toEqual(top.slice(-3));
    // Each edge's cursor places its blog in the feed.
    const below = ok(await app.gql(FEED_PAGE, { first: 1, after: client.edges[0].cursor }, reader.token)).followFeed;
    expect(below.edges.map((edge: any) => edge.node.title)).toEqual(['held 2']);
    expect(client.errors).toEqual([]);
  });

  it(`answers RESUME_GAP_TOO_LARGE past ${MAX_RESUME_BLOGS} newer blogs, and BAD_USER_INPUT for a bad after`, async () => {
    const [reader, author] = [await signUp(app, 'gap-reader'), await signUp(app, 'gap-author')];
    await follow(app, reader, author);
    clock.tick();
    await publish(app, author, 'held');
    const held = ok(await app.gql(FEED_PAGE, { first: 1 }, reader.token)).followFeed;
    const at = clock.now().getTime();
    for (let i = 0; i < MAX_RESUME_BLOGS + 1; i += 1) {
      await app.db.write('INSERT INTO tb_blog (user_id, title, content, images, created_at) VALUES (?, ?, ?, ?, ?)', [
        Number(dbId(author)),
        `bulk ${i}`,
        'text',
        '[]',
        new Date(at + 1 + i),
      ]);
    }
    const far = open(app.url, reader.token, RESUME, { after: held.pageInfo.startCursor });
    await waitFor('the error', async () => far.errors.length > 0);
    expect(far.errors[0].extensions).toMatchObject({
      code: 'RESUME_GAP_TOO_LARGE',
      field: 'after',
      max: MAX_RESUME_BLOGS,
    });
    expect(far.edges).toEqual([]);
    const bad = open(app.url, reader.token, RESUME, { after: 'not a cursor!' });
    await waitFor('the error', async () => bad.errors.length > 0);
    expect(bad.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
  });

  it('followFeedRemoved tells of a deleted blog and of the blogs of an unfollowed author, once each', async () => {
    const [reader, author, other] = [
      await signUp(app, 'rm-reader'),
      await signUp(app, 'rm-author'),
      await signUp(app, 'rm-other'),
    ];
    await follow(app, reader, author);
    await follow(app, reader, other);
    const kept = await publish(app, author, 'kept');
    const doomed = await publish(app, author, 'doomed');
    const others = [await publish(app, other, 'other 1'), await publish(app, other, 'other 2')];
    await app.services.fanout?.idle();
    const client = open(app.url, reader.token, FOLLOW_FEED_REMOVED);
    await listening(reader, [author, other]);
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: doomed }, author.token));
    await waitFor('the delete', async () => client.removals.length >= 1);
    expect(client.removals).toEqual([doomed]);
    await follow(app, reader, other, false);
    await waitFor('the unfollow', async () => client.removals.length >= 3);
    expect(client.removals.slice(1).sort()).toEqual([...others].sort());
    // A blog the reader still sees is never told; a blog of an author the reader never followed neither.
    const stranger = await signUp(app, 'rm-stranger');
    const strangers = await publish(app, stranger, 'not in the feed');
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: strangers }, stranger.token));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(client.removals).toHaveLength(3);
    expect(client.removals).not.toContain(kept);
    expect(client.errors).toEqual([]);
  });
});
