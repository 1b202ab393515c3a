/**
 * The follow feed end to end, in whatever model and on whatever store the app runs (this file
 * is also part of the embedded pass): scrolling with same-millisecond ties, deletes, and cursor
 * validation. What inboxes hold is in inbox.test.ts.
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import { TestClock } from '../../support/clock';
import {
  errorCode,
  FEED_PAGE,
  feedTruth,
  ok,
  publish,
  readerOfThree,
  scrollFeed,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';

const clock = new TestClock();
let app: TestApp;
let reader: TestUser;
let authors: TestUser[];

beforeAll(async () => {
  app = await startTestApp('feed', { now: clock.now, env: { FEED_MAX_ITEMS: '800' } });
  ({ reader, authors } = await readerOfThree(app));
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
    await app.services.fanout?.idle();
  });

  it.each([1, 2, 3, 7, 10, 13, 100])(
    'pages of %i return every blog once, newest first, ties by larger id',
    async (first) => {
      const expected = await expectedFeed(dbId(reader));
      expect(expected).toHaveLength(126);
      expect(await scrollFeed(app, reader, first)).toEqual(expected);
    },
  );

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
    await app.services.fanout?.idle();
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

describe('what a feed holds', () => {
  it("leaves the author's own blogs out of the author's feed", async () => {
    const own = await scrollFeed(app, authors[0], 100);
    expect(own).toEqual([]);
  });

  it('loses a deleted blog at once', async () => {
    clock.tick(5);
    const id = await publish(app, authors[2], 'to delete');
    await app.services.fanout?.idle();
    expect((await scrollFeed(app, reader, 100))[0]).toBe(id);
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: id }, authors[2].token));
    expect(await scrollFeed(app, reader, 100)).not.toContain(id);
    await app.services.fanout?.idle();
    expect(await scrollFeed(app, reader, 100)).toEqual(await expectedFeed(dbId(reader)));
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
    ['offset out of range', Buffer.from('1000:1001:5').toString('base64url')],
    ['two-part (it names no blog)', Buffer.from('1000:1').toString('base64url')],
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
