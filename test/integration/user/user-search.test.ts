/**
 * users(search:): users whose nickName starts with the text, without regard to case or width,
 * best match first: the exact match, then shorter keys, then code point order. Every scroll is
 * compared with the users sorted here by that rule, for page sizes 1, 2 and 5; bad input is
 * BAD_USER_INPUT naming the argument. On MySQL and, in the embedded pass, on SQLite.
 */
import { nickNameKey } from '../../../src/user/user.key';
import { countStatements, errorCode, ok, signUp, startTestApp, TestApp } from '../../support/harness';

let app: TestApp;

const NAMES = [
  'Al',
  'alice',
  'ALI',
  'albert',
  'Alex',
  'al_pacino',
  'al%x',
  'al!x',
  'alé',
  'Ａｌｆｒｅｄ',
  'ﬁona',
  'Fiona2',
  'bob',
  'Bobby',
  'álvaro',
  'al ice',
  'Al 2',
  'al😀',
  'al\u{FFFF}x',
  'al\u{10000}x',
];

beforeAll(async () => {
  app = await startTestApp('user_search', { env: { FANOUT_WORKERS: '0' } });
  for (const name of NAMES) await signUp(app, name);
});
afterAll(() => app.close());

const SEARCH = `query($search: String!, $first: Int, $after: String) {
  users(search: $search, first: $first, after: $after) {
    edges { cursor node { id nickName } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`;

interface Connection {
  edges: Array<{ cursor: string; node: { id: string; nickName: string } }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

/** Code point order (the database's), not JavaScript's UTF-16 order. */
function byCodePoints(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** The rule, brute force: every name whose key starts with the search's key, by (key length, key). */
function expected(search: string): string[] {
  const prefix = nickNameKey(search);
  return NAMES.filter((name) => nickNameKey(name).startsWith(prefix)).sort(
    (a, b) => [...nickNameKey(a)].length - [...nickNameKey(b)].length || byCodePoints(nickNameKey(a), nickNameKey(b)),
  );
}

async function scroll(search: string, first: number): Promise<string[]> {
  const names: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 100; pages += 1) {
    const users: Connection = ok(await app.gql(SEARCH, { search, first, after })).users;
    expect(users.edges.length).toBeLessThanOrEqual(first);
    expect(users.pageInfo.hasPreviousPage).toBe(false);
    expect(users.pageInfo.startCursor).toBe(users.edges[0]?.cursor ?? null);
    expect(users.pageInfo.endCursor).toBe(users.edges.at(-1)?.cursor ?? null);
    names.push(...users.edges.map((edge) => edge.node.nickName));
    if (!users.pageInfo.hasNextPage) return names;
    after = users.pageInfo.endCursor;
  }
  throw new Error('the scroll did not end');
}

it('finds the users whose nickName starts with the text, the exact match first, then shorter ones, in pages', async () => {
  expect(expected('al').slice(0, 3)).toEqual(['Al', 'ALI', 'alé']);
  for (const search of ['al', 'AL', 'ali', 'fi', 'b', 'al_', 'al%', 'al!', 'alx', 'á', 'al\u{FFFF}', 'al ']) {
    for (const first of [1, 2, 5])
      expect({ search, first, names: await scroll(search, first) }).toEqual({ search, first, names: expected(search) });
  }
});

it('matches without regard to case or width, and takes wildcards literally', async () => {
  const names = async (search: string) => (await scroll(search, 100)).join(', ');
  expect(await names('ＡＬ')).toBe(await names('al'));
  expect(await names('al_')).toBe('al_pacino');
  expect(await names('al%')).toBe('al%x');
  expect(await names('FI')).toBe('ﬁona, Fiona2');
  expect(await names('zz')).toBe('');
});

it('answers a page with one SQL statement', async () => {
  const { statements } = await countStatements(app, async () => ok(await app.gql(SEARCH, { search: 'al', first: 5 })));
  expect(statements).toBe(1);
});

it('refuses bad input with BAD_USER_INPUT naming the argument', async () => {
  const refused = async (variables: Record<string, unknown>) => {
    const response = await app.gql(SEARCH, { search: 'al', ...variables });
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.data).toBeNull();
    return { field: response.errors![0].extensions!.field, message: response.errors![0].message };
  };
  expect(await refused({ search: '' })).toEqual({
    field: 'search',
    message: 'search must be 1..32 characters (got 0)',
  });
  expect(await refused({ search: 'a'.repeat(33) })).toEqual({
    field: 'search',
    message: 'search must be 1..32 characters (got 33)',
  });
  expect((await refused({ first: 101 })).field).toBe('first');
  expect((await refused({ first: -1 })).field).toBe('first');

  // A cursor of another connection: a feed's, a followers list's; and one of another search.
  const reader = await signUp(app, 'cursor-reader');
  const author = await signUp(app, 'cursor-author');
  ok(await app.gql('mutation($id: ID!) { followUser(userId: $id) { user { id } } }', { id: author.id }, reader.token));
  ok(await app.gql('mutation { publishBlogEdge(input: {title: "t", content: "c"}) { cursor } }', {}, author.token));
  const feedCursor = ok(await app.gql('{ followFeed(first: 1) { pageInfo { endCursor } } }', {}, reader.token))
    .followFeed.pageInfo.endCursor;
  const followersCursor = ok(
    await app.gql('query($id: ID!) { user(id: $id) { followers(first: 1) { pageInfo { endCursor } } } }', {
      id: author.id,
    }),
  ).user.followers.pageInfo.endCursor;
  const bobCursor = ok(await app.gql(SEARCH, { search: 'bob', first: 1 })).users.pageInfo.endCursor;
  expect(await refused({ after: feedCursor })).toEqual({
    field: 'after',
    message: expect.stringMatching(/is not a cursor of users\(search:\)/),
  });
  expect((await refused({ after: followersCursor })).field).toBe('after');
  expect(await refused({ after: bobCursor })).toEqual({
    field: 'after',
    message: expect.stringMatching(/belongs to another search/),
  });
  expect((await refused({ after: 'bm90IGEgY3Vyc29y' })).field).toBe('after');

  // And the other way round: a search cursor is no feed or followers cursor.
  const alCursor = ok(await app.gql(SEARCH, { search: 'al', first: 1 })).users.pageInfo.endCursor;
  const feed = await app.gql(
    'query($after: String) { followFeed(first: 1, after: $after) { edges { cursor } } }',
    { after: alCursor },
    reader.token,
  );
  expect(feed.errors?.map((error) => error.extensions)).toEqual([
    expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'after' }),
  ]);
  const followers = await app.gql(
    'query($id: ID!, $after: String) { user(id: $id) { followers(after: $after) { edges { cursor } } } }',
    {
      id: author.id,
      after: alCursor,
    },
  );
  expect(followers.errors?.map((error) => error.extensions)).toEqual([
    expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'after' }),
  ]);
});
