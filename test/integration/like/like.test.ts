/** likeBlog: idempotent, exact under concurrency, and isLiked per viewer. */
import { fromGlobalId } from '../../../src/kernel/global-id';
import { errorCode, ok, publish, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';

const LIKE = 'mutation($b: ID!, $l: Boolean!) { likeBlog(blogId: $b, liked: $l) { id likeCount isLiked } }';
const BLOG = 'query($b: ID!) { blog(id: $b) { likeCount isLiked } }';

let app: TestApp;
let author: TestUser;
let blogId: string;

beforeAll(async () => {
  app = await startTestApp('like');
  author = await signUp(app, 'author');
  blogId = await publish(app, author, 'likeable');
});
afterAll(() => app.close());

async function counts(id: string): Promise<{ column: number; rows: number }> {
  const dbId = fromGlobalId(id).id;
  const [blog] = await app.query('SELECT liked FROM tb_blog WHERE id = ?', [dbId]);
  const [likes] = await app.query('SELECT COUNT(*) AS n FROM tb_blog_like WHERE blog_id = ?', [dbId]);
  return { column: Number(blog.liked), rows: Number(likes.n) };
}

it('is idempotent both ways', async () => {
  const fan = await signUp(app, 'fan');
  const like = (liked: boolean) => app.gql(LIKE, { b: blogId, l: liked }, fan.token);
  expect(ok(await like(true)).likeBlog).toMatchObject({ likeCount: 1, isLiked: true });
  expect(ok(await like(true)).likeBlog).toMatchObject({ likeCount: 1, isLiked: true });
  expect(ok(await app.gql(BLOG, { b: blogId }, fan.token)).blog).toEqual({ likeCount: 1, isLiked: true });
  expect(ok(await app.gql(BLOG, { b: blogId }, author.token)).blog).toEqual({ likeCount: 1, isLiked: false });
  expect(ok(await app.gql(BLOG, { b: blogId })).blog).toEqual({ likeCount: 1, isLiked: false });
  expect(ok(await like(false)).likeBlog).toMatchObject({ likeCount: 0, isLiked: false });
  expect(ok(await like(false)).likeBlog).toMatchObject({ likeCount: 0, isLiked: false });
  expect(await counts(blogId)).toEqual({ column: 0, rows: 0 });
});

it('defaults liked to true', async () => {
  const fan = await signUp(app, 'defaulter');
  const data = ok(await app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { isLiked } }', { b: blogId }, fan.token));
  expect(data.likeBlog.isLiked).toBe(true);
  ok(await app.gql(LIKE, { b: blogId, l: false }, fan.token));
});

it('keeps the count exact when many users like and unlike at once', async () => {
  const id = await publish(app, author, 'contested');
  const users: TestUser[] = [];
  for (let i = 0; i < 40; i += 1) users.push(await signUp(app, `crowd${i}`));
  // Everyone likes twice at the same time (double clicks included).
  await Promise.all(users.flatMap((user) => [true, true].map((l) => app.gql(LIKE, { b: id, l }, user.token))));
  expect(await counts(id)).toEqual({ column: 40, rows: 40 });
  // Half unlike (twice each) while the other half like again, all at once.
  const responses = await Promise.all(
    users.flatMap((user, i) => [0, 1].map(() => app.gql(LIKE, { b: id, l: i % 2 === 0 }, user.token))),
  );
  for (const response of responses) ok(response);
  expect(await counts(id)).toEqual({ column: 20, rows: 20 });
  const data = ok(await app.gql(BLOG, { b: id }, users[0].token));
  expect(data.blog).toEqual({ likeCount: 20, isLiked: true });
});

describe('bad input', () => {
  it('needs a viewer', async () => {
    expect(errorCode(await app.gql(LIKE, { b: blogId, l: true }))).toBe('UNAUTHENTICATED');
  });

  it('rejects unknown, malformed and wrong-type ids, changing nothing', async () => {
    const fan = await signUp(app, 'prober');
    const before = await counts(blogId);
    const unknown = Buffer.from('Blog:987654').toString('base64');
    expect(errorCode(await app.gql(LIKE, { b: unknown, l: true }, fan.token))).toBe('NOT_FOUND');
    expect(errorCode(await app.gql(LIKE, { b: 'nonsense', l: true }, fan.token))).toBe('BAD_USER_INPUT');
    expect(errorCode(await app.gql(LIKE, { b: author.id, l: true }, fan.token))).toBe('BAD_USER_INPUT');
    expect(await counts(blogId)).toEqual(before);
  });

  it('cannot like a deleted blog', async () => {
    const fan = await signUp(app, 'late');
    const id = await publish(app, author, 'short-lived');
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: id }, author.token));
    expect(errorCode(await app.gql(LIKE, { b: id, l: true }, fan.token))).toBe('NOT_FOUND');
    expect(await counts(id)).toEqual({ column: 0, rows: 0 });
  });
});
