/**
 * Integration tests of blogs over the real app (MariaDB + Redis): publishing and its limits
 * (counted in characters, multi-byte included), reading by id and through `node`, a user's own
 * blogs page, deleting, and id validation.
 *
 * Every bad input must get a GraphQL error with extensions.code, change nothing, and leave the
 * server serving: `expectServing()` runs a normal query after each bad input.
 */
import { errorCode, GqlResponse, ok, publish, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';

const BLOG_FIELDS = 'id title content images likeCount isLiked createdAt author { id nickName }';
const PUBLISH = `mutation($i: PublishBlogInput!) { publishBlog(input: $i) { ${BLOG_FIELDS} } }`;
const BLOG = `query($id: ID!) { blog(id: $id) { ${BLOG_FIELDS} } }`;
const USER = 'query($id: ID!) { user(id: $id) { id nickName } }';
const NODE = 'query($id: ID!) { node(id: $id) { id ... on Blog { title } ... on User { nickName } } }';
const DELETE = 'mutation($id: ID!) { deleteBlog(blogId: $id) }';
const USER_BLOGS = `query($id: ID!, $first: Int, $after: String) {
  user(id: $id) {
    blogs(first: $first, after: $after) {
      edges { cursor node { id title author { id } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}`;

/** ISO-8601 in UTC with milliseconds. */
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const globalId = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const UNKNOWN_BLOG = globalId('Blog:999999');
const UNKNOWN_USER = globalId('User:999999');

let app: TestApp;
let author: TestUser;
let other: TestUser;

beforeAll(async () => {
  app = await startTestApp('blog');
  [author, other] = [await signUp(app, 'author'), await signUp(app, 'other')];
});

afterAll(async () => {
  await app?.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers.

async function blogCount(where = '1 = 1'): Promise<number> {
  const [row] = await app.query(`SELECT COUNT(*) AS n FROM tb_blog WHERE ${where}`);
  return Number(row.n);
}

async function liveBlogCount(): Promise<number> {
  return blogCount('deleted_at IS NULL');
}

/** The response failed with exactly one error of this code (and this extensions.field, or none). */
function expectError(response: GqlResponse, code: string, field?: string): void {
  errorCode(response); // fails with the whole response when there is no error at all
  expect(response.errors!.map((e) => ({ code: e.extensions?.code, field: e.extensions?.field }))).toEqual([
    { code, field },
  ]);
}

/** A normal query still works: the server survived the bad input before it. */
async function expectServing(): Promise<void> {
  const data = ok(await app.gql('{ viewer { id } }', {}, author.token));
  expect(data.viewer.id).toBe(author.id);
}

async function publishInput(input: Record<string, unknown>, user: TestUser = author): Promise<any> {
  return ok(await app.gql(PUBLISH, { i: input }, user.token)).publishBlog;
}

async function readBlog(id: string): Promise<any> {
  return ok(await app.gql(BLOG, { id })).blog;
}

async function blogsPage(user: TestUser, first?: number, after?: string | null): Promise<any> {
  return ok(await app.gql(USER_BLOGS, { id: user.id, first, after }, author.token)).user.blogs;
}

/** Some emoji (each one code point, two UTF-16 units, four UTF-8 bytes). */
const EMOJI = ['😀', '🎉', '🚀', '🐙', '🍣'];
function emojiText(codePoints: number): string {
  return Array.from({ length: codePoints }, (_, i) => EMOJI[i % EMOJI.length]).join('');
}

// ---------------------------------------------------------------------------------------------

describe('publishBlog and reading a blog', () => {
  it('returns the new blog with every field, and blog(id) and node(id) return it', async () => {
    const input = {
      title: 'Hello',
      content: 'First post',
      images: ['https://img.example/1.png', 'https://img.example/2.png'],
    };
    const blog = await publishInput(input);
    expect(blog).toMatchObject({
      ...input,
      likeCount: 0,
      isLiked: false,
      author: { id: author.id, nickName: 'author' },
    });
    expect(blog.createdAt).toMatch(ISO_MS);
    expect(new Date(blog.createdAt).toISOString()).toBe(blog.createdAt);
    expect(Buffer.from(blog.id, 'base64').toString('utf8')).toMatch(/^Blog:[1-9]\d*$/);

    expect(await readBlog(blog.id)).toEqual(blog);
    // Read by someone else and anonymously: the same blog, not liked by them.
    expect(ok(await app.gql(BLOG, { id: blog.id }, other.token)).blog).toEqual(blog);

    expect(ok(await app.gql(NODE, { id: blog.id })).node).toEqual({ id: blog.id, title: 'Hello' });
    expect(ok(await app.gql(NODE, { id: author.id })).node).toEqual({ id: author.id, nickName: 'author' });
    expect(ok(await app.gql(USER, { id: author.id })).user).toEqual({ id: author.id, nickName: 'author' });
  });

  it('images may be left out or null: the blog has none', async () => {
    expect((await publishInput({ title: 'no images', content: 'c' })).images).toEqual([]);
    expect((await publishInput({ title: 'null images', content: 'c', images: null })).images).toEqual([]);
    expect((await publishInput({ title: 'empty images', content: 'c', images: [] })).images).toEqual([]);
  });

  it('publishBlog and deleteBlog without a token are UNAUTHENTICATED and change nothing', async () => {
    const id = await publish(app, author, 'stays');
    const [total, live] = [await blogCount(), await liveBlogCount()];
    expectError(await app.gql(PUBLISH, { i: { title: 'anonymous', content: 'c' } }), 'UNAUTHENTICATED');
    expectError(await app.gql(DELETE, { id }), 'UNAUTHENTICATED');
    expect(await blogCount()).toBe(total);
    expect(await liveBlogCount()).toBe(live);
    expect((await readBlog(id)).title).toBe('stays');
    await expectServing();
  });
});

describe('publishBlog limits', () => {
  const at = (n: number, char = 'a') => char.repeat(n);
  /** An http(s) URL of exactly n characters (code points), its path made of `char`. */
  const url = (n: number, char = 'a') => `https://i.example/${char.repeat(n - 'https://i.example/'.length)}`;

  it.each<[string, Record<string, unknown>, string]>([
    ['an empty title', { title: '', content: 'c' }, 'title'],
    ['a blank title', { title: '   ', content: 'c' }, 'title'],
    ['a title of 256 characters', { title: at(256), content: 'c' }, 'title'],
    ['a title of 256 multi-byte characters', { title: at(256, '表'), content: 'c' }, 'title'],
    ['a title of 256 emoji', { title: emojiText(256), content: 'c' }, 'title'],
    ['an empty content', { title: 't', content: '' }, 'content'],
    ['a blank content', { title: 't', content: '\n\t ' }, 'content'],
    ['a content of 10001 characters', { title: 't', content: at(10_001) }, 'content'],
    ['a content of 10001 emoji', { title: 't', content: emojiText(10_001) }, 'content'],
    [
      '10 images',
      { title: 't', content: 'c', images: Array.from({ length: 10 }, (_, i) => `https://img.example/${i}`) },
      'images',
    ],
    ['an image of 513 characters', { title: 't', content: 'c', images: [url(20), url(20), url(513)] }, 'images[2]'],
    [
      'an image of 513 emoji',
      { title: 't', content: 'c', images: [`https://i.example/${emojiText(513 - 18)}`] },
      'images[0]',
    ],
    ['a javascript: image', { title: 't', content: 'c', images: [url(20), 'javascript:alert(1)'] }, 'images[1]'],
    ['a data: image', { title: 't', content: 'c', images: ['data:image/png;base64,AAAA'] }, 'images[0]'],
    ['an image that is no URL', { title: 't', content: 'c', images: ['not a url'] }, 'images[0]'],
    ['an empty image', { title: 't', content: 'c', images: ['https://img.example/1', ''] }, 'images[1]'],
  ])('%s is BAD_USER_INPUT naming the field, and inserts nothing', async (_label, input, field) => {
    const before = await blogCount();
    const response = await app.gql(PUBLISH, { i: input }, author.token);
    expectError(response, 'BAD_USER_INPUT', field);
    expect(response.data ?? null).toBeNull();
    expect(await blogCount()).toBe(before);
    await expectServing();
  });

  it.each<[string, Record<string, unknown>]>([
    ['no title', { content: 'c' }],
    ['a number as title', { title: 5, content: 'c' }],
    ['a null image', { title: 't', content: 'c', images: [null] }],
    ['an unknown input field', { title: 't', content: 'c', tags: ['x'] }],
  ])("an input with %s is Apollo's BAD_USER_INPUT, and inserts nothing", async (_label, input) => {
    const before = await blogCount();
    expect(errorCode(await app.gql(PUBLISH, { i: input }, author.token))).toBe('BAD_USER_INPUT');
    expect(await blogCount()).toBe(before);
    await expectServing();
  });

  it.each<[string, Record<string, unknown>]>([
    [
      'ASCII',
      { title: at(255), content: at(10_000), images: Array.from({ length: 9 }, (_, i) => url(512, String(i))) },
    ],
    [
      '3-byte characters',
      { title: at(255, '表'), content: at(10_000, '表'), images: Array.from({ length: 9 }, () => url(512, '図')) },
    ],
    [
      'emoji',
      {
        title: emojiText(255),
        content: emojiText(10_000),
        images: Array.from({ length: 9 }, () => `https://i.example/${emojiText(512 - 18)}`),
      },
    ],
  ])('every field exactly at its limit in %s is accepted and returned verbatim', async (_label, input) => {
    const before = await blogCount();
    const blog = await publishInput(input);
    expect(blog).toMatchObject(input);
    expect(await readBlog(blog.id)).toMatchObject(input);
    expect(await blogCount()).toBe(before + 1);
    const [row] = await app.query('SELECT title, content FROM tb_blog WHERE title = ? AND content = ?', [
      input.title,
      input.content,
    ]);
    expect(row).toEqual({ title: input.title, content: input.content });
  });

  it('keeps a title mixing scripts, combining marks and emoji sequences verbatim', async () => {
    // 'é' as e + combining accent, a flag (two code points), a family (ZWJ sequence), CJK.
    const title = 'Cafe\u0301 🇯🇵 👨‍👩‍👧 表示 ﬁ ½';
    const image = `https://i.example/${title}`;
    const blog = await publishInput({ title, content: title, images: [image] });
    expect(await readBlog(blog.id)).toMatchObject({ title, content: title, images: [image] });
  });

  it('SQL and script text in title, content and images is stored and returned verbatim', async () => {
    const input = {
      title: "x'; DROP TABLE tb_blog; --",
      content: '<script>alert(1)</script>\\\' " %_ ${injected} \t end',
      // URLs, as images must be, stored as sent (not normalised by the URL parser).
      images: [
        'https://i.example/javascript:alert(1)',
        "https://i.example/' OR 1=1 --",
        'https://i.example/"]}, {"json": "break"',
        'http://i.example/<img src=x onerror=alert(1)>',
      ],
    };
    const blog = await publishInput(input);
    expect(blog).toMatchObject(input);
    expect(await readBlog(blog.id)).toMatchObject(input);
    const [row] = await app.query('SELECT title, content FROM tb_blog WHERE id = ?', [
      Buffer.from(blog.id, 'base64').toString('utf8').split(':')[1],
    ]);
    expect(row).toEqual({ title: input.title, content: input.content });
    await expectServing();
  });
});

describe('User.blogs', () => {
  let writer: TestUser;
  let neighbour: TestUser;
  /** The writer's blog ids, newest first. */
  let expected: string[];

  beforeAll(async () => {
    writer = await signUp(app, 'writer');
    neighbour = await signUp(app, 'neighbour');
    const ids: string[] = [];
    for (let i = 0; i < 25; i += 1) {
      ids.push(await publish(app, writer, `writer ${i}`));
      if (i % 5 === 0) await publish(app, neighbour, `neighbour ${i}`);
    }
    expected = ids.reverse();
  });

  it("pages of 10 give 10, 10, 5 blogs, newest first, without duplicates, only the user's own", async () => {
    const pages: any[] = [];
    let after: string | null = null;
    for (let i = 0; i < 5; i += 1) {
      const page = await blogsPage(writer, 10, after);
      pages.push(page);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(pages.map((page) => page.edges.length)).toEqual([10, 10, 5]);
    expect(pages.map((page) => page.pageInfo.hasNextPage)).toEqual([true, true, false]);
    expect(pages.every((page) => page.pageInfo.hasPreviousPage === false)).toBe(true);

    const edges = pages.flatMap((page) => page.edges);
    const ids = edges.map((edge: any) => edge.node.id);
    expect(ids).toEqual(expected);
    expect(new Set(ids).size).toBe(25);
    expect(edges.every((edge: any) => edge.node.author.id === writer.id)).toBe(true);
    expect(edges.every((edge: any) => edge.node.title.startsWith('writer '))).toBe(true);
    for (const page of pages) {
      expect(page.pageInfo.startCursor).toBe(page.edges[0].cursor);
      expect(page.pageInfo.endCursor).toBe(page.edges[page.edges.length - 1].cursor);
    }
  });

  it('the neighbour sees only their own 5 blogs', async () => {
    const page = await blogsPage(neighbour, 100);
    expect(page.edges.map((edge: any) => edge.node.title)).toEqual([20, 15, 10, 5, 0].map((i) => `neighbour ${i}`));
    expect(page.pageInfo.hasNextPage).toBe(false);
  });

  it('the default page is 10, and first: 0 gives no edges', async () => {
    expect((await blogsPage(writer)).edges.map((edge: any) => edge.node.id)).toEqual(expected.slice(0, 10));
    const empty = await blogsPage(writer, 0);
    expect(empty.edges).toEqual([]);
    expect(empty.pageInfo.startCursor).toBeNull();
  });

  it.each<[string, number | undefined, string | undefined, string]>([
    ['first: -1', -1, undefined, 'first'],
    ['first: 101', 101, undefined, 'first'],
    ['a garbage after', 10, 'garbage!!', 'after'],
    ['an after that decodes to nonsense', 10, Buffer.from('not:a:cursor').toString('base64url'), 'after'],
    ['an empty after', 10, '', 'after'],
  ])('%s is BAD_USER_INPUT naming the argument', async (_label, first, after, field) => {
    const response = await app.gql(USER_BLOGS, { id: writer.id, first, after }, author.token);
    expectError(response, 'BAD_USER_INPUT', field);
    await expectServing();
  });
});

describe('deleteBlog', () => {
  it('by a non-author is FORBIDDEN and the blog stays readable', async () => {
    const id = await publish(app, author, 'not yours');
    const live = await liveBlogCount();
    expectError(await app.gql(DELETE, { id }, other.token), 'FORBIDDEN');
    expect((await readBlog(id)).title).toBe('not yours');
    expect(await liveBlogCount()).toBe(live);
    await expectServing();
  });

  it('by the author returns the id; then the blog is gone everywhere and a second delete is NOT_FOUND', async () => {
    const deleter = await signUp(app, 'deleter');
    const keep = await publish(app, deleter, 'keep');
    const doomed = await publish(app, deleter, 'doomed');
    const live = await liveBlogCount();

    expect(ok(await app.gql(DELETE, { id: doomed }, deleter.token)).deleteBlog).toBe(doomed);
    expect(await liveBlogCount()).toBe(live - 1);

    const read = await app.gql(BLOG, { id: doomed }, deleter.token);
    expect(read.errors).toBeUndefined();
    expect(read.data).toEqual({ blog: null });
    expect(ok(await app.gql(NODE, { id: doomed })).node).toBeNull();
    const page = await blogsPage(deleter, 10);
    expect(page.edges.map((edge: any) => edge.node.id)).toEqual([keep]);
    expect(page.pageInfo.hasNextPage).toBe(false);

    expectError(await app.gql(DELETE, { id: doomed }, deleter.token), 'NOT_FOUND');
    expect(await liveBlogCount()).toBe(live - 1);
    expect((await readBlog(keep)).title).toBe('keep');
    await expectServing();
  });

  it('an unknown but well-formed Blog id is NOT_FOUND', async () => {
    const live = await liveBlogCount();
    expectError(await app.gql(DELETE, { id: UNKNOWN_BLOG }, author.token), 'NOT_FOUND');
    expect(await liveBlogCount()).toBe(live);
    await expectServing();
  });

  it.each([
    ['%%%', '%%%'],
    ['abc', 'abc'],
    ['an empty id', ''],
    ['a User id', 'USER'],
    ['Blog:0', globalId('Blog:0')],
    ['Blog:-1', globalId('Blog:-1')],
    ['Blog:1.5', globalId('Blog:1.5')],
    ['an unsafe integer', globalId('Blog:9999999999999999')],
    ['an unknown type', globalId('Comment:1')],
    ['a very long id', 'A'.repeat(1000)],
  ])('a malformed blogId (%s) is BAD_USER_INPUT on blogId', async (_label, raw) => {
    const id = raw === 'USER' ? author.id : raw;
    const live = await liveBlogCount();
    expectError(await app.gql(DELETE, { id }, author.token), 'BAD_USER_INPUT', 'blogId');
    expect(await liveBlogCount()).toBe(live);
    await expectServing();
  });
});

describe('ids', () => {
  it('blog(id), user(id) and node(id) with an unknown well-formed id are null', async () => {
    for (const [query, id, key] of [
      [BLOG, UNKNOWN_BLOG, 'blog'],
      [USER, UNKNOWN_USER, 'user'],
      [NODE, UNKNOWN_BLOG, 'node'],
      [NODE, UNKNOWN_USER, 'node'],
      [BLOG, globalId('Blog:900719925474099'), 'blog'],
    ]) {
      const response = await app.gql(query, { id }, author.token);
      expect(response.errors).toBeUndefined();
      expect(response.data).toEqual({ [key]: null });
    }
  });

  it.each([
    ['blog', BLOG, '%%%', '%%%'],
    ['blog', BLOG, 'abc', 'abc'],
    ['blog', BLOG, '"Blog:" without a number', globalId('Blog:')],
    ['user', USER, '%%%', '%%%'],
    ['user', USER, '"User:abc"', globalId('User:abc')],
    ['node', NODE, '%%%', '%%%'],
    ['node', NODE, 'an unknown type', globalId('Comment:1')],
  ])('%s(id) with a malformed id (%s) is BAD_USER_INPUT on id', async (key, query, _label, id) => {
    const response = await app.gql(query, { id });
    expectError(response, 'BAD_USER_INPUT', 'id');
    expect(response.data).toEqual({ [key]: null });
    await expectServing();
  });

  it('blog(id) with a User id and user(id) with a Blog id are BAD_USER_INPUT on id', async () => {
    const blogId = await publish(app, author, 'typed ids');
    expectError(await app.gql(BLOG, { id: author.id }), 'BAD_USER_INPUT', 'id');
    await expectServing();
    expectError(await app.gql(USER, { id: blogId }), 'BAD_USER_INPUT', 'id');
    await expectServing();
  });
});

describe('publishBlog with an idempotencyKey', () => {
  const dbIdOf = (globalId: string) => Number(Buffer.from(globalId, 'base64').toString('utf8').split(':')[1]);
  const blogsOf = (user: TestUser) => blogCount(`user_id = ${dbIdOf(user.id)}`);
  /** Fan-out events of a blog (the embedded mode fans nothing out: none there, ever). */
  async function fanoutEvents(blogId: string): Promise<number> {
    if (app.db.dialect !== 'mysql') return 0;
    const [row] = await app.query('SELECT COUNT(*) AS n FROM tb_fanout_task WHERE blog_id = ?', [dbIdOf(blogId)]);
    return Number(row.n);
  }

  it('a retry with the same key returns the first blog and creates none, with no second fan-out', async () => {
    const input = {
      title: 'once',
      content: 'only once',
      images: ['https://img.example/once.png'],
      idempotencyKey: 'retry-1',
    };
    const before = await blogsOf(author);
    const first = await publishInput(input);
    const events = await fanoutEvents(first.id);
    const again = await publishInput(input);
    expect(again).toEqual(first);
    expect(await blogsOf(author)).toBe(before + 1);
    expect(await fanoutEvents(first.id)).toBe(events);
  });

  it('a retry after the first answer was lost (committed, never received) returns the committed blog', async () => {
    // The service is the whole publish: its transaction committed, and the answer is "lost"
    // when the client calls again with the same key.
    const authorId = dbIdOf(author.id);
    const input = {
      title: 'lost answer',
      content: 'committed, then retried',
      images: null,
      idempotencyKey: 'lost-commit-7',
    };
    const committed = await app.services.blogs.publish(authorId, input);
    const before = await blogsOf(author);
    const retried = await app.services.blogs.publish(authorId, input);
    expect(retried.dbId).toBe(committed.dbId);
    expect(await blogsOf(author)).toBe(before);
    // The GraphQL retry gets the same blog too.
    expect((await publishInput(input)).id).toBe(committed.id);
    expect(await fanoutEvents(committed.id)).toBe(app.db.dialect === 'mysql' ? 1 : 0);
  });

  it('concurrent retries with the same key create one blog, and each gets it', async () => {
    const before = await blogsOf(author);
    const input = { title: 'burst', content: 'sent five times at once', idempotencyKey: 'burst-0001' };
    const responses = await Promise.all(Array.from({ length: 5 }, () => app.gql(PUBLISH, { i: input }, author.token)));
    const ids = responses.map((response) => ok(response).publishBlog.id);
    expect(new Set(ids).size).toBe(1);
    expect(await blogsOf(author)).toBe(before + 1);
    expect(await fanoutEvents(ids[0])).toBe(app.db.dialect === 'mysql' ? 1 : 0);
  });

  it('keys are per author: another author may use the same key for their own blog', async () => {
    const mine = await publishInput({ title: 'shared key', content: 'mine', idempotencyKey: 'same-key' });
    const theirs = await publishInput({ title: 'shared key', content: 'mine', idempotencyKey: 'same-key' }, other);
    expect(theirs.id).not.toBe(mine.id);
    expect(theirs.author.id).toBe(other.id);
  });

  it('a key reused with other content is BAD_USER_INPUT on idempotencyKey and creates nothing', async () => {
    const first = await publishInput({ title: 'original', content: 'the first content', idempotencyKey: 'reused' });
    const before = await blogsOf(author);
    for (const changed of [
      { title: 'original', content: 'other content' },
      { title: 'other title', content: 'the first content' },
      { title: 'original', content: 'the first content', images: ['https://img.example/new.png'] },
    ]) {
      const response = await app.gql(PUBLISH, { i: { ...changed, idempotencyKey: 'reused' } }, author.token);
      expectError(response, 'BAD_USER_INPUT', 'idempotencyKey');
      expect(response.errors![0].message).toContain('"reused"');
    }
    expect(await blogsOf(author)).toBe(before);
    expect((await readBlog(first.id)).content).toBe('the first content');
    await expectServing();
  });

  it.each([
    ['empty', ''],
    ['65 characters', 'k'.repeat(65)],
    ['a space', 'has space'],
    ['a slash', 'a/b'],
    ['non-ASCII letters', 'ключ'],
  ])('a key that is %s is BAD_USER_INPUT on idempotencyKey and creates nothing', async (_label, key) => {
    const before = await blogCount();
    expectError(
      await app.gql(PUBLISH, { i: { title: 't', content: 'c', idempotencyKey: key } }, author.token),
      'BAD_USER_INPUT',
      'idempotencyKey',
    );
    expect(await blogCount()).toBe(before);
    await expectServing();
  });

  it('accepts a key of 64 characters (a UUID, a ULID, base64url), and without a key every publish is a new blog', async () => {
    for (const key of [
      'k'.repeat(64),
      '0b8f3a4e-5a7d-4c3e-9d0e-7f1b2c3d4e5f',
      '01HZY3J5Q8K2M4N6P8R0S2T4V6',
      'AbC_-123',
    ]) {
      const blog = await publishInput({ title: 'keyed', content: key, idempotencyKey: key });
      expect((await publishInput({ title: 'keyed', content: key, idempotencyKey: key })).id).toBe(blog.id);
    }
    const a = await publishInput({ title: 'plain', content: 'twice' });
    const b = await publishInput({ title: 'plain', content: 'twice', idempotencyKey: null });
    expect(b.id).not.toBe(a.id);
  });
});
