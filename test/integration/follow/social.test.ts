/**
 * The social graph: User.followers, User.following, User.commonFollows and Blog.likers, keyset
 * pages of users ordered by the time of the follow or like, ties by user id. Every scroll is
 * compared with the rows themselves, sorted here (a brute force that shares no code with the
 * server), for page sizes 1, 2 and 3, with many follows and likes in one millisecond.
 */
import fc from 'fast-check';
import { MAX_PAGES_PER_STATEMENT } from '../../../src/db/keyset';
import { fromGlobalId, toGlobalId } from '../../../src/kernel/global-id';
import { MAX_PAGE_SIZE } from '../../../src/kernel/pagination/page';
import { TestClock } from '../../support/clock';
import {
  countStatements,
  follow,
  GqlResponse,
  ok,
  publish,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  // No fan-out workers: nothing here reads a feed, and their statements would add to the
  // statement counts measured below.
  app = await startTestApp('social', { now: clock.now, env: { FANOUT_WORKERS: '0' } });
});
afterAll(() => app.close());

type List = 'followers' | 'following' | 'commonFollows' | 'likers';

const CONNECTION =
  'edges { cursor node { id nickName } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }';
const LIST_QUERY: Record<List, string> = {
  followers: `query($id: ID!, $first: Int, $after: String) { owner: user(id: $id) { list: followers(first: $first, after: $after) { ${CONNECTION} } } }`,
  following: `query($id: ID!, $first: Int, $after: String) { owner: user(id: $id) { list: following(first: $first, after: $after) { ${CONNECTION} } } }`,
  commonFollows: `query($id: ID!, $first: Int, $after: String) { owner: user(id: $id) { list: commonFollows(first: $first, after: $after) { ${CONNECTION} } } }`,
  likers: `query($id: ID!, $first: Int, $after: String) { owner: blog(id: $id) { list: likers(first: $first, after: $after) { ${CONNECTION} } } }`,
};

interface Connection {
  edges: Array<{ cursor: string; node: { id: string; nickName: string } }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

const dbId = (globalId: string): number => fromGlobalId(globalId).id;

function listPage(
  list: List,
  ownerId: string,
  args: { first?: number | null; after?: string | null },
  token?: string,
): Promise<GqlResponse> {
  return app.gql(LIST_QUERY[list], { id: ownerId, ...args }, token);
}

async function page(
  list: List,
  ownerId: string,
  args: { first?: number | null; after?: string | null },
  token?: string,
): Promise<Connection> {
  return ok(await listPage(list, ownerId, args, token)).owner.list as Connection;
}

/** Scrolls a whole list with pages of `first`; the users' global ids in order. */
async function scroll(list: List, ownerId: string, first: number, token?: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 1000; pages += 1) {
    const connection = await page(list, ownerId, { first, after }, token);
    expect(connection.edges.length).toBeLessThanOrEqual(first);
    expect(connection.pageInfo.hasPreviousPage).toBe(false);
    expect(connection.pageInfo.startCursor).toBe(connection.edges[0]?.cursor ?? null);
    expect(connection.pageInfo.endCursor).toBe(connection.edges.at(-1)?.cursor ?? null);
    ids.push(...connection.edges.map((edge) => edge.node.id));
    if (!connection.pageInfo.hasNextPage) return ids;
    after = connection.pageInfo.endCursor;
  }
  throw new Error('the scroll did not end');
}

type Row = { id: string | number; created_at: Date };

/** Rows sorted by time then id, most recent first or (ascending) earliest first: the brute force. */
function sortRows(rows: Row[], order: 'asc' | 'desc'): string[] {
  const sign = order === 'asc' ? 1 : -1;
  return rows
    .map((row) => ({ id: Number(row.id), time: row.created_at.getTime() }))
    .sort((a, b) => sign * (a.time !== b.time ? a.time - b.time : a.id - b.id))
    .map((item) => toGlobalId('User', item.id));
}

/** What a list must hold, from its rows. `viewerId`: whose follows commonFollows intersects. */
async function truth(list: List, ownerId: string, viewerId?: string): Promise<string[]> {
  const owner = dbId(ownerId);
  switch (list) {
    case 'followers':
      return sortRows(
        await app.query<Row>('SELECT user_id AS id, created_at FROM tb_follow WHERE follow_user_id = ?', [owner]),
        'desc',
      );
    case 'following':
      return sortRows(
        await app.query<Row>('SELECT follow_user_id AS id, created_at FROM tb_follow WHERE user_id = ?', [owner]),
        'desc',
      );
    case 'commonFollows': {
      if (viewerId === undefined) return [];
      const viewerFollows = new Set(await truth('following', viewerId));
      return (await truth('following', ownerId)).filter((id) => viewerFollows.has(id));
    }
    case 'likers':
      return sortRows(
        await app.query<Row>('SELECT user_id AS id, created_at FROM tb_blog_like WHERE blog_id = ?', [owner]),
        'asc',
      );
  }
}

async function like(fan: TestUser, blogId: string): Promise<void> {
  ok(await app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { id } }', { b: blogId }, fan.token));
}

const nickNames = (connection: Connection) => connection.edges.map((edge) => edge.node.nickName);

describe('a star with ties', () => {
  let star: TestUser;
  let viewer: TestUser;
  let fans: TestUser[];
  let blogId: string;

  beforeAll(async () => {
    star = await signUp(app, 'star');
    viewer = await signUp(app, 'viewer');
    fans = [];
    for (let i = 0; i < 8; i += 1) fans.push(await signUp(app, `fan${i}`));
    blogId = await publish(app, star, 'liked');
    // Each group acts within one millisecond: ties that only the user id breaks.
    const groups = [[0, 1, 2], [3], [4, 5, 6, 7]];
    for (const group of groups) {
      clock.tick();
      for (const i of [...group].reverse()) await follow(app, fans[i], star);
      for (const i of group) await follow(app, star, fans[i]);
      for (const i of group) await like(fans[i], blogId);
    }
    clock.tick();
    await follow(app, viewer, star);
    await like(viewer, blogId);
    // The viewer follows some of the star's followees, in an order of its own.
    for (const i of [7, 1, 4, 3, 6]) {
      clock.tick();
      await follow(app, viewer, fans[i]);
    }
  });

  it('lists followers, most recent follow first, ties by the larger user id first', async () => {
    const all = await page('followers', star.id, { first: 20 });
    expect(nickNames(all)).toEqual(['viewer', 'fan7', 'fan6', 'fan5', 'fan4', 'fan3', 'fan2', 'fan1', 'fan0']);
    expect(all.pageInfo.hasNextPage).toBe(false);
    expect(all.edges.map((edge) => edge.node.id)).toEqual(await truth('followers', star.id));
  });

  it('lists following the same way, and the users a viewer follows', async () => {
    expect(nickNames(await page('following', star.id, { first: 20 }))).toEqual([
      'fan7',
      'fan6',
      'fan5',
      'fan4',
      'fan3',
      'fan2',
      'fan1',
      'fan0',
    ]);
    expect(nickNames(await page('following', viewer.id, {}))).toEqual(['fan6', 'fan3', 'fan4', 'fan1', 'fan7', 'star']);
  });

  it('lists likers earliest first, 5 by default', async () => {
    const first = await page('likers', blogId, {});
    expect(nickNames(first)).toEqual(['fan0', 'fan1', 'fan2', 'fan3', 'fan4']);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const rest = await page('likers', blogId, { after: first.pageInfo.endCursor });
    expect(nickNames(rest)).toEqual(['fan5', 'fan6', 'fan7', 'viewer']);
    expect(rest.pageInfo.hasNextPage).toBe(false);
    // An explicit null is the default too.
    expect(nickNames(await page('likers', blogId, { first: null }))).toHaveLength(5);
  });

  it("lists the common follows in the order of the user's follows, and none for an anonymous viewer", async () => {
    const common = await page('commonFollows', star.id, { first: 20 }, viewer.token);
    expect(nickNames(common)).toEqual(['fan7', 'fan6', 'fan4', 'fan3', 'fan1']);
    expect(common.edges.map((edge) => edge.node.id)).toEqual(await truth('commonFollows', star.id, viewer.id));
    // From the star's side: the users both follow, in the viewer's order.
    expect(nickNames(await page('commonFollows', viewer.id, {}, star.token))).toEqual([
      'fan6',
      'fan3',
      'fan4',
      'fan1',
      'fan7',
    ]);
    const anonymous = await page('commonFollows', star.id, { first: 20 });
    expect(anonymous).toEqual({
      edges: [],
      pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
    });
  });

  it('a rejected token is UNAUTHENTICATED on commonFollows, as on every field that takes an optional viewer', async () => {
    const response = await listPage('commonFollows', star.id, {}, 'not.a.token');
    expect(response.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
  });

  it.each([1, 2, 3])('shows every user of every list exactly once, in order, in pages of %i', async (first) => {
    for (const [list, ownerId, token, viewerId] of [
      ['followers', star.id, undefined, undefined],
      ['following', star.id, undefined, undefined],
      ['likers', blogId, undefined, undefined],
      ['commonFollows', star.id, viewer.token, viewer.id],
    ] as Array<[List, string, string | undefined, string | undefined]>) {
      const expected = await truth(list, ownerId, viewerId);
      expect(expected.length).toBeGreaterThan(3);
      expect(await scroll(list, ownerId, first, token)).toEqual(expected);
    }
  });

  it('first: 0 returns no edge and says whether there is one', async () => {
    const empty = await page('followers', star.id, { first: 0 });
    expect(empty).toEqual({
      edges: [],
      pageInfo: { hasNextPage: true, hasPreviousPage: false, startCursor: null, endCursor: null },
    });
  });

  it('refuses first out of 0..100 and cursors it did not issue, naming the argument (BAD_USER_INPUT)', async () => {
    const cursor = (text: string) => Buffer.from(text).toString('base64url');
    const bad: Array<[{ first?: number; after?: string }, string]> = [
      [{ first: -1 }, 'first'],
      [{ first: MAX_PAGE_SIZE + 1 }, 'first'],
      [{ after: 'not a cursor' }, 'after'],
      [{ after: cursor('garbage') }, 'after'],
      [{ after: cursor('1767225600000:0') }, 'after'], // user id 0
      [{ after: cursor('99999999999999999:1') }, 'after'], // past any date
      [{ after: cursor('1767225600000:1:1') }, 'after'], // a feed cursor's shape
      [{ after: '' }, 'after'],
    ];
    for (const list of ['followers', 'following', 'commonFollows', 'likers'] as List[]) {
      for (const [args, field] of bad) {
        // commonFollows checks its arguments for an anonymous viewer too.
        const response = await listPage(list, list === 'likers' ? blogId : star.id, args);
        expect(response.errors?.map((error) => error.extensions)).toEqual([
          expect.objectContaining({ code: 'BAD_USER_INPUT', field }),
        ]);
        expect(response.errors?.[0].message).toMatch(field === 'first' ? /first must be between 0 and 100/ : /cursor/);
      }
    }
  });

  it('continues after its cursor when the list changes between pages: nothing repeats, nothing is skipped', async () => {
    const latecomer = await signUp(app, 'latecomer');
    const before = await page('followers', star.id, { first: 3 });
    expect(nickNames(before)).toEqual(['viewer', 'fan7', 'fan6']);
    // A new follower goes to the top, and a follower on a later page leaves.
    clock.tick();
    await follow(app, latecomer, star);
    await follow(app, fans[4], star, false);
    const after = await page('followers', star.id, { first: 20, after: before.pageInfo.endCursor });
    expect(nickNames(after)).toEqual(['fan5', 'fan3', 'fan2', 'fan1', 'fan0']);
  });

  it('prices the pages in the query cost', async () => {
    const nested = `{ user(id: "${star.id}") { followers(first: 100) { edges { node { following(first: 100) { edges { node { id } } } } } } } }`;
    const response = await app.gql(nested);
    expect(response.errors?.[0].extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: 'cost' });
    ok(
      await app.gql(
        `{ blog(id: "${blogId}") { likers { edges { node { followers(first: 50) { edges { node { id } } } } } } } }`,
      ),
    );
  });
});

describe('statements per request', () => {
  /** SQL statements run while answering one request. */
  async function statements(
    query: string,
    variables: Record<string, unknown>,
    token?: string,
  ): Promise<{ count: number; data: any }> {
    await app.services.feed.idle();
    const { result, statements } = await countStatements(app, async () => ok(await app.gql(query, variables, token)));
    return { count: statements, data: result };
  }

  /**
   * A hub who follows `n` targets and their `n` fans; each target follows its fan and the hub,
   * is followed by its fan and by a reader (whom no one else knows), and likes the hub's blog.
   */
  async function hubOf(name: string, n: number): Promise<{ hub: TestUser; blogId: string; fans: TestUser[] }> {
    const hub = await signUp(app, name);
    const blogId = await publish(app, hub, `${name}'s`);
    const fans: TestUser[] = [];
    for (let i = 0; i < n; i += 1) {
      const target = await signUp(app, `${name}_t${i}`);
      const fan = await signUp(app, `${name}_f${i}`);
      await follow(app, await signUp(app, `${name}_r${i}`), target);
      await follow(app, hub, target);
      await follow(app, hub, fan);
      await follow(app, fan, target);
      await follow(app, target, fan);
      await follow(app, target, hub);
      await like(target, blogId);
      fans.push(fan);
    }
    return { hub, blogId, fans };
  }

  it("reads a profile's user and the viewer's follow flag in one statement", async () => {
    const viewer = await signUp(app, 'flagviewer');
    const followed = await signUp(app, 'flagfollowed');
    const stranger = await signUp(app, 'flagstranger');
    await follow(app, viewer, followed);
    const PROFILE = `query($id: ID!) { user(id: $id) { nickName followerCount isFollowedByViewer } }`;
    for (const [target, flag] of [
      [followed, true],
      [stranger, false],
    ] as const) {
      const seen = await statements(PROFILE, { id: target.id }, viewer.token);
      expect(seen.data.user).toEqual({
        nickName: target.nickName,
        followerCount: flag ? 1 : 0,
        isFollowedByViewer: flag,
      });
      expect(seen.count).toBe(1);
    }
    // Anonymous: no flag to read.
    const anonymous = await statements(PROFILE, { id: followed.id });
    expect(anonymous.data.user.isFollowedByViewer).toBe(false);
    expect(anonymous.count).toBe(1);
    // A list's users come with their flags too: the root user, the page and its users.
    await follow(app, viewer, stranger);
    await follow(app, followed, stranger);
    const LIST = `query($id: ID!) { user(id: $id) { following(first: 10) { edges { node { nickName isFollowedByViewer } } } } }`;
    const list = await statements(LIST, { id: viewer.id }, followed.token);
    expect(list.data.user.following.edges.map((edge: any) => edge.node)).toEqual([
      { nickName: stranger.nickName, isFollowedByViewer: true },
      { nickName: followed.nickName, isFollowedByViewer: false },
    ]);
    expect(list.count).toBe(3);
  });

  // One kind of list per level: pages of two kinds side by side are two statements that may
  // answer in different ticks, and then their users are two statements too.
  const NESTED_FOLLOWS = `query($id: ID!) { user(id: $id) { following(first: 50) { edges { node { nickName
    followers(first: 3) { edges { node { nickName } } } } } } } }`;
  const NESTED_LIKERS = `query($id: ID!) { blog(id: $id) { likers(first: 50) { edges { node { nickName
    commonFollows(first: 3) { edges { node { nickName } } } } } } } }`;

  it('does not grow with the number of users in the list', async () => {
    const counts: number[][] = [];
    for (const [name, n] of [
      ['small', 2],
      ['large', 8],
    ] as const) {
      const { hub, blogId, fans } = await hubOf(name, n);
      const follows = await statements(NESTED_FOLLOWS, { id: hub.id });
      expect(follows.data.user.following.edges).toHaveLength(2 * n);
      // Each target is followed by the hub, its fan and its reader; each fan by the hub and its target.
      const followers = follows.data.user.following.edges.map((edge: any) => edge.node.followers.edges.length);
      expect(followers.sort()).toEqual([...Array(n).fill(2), ...Array(n).fill(3)]);
      const likers = await statements(NESTED_LIKERS, { id: blogId }, hub.token);
      expect(likers.data.blog.likers.edges).toHaveLength(n);
      // The hub and each target (the likers) both follow the target's fan.
      const common = likers.data.blog.likers.edges.map((edge: any) =>
        edge.node.commonFollows.edges.map((e: any) => e.node.nickName),
      );
      expect(common).toEqual(fans.map((fan) => [fan.nickName]));
      counts.push([follows.count, likers.count]);
    }
    // The root object, the page, its users, every nested page at once, and their users (the
    // readers; the hub, the targets and the fans are in the request's user loader already).
    expect(counts).toEqual([
      [5, 5],
      [5, 5],
    ]);
  });
});

describe('many pages at once', () => {
  it(`reads them in statements of ${MAX_PAGES_PER_STATEMENT} pages (SQLite's bound on a UNION), each page as if read alone`, async () => {
    const users = (await app.query<{ id: string }>('SELECT id FROM tb_user ORDER BY id')).map((row) => Number(row.id));
    const rows = await app.query<{ user_id: string; follow_user_id: string; created_at: Date }>(
      'SELECT user_id, follow_user_id, created_at FROM tb_follow',
    );
    const fetches = Array.from({ length: 2 * MAX_PAGES_PER_STATEMENT + 1 }, (_, i) => ({
      of: users[i % users.length],
      after: null,
      limit: 1 + (i % 4),
    }));
    await app.services.feed.idle();
    const { result: pages, statements } = await countStatements(app, () =>
      app.services.follows.followers(null, fetches),
    );
    expect(statements).toBe(3);
    const expected = fetches.map(({ of, limit }) =>
      rows
        .filter((row) => Number(row.follow_user_id) === of)
        .map((row) => ({ time: row.created_at.getTime(), id: Number(row.user_id) }))
        .sort((a, b) => b.time - a.time || b.id - a.id)
        .slice(0, limit),
    );
    expect(pages).toEqual(expected);
    expect(pages.some((page) => page.length > 1)).toBe(true);
  });
});

describe('paging property', () => {
  let hub: TestUser;
  let viewer: TestUser;
  let hubBlog: string;
  let pool: TestUser[];

  beforeAll(async () => {
    hub = await signUp(app, 'prop_hub');
    viewer = await signUp(app, 'prop_viewer');
    hubBlog = await publish(app, hub, 'prop');
    pool = [];
    for (let i = 0; i < 10; i += 1) pool.push(await signUp(app, `prop${i}`));
  });

  const BASE = Date.parse('2026-06-01T00:00:00.000Z');
  /** Follow or like rows: distinct users of the pool, each at one of 3 milliseconds (many ties). */
  const rowsArb = fc.uniqueArray(
    fc.record({ user: fc.integer({ min: 0, max: 9 }), ms: fc.integer({ min: 0, max: 2 }) }),
    {
      selector: (row) => row.user,
      maxLength: 10,
    },
  );

  it('scrolls every list, for random follows and likes and page sizes, exactly as the rows sorted by hand', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<List>('followers', 'following', 'likers', 'commonFollows'),
        rowsArb,
        rowsArb,
        fc.integer({ min: 1, max: 4 }),
        async (list, rows, viewerRows, first) => {
          const hubId = dbId(hub.id);
          const at = (ms: number) => new Date(BASE + ms);
          const user = (i: number) => dbId(pool[i].id);
          await app.db.query('DELETE FROM tb_follow WHERE user_id IN (?) OR follow_user_id = ?', [
            [hubId, dbId(viewer.id)],
            hubId,
          ]);
          await app.db.query('DELETE FROM tb_blog_like WHERE blog_id = ?', [dbId(hubBlog)]);
          const insert = async (statement: string, values: unknown[][]) => {
            if (values.length > 0) await app.db.query(statement, [values]);
          };
          const followRows =
            list === 'followers'
              ? rows.map((row) => [user(row.user), hubId, at(row.ms)])
              : rows.map((row) => [hubId, user(row.user), at(row.ms)]);
          if (list === 'likers')
            await insert(
              'INSERT INTO tb_blog_like (blog_id, user_id, created_at) VALUES ?',
              rows.map((row) => [dbId(hubBlog), user(row.user), at(row.ms)]),
            );
          else await insert('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', followRows);
          await insert(
            'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
            viewerRows.map((row) => [dbId(viewer.id), user(row.user), at(row.ms)]),
          );
          const ownerId = list === 'likers' ? hubBlog : hub.id;
          const expected = await truth(list, ownerId, viewer.id);
          expect(await scroll(list, ownerId, first, viewer.token)).toEqual(expected);
        },
      ),
      { numRuns: 60 },
    );
  });
});
