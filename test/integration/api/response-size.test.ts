/**
 * What one answer may weigh: the query cost counts the bytes a field can answer (limits.ts), the
 * served answer has a byte cap (RESPONSE_MAX_BYTES, http.ts), and blog text takes no control
 * characters but newline and tab (stored rows written before stay readable).
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import { errorCode, ok, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';

/** Small, so that three blogs of legacy content go over it (a test must not build a 10 MB answer). */
const RESPONSE_MAX_BYTES = 150_000;
/** What a row written before the rule may hold: 10,000 control characters, 6 bytes each in JSON. */
const LEGACY_CONTENT = '\u0001'.repeat(10_000);

const contentPages = (userId: string, aliases: number, first: number) =>
  `{ user(id: "${userId}") { ${Array.from({ length: aliases }, (_, i) => `b${i}: blogs(first: ${first}) { edges { node { content } } }`).join(' ')} } }`;

let app: TestApp;
let author: TestUser;

/** POSTs a query and returns the status, the body's length in bytes, and the body. */
async function post(query: string): Promise<{ status: number; bytes: number; body: any }> {
  const response = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) };
}

beforeAll(async () => {
  app = await startTestApp('response_size', { env: { RESPONSE_MAX_BYTES: String(RESPONSE_MAX_BYTES) } });
  author = await signUp(app, 'legacy');
  // Three blogs stored before control characters were refused: written straight to the table.
  const authorId = Number(fromGlobalId(author.id).id);
  for (let i = 0; i < 3; i += 1) {
    await app.db.write(
      'INSERT INTO tb_blog (user_id, title, content, images, liked, created_at, pushed) VALUES (?, ?, ?, ?, 0, ?, 1)',
      [authorId, `legacy ${i}`, LEGACY_CONTENT, '[]', new Date(Date.now() - 1000 + i)],
    );
  }
});
afterAll(() => app.close());

describe('bytes are a cost', () => {
  it('reads a stored blog of control characters back whole: about 60 kB of JSON for one content', async () => {
    const answer = await post(contentPages(author.id, 1, 1));
    expect(answer.status).toBe(200);
    expect(answer.body.data.user.b0.edges[0].node.content).toBe(LEGACY_CONTENT);
    expect(answer.bytes).toBeGreaterThan(60_000);
    // So 30 aliases of a page of 100 would answer 30 x 100 x 60 kB, about 180 MB.
    expect(30 * 100 * answer.bytes).toBeGreaterThan(170_000_000);
  });

  it('refuses 30 aliases of a page of contents before anything runs', async () => {
    const answer = await post(contentPages(author.id, 30, 100));
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: 'cost' });
    expect(answer.body.data).toBeUndefined();
  });
});

describe('RESPONSE_MAX_BYTES', () => {
  it('answers an answer over the cap with RESPONSE_TOO_LARGE and none of its body, and keeps serving', async () => {
    // Three legacy contents: about 180 kB of JSON, over the 150 kB cap.
    const answer = await post(contentPages(author.id, 1, 3));
    expect(answer.status).toBe(400);
    expect(answer.body.data).toBeUndefined();
    expect(answer.body.errors).toHaveLength(1);
    expect(answer.body.errors[0].extensions).toMatchObject({ code: 'RESPONSE_TOO_LARGE', max: RESPONSE_MAX_BYTES });
    expect(answer.body.errors[0].extensions.actual).toBeGreaterThan(RESPONSE_MAX_BYTES);
    expect(answer.body.errors[0].message).toContain(String(RESPONSE_MAX_BYTES));
    expect(answer.bytes).toBeLessThan(1000);
    // Two fit, and so does the next request.
    const two = await post(contentPages(author.id, 1, 2));
    expect(two.status).toBe(200);
    expect(two.body.data.user.b0.edges).toHaveLength(2);
    expect(ok(await app.gql('{ __typename }')).__typename).toBe('Query');
  });

  it('applies to GET requests too', async () => {
    const query = encodeURIComponent(contentPages(author.id, 1, 3));
    const response = await fetch(`${app.url}?query=${query}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as any).errors[0].extensions.code).toBe('RESPONSE_TOO_LARGE');
  });
});

describe('control characters in blog text', () => {
  const publishBlog = (title: string, content: string, images: string[] = []) =>
    app.gql(
      'mutation($i: PublishBlogInput!) { publishBlog(input: $i) { id title content images } }',
      { i: { title, content, images } },
      author.token,
    );

  it.each([
    ['title', 'a \u0007 bell', 'fine', 'U+0007'],
    ['content', 'fine', 'a null \u0000 in the text', 'U+0000'],
    ['content', 'fine', 'a carriage return\r\nin the text', 'U+000D'],
    ['content', 'fine', 'an escape \u001b[31m red', 'U+001B'],
    ['content', 'fine', 'a delete \u007f', 'U+007F'],
    ['title', 'a C1 \u0085 next line', 'fine', 'U+0085'],
    ['content', 'fine', 'a C1 \u009f', 'U+009F'],
  ])('refuses a %s holding a control character (%j, %j) naming it', async (field, title, content, codePoint) => {
    const response = await publishBlog(title, content);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors![0].extensions!.field).toBe(field);
    expect(response.errors![0].message).toContain(codePoint);
  });

  it('refuses control characters in image URLs', async () => {
    const response = await publishBlog('fine', 'fine', ['https://img.example/a.png', 'https://img.example/\tb.png']);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors![0].extensions!.field).toBe('images[1]');
  });

  it('takes newlines and tabs, and every other character', async () => {
    const content =
      'line one\nline two\n\tindented \u00a0 non-breaking, \u2028 line separator, emoji \u{1F600}, accents \u00e9';
    const blog = ok(await publishBlog('tab\there', content)).publishBlog;
    expect(blog.content).toBe(content);
    expect(blog.title).toBe('tab\there');
  });
});
