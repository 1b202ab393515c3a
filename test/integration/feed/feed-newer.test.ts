/**
 * "New posts" end to end, in whatever model and on whatever store the app runs (this file is
 * also part of the embedded pass): followFeed's pages up (last/before) mixed with pages down
 * while blogs are published, deleted and authors unfollowed between pages; a reader of more
 * than 100 followees (the heads path of the page up); followFeedNewCount; and the typed errors
 * of bad arguments.
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import { TestClock } from '../../support/clock';
import {
  dropInbox,
  EMBEDDED,
  errorCode,
  FEED_PAGE,
  feedTruth,
  follow,
  ok,
  publish,
  readerOfThree,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';

const clock = new TestClock();
let app: TestApp;
let reader: TestUser;
let authors: TestUser[];

beforeAll(async () => {
  app = await startTestApp('feed_newer', { now: clock.now });
  ({ reader, authors } = await readerOfThree(app));
});

afterAll(() => app.close());

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

const FEED_UP = `query($last: Int, $before: String) {
  followFeed(last: $last, before: $before) {
    edges { cursor node { id title } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

const NEW_COUNT = `query($before: String!, $max: Int) { followFeedNewCount(before: $before, max: $max) }`;

async function settle(): Promise<void> {
  await app.services.fanout?.idle();
  await app.services.feed.idle();
}

async function up(viewer: TestUser, last: number, before: string): Promise<any> {
  return ok(await app.gql(FEED_UP, { last, before }, viewer.token)).followFeed;
}

async function down(viewer: TestUser, first: number, after: string | null): Promise<any> {
  return ok(await app.gql(FEED_PAGE, { first, after }, viewer.token)).followFeed;
}

const titles = (page: any): string[] => page.edges.map((edge: any) => edge.node.title);

async function deleteBlog(author: TestUser, blogId: string): Promise<void> {
  ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: blogId }, author.token));
}

describe('pages up and down', () => {
  it('mix exactly while blogs are published, deleted and an author unfollowed between pages', async () => {
    // 10 old blogs, in same-millisecond pairs.
    for (let i = 0; i < 10; i += 1) {
      if (i % 2 === 0) clock.tick();
      await publish(app, authors[i % 3], `old ${i}`);
    }
    await settle();
    const top = await down(reader, 4, null);
    expect(titles(top)).toEqual(['old 9', 'old 8', 'old 7', 'old 6']);
    expect(top.pageInfo.hasPreviousPage).toBe(false);

    // Nothing newer yet: an empty page up, and a count of 0.
    const none = await up(reader, 3, top.pageInfo.startCursor);
    expect(none).toEqual({
      edges: [],
      pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
    });
    expect(ok(await app.gql(NEW_COUNT, { before: top.pageInfo.startCursor }, reader.token)).followFeedNewCount).toBe(0);

    // Five new blogs, three in one millisecond.
    const fresh: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      if (i !== 2 && i !== 3) clock.tick();
      fresh.push(await publish(app, authors[i % 3], `new ${i}`));
    }
    expect(ok(await app.gql(NEW_COUNT, { before: top.pageInfo.startCursor }, reader.token)).followFeedNewCount).toBe(5);
    expect(
      ok(await app.gql(NEW_COUNT, { before: top.pageInfo.startCursor, max: 3 }, reader.token)).followFeedNewCount,
    ).toBe(3);
    expect(ok(await app.gql(NEW_COUNT, { before: top.edges[3].cursor }, reader.token)).followFeedNewCount).toBe(8);

    // The page up closest to what the client holds, newest first, with more above it.
    const first = await up(reader, 2, top.pageInfo.startCursor);
    expect(titles(first)).toEqual(['new 1', 'new 0']);
    expect(first.pageInfo).toMatchObject({
      hasPreviousPage: true,
      hasNextPage: false,
      startCursor: first.edges[0].cursor,
      endCursor: first.edges[1].cursor,
    });

    // Between pages: new 2 is deleted, a new blog comes, and the author of new 4 is unfollowed.
    await deleteBlog(authors[2], fresh[2]);
    clock.tick();
    await publish(app, authors[0], 'new 5');
    await follow(app, reader, authors[1], false);
    const second = await up(reader, 2, first.pageInfo.startCursor);
    // new 4 (authors[1]) left with the unfollow; new 2 with the delete.
    expect(titles(second)).toEqual(['new 5', 'new 3']);
    expect(second.pageInfo.hasPreviousPage).toBe(false);

    // Down again from a cursor of a page up: the blogs below it, old ones included, exactly once.
    await settle();
    const below = await down(reader, 20, second.edges[1].cursor);
    const expected = (await feedTruth(app, dbId(reader))).slice(2);
    expect(below.edges.map((edge: any) => edge.node.id)).toEqual(expected);
    // new 1 was authors[1]'s too.
    expect(titles(below).slice(0, 2)).toEqual(['new 0', 'old 9']);
    await follow(app, reader, authors[1]);
  });

  it('a reader of more than 100 followees pages up through bounded ranges to the very top', async () => {
    const many = await signUp(app, 'many-followees');
    const manyId = Number(dbId(many));
    const base = Date.parse('2026-06-01T00:00:00Z');
    for (let a = 0; a < 130; a += 1) {
      const { insertId: authorId } = await app.db.write(
        'INSERT INTO tb_user (nick_name, nick_key, password, created_at) VALUES (?, ?, ?, ?)',
        [`bulk-author-${a}`, `bulk-author-${a}`, 'x', new Date(base)],
      );
      await app.db.write('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES (?, ?, ?)', [
        manyId,
        authorId,
        new Date(base),
      ]);
      for (let b = 0; b < 3; b += 1) {
        // Ties across authors: 130 authors share 13 milliseconds per round.
        await app.db.write('INSERT INTO tb_blog (user_id, title, content, images, created_at) VALUES (?, ?, ?, ?, ?)', [
          authorId,
          `bulk ${a} ${b}`,
          'text',
          '[]',
          new Date(base + b * 100 + (a % 13)),
        ]);
      }
    }
    // The follows went into MySQL behind the service's back: the inbox the sign-up opened does not
    // know them (a page checks follows against it), so it goes, as an expired one would.
    if (!EMBEDDED) await dropInbox(app, manyId);
    const truth = await feedTruth(app, manyId);
    expect(truth).toHaveLength(390);
    const [, , lowest] = truth.slice(-3);
    const lowestRow = await app.query<{ created_at: Date }>('SELECT created_at FROM tb_blog WHERE id = ?', [
      Number(fromGlobalId(lowest).id),
    ]);
    const start = Buffer.from(`${new Date(lowestRow[0].created_at).getTime()}:1:${fromGlobalId(lowest).id}`).toString(
      'base64url',
    );
    const seen: string[][] = [];
    let before = start;
    for (let i = 0; i < 200; i += 1) {
      const page = await up(many, 7 + (i % 5) * 10, before);
      seen.unshift(page.edges.map((edge: any) => edge.node.id));
      if (!page.pageInfo.hasPreviousPage) break;
      before = page.pageInfo.startCursor;
    }
    expect(seen.flat()).toEqual(truth.slice(0, -1));
    expect(ok(await app.gql(NEW_COUNT, { before: start, max: 100 }, many.token)).followFeedNewCount).toBe(100);
    expect(ok(await app.gql(NEW_COUNT, { before: start }, many.token)).followFeedNewCount).toBe(100);
  });
});

describe('bad input', () => {
  const cursorOf = async () => (await down(reader, 1, null)).edges[0].cursor as string;

  const refused = async (query: string, variables: Record<string, unknown>, field: string) => {
    const response = await app.gql(query, variables, reader.token);
    expect({ code: errorCode(response), field: response.errors![0].extensions?.field }).toEqual({
      code: 'BAD_USER_INPUT',
      field,
    });
    return response.errors![0].message;
  };

  const FEED_ALL = `query($first: Int, $after: String, $last: Int, $before: String) {
    followFeed(first: $first, after: $after, last: $last, before: $before) { edges { cursor } }
  }`;

  it('refuses first with last, after with before, last without before, and sizes out of range, naming the argument', async () => {
    const cursor = await cursorOf();
    expect(await refused(FEED_ALL, { first: 2, last: 2, before: cursor }, 'last')).toMatch(/not both/);
    expect(await refused(FEED_ALL, { after: cursor, before: cursor }, 'before')).toMatch(/not both/);
    expect(await refused(FEED_ALL, { first: 2, before: cursor }, 'first')).toMatch(/last, not first/);
    expect(await refused(FEED_ALL, { last: 2, after: cursor }, 'last')).toMatch(/first, not last/);
    expect(await refused(FEED_ALL, { last: 2 }, 'last')).toMatch(/needs before/);
    expect(await refused(FEED_ALL, { last: 101, before: cursor }, 'last')).toMatch(/101/);
    expect(await refused(FEED_ALL, { last: -1, before: cursor }, 'last')).toMatch(/-1/);
  });

  it('refuses a cursor of another connection as before or after', async () => {
    // A likers (or followers) cursor, and a users(search:) cursor.
    const liker = await signUp(app, 'a-liker');
    const blogId = (await down(reader, 1, null)).edges[0].node.id;
    const likers = ok(
      await app.gql(
        'mutation($b: ID!) { likeBlog(blogId: $b) { likers(first: 1) { edges { cursor } } } }',
        { b: blogId },
        liker.token,
      ),
    ).likeBlog.likers.edges[0].cursor;
    const search = ok(await app.gql('{ users(search: "a-lik", first: 1) { edges { cursor } } }', {})).users.edges[0]
      .cursor;
    for (const foreign of [likers, search]) {
      expect(await refused(FEED_ALL, { last: 2, before: foreign }, 'before')).toMatch(/cursor/);
      expect(await refused(FEED_ALL, { first: 2, after: foreign }, 'after')).toMatch(/cursor/);
      expect(await refused(NEW_COUNT, { before: foreign }, 'before')).toMatch(/cursor/);
    }
  });

  it('refuses followFeedNewCount with a bad before or max', async () => {
    const cursor = await cursorOf();
    expect(await refused(NEW_COUNT, { before: 'not a cursor!' }, 'before')).toMatch(/not a cursor/);
    expect(await refused(NEW_COUNT, { before: cursor, max: 101 }, 'max')).toMatch(/101/);
    expect(await refused(NEW_COUNT, { before: cursor, max: -1 }, 'max')).toMatch(/-1/);
    expect(ok(await app.gql(NEW_COUNT, { before: cursor, max: 0 }, reader.token)).followFeedNewCount).toBe(0);
    // Anonymous: no feed to count.
    expect(errorCode(await app.gql(NEW_COUNT, { before: cursor }))).toBe('UNAUTHENTICATED');
  });
});
