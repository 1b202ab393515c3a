/**
 * Hardening II: input and cache rules (nickName limits after NFKC, loader caches a mutation made
 * stale), sign-up and readiness with Redis away, MySQL that is too slow, and the purge of
 * finished fan-out bookkeeping.
 */
import { errorCode, follow, ok, publish, signUp, startTestApp, TestApp } from '../support/harness';
import { freePort, PrivateRedis } from '../support/processes';

const SIGN_UP = 'mutation($n: String!, $p: String!) { signUp(nickName: $n, password: $p) { token user { id nickName } } }';

describe('nickName limits after normalisation', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('nick_nfkc');
  });
  afterAll(() => app.close());

  it('refuse a short nickName whose NFKC form outgrows the key column, naming the limit', async () => {
    // U+FDFA is one character that NFKC expands to 18: 8 of them are 144 > 128.
    const nickName = '\uFDFA'.repeat(8);
    const response = await app.gql(SIGN_UP, { n: nickName, p: 'password-123' });
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors![0].extensions!.field).toBe('nickName');
    expect(response.errors![0].message).toMatch(/at most 128 characters once normalised.*got 144/);
    const [{ n }] = await app.query('SELECT COUNT(*) AS n FROM tb_user');
    expect(Number(n)).toBe(0);
    // Login with it is the ordinary wrong-credentials answer, not a server error.
    const login = await app.gql('mutation($n: String!) { login(nickName: $n, password: "password-123") { token } }', { n: nickName });
    expect(errorCode(login)).toBe('UNAUTHENTICATED');
  });

  it('accept one whose key is exactly at the limit', async () => {
    // 7 x 18 + 2 = 128 characters after NFKC.
    const user = await signUp(app, `${'\uFDFA'.repeat(7)}ab`);
    ok(await app.gql('mutation($n: String!) { login(nickName: $n, password: "password-123") { token } }', { n: user.nickName }));
  });
});

describe('loader caches after a mutation', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('stale_loaders');
  });
  afterAll(() => app.close());

  it('follow then unfollow in one document answer each its own state', async () => {
    const reader = await signUp(app, 'reader');
    const author = await signUp(app, 'author');
    const data = ok(
      await app.gql(
        `mutation($u: ID!) {
          on: follow(userId: $u) { isFollowedByViewer followerCount }
          off: follow(userId: $u, follow: false) { isFollowedByViewer followerCount }
          again: follow(userId: $u) { isFollowedByViewer followerCount }
        }`,
        { u: author.id },
        reader.token,
      ),
    );
    expect(data).toEqual({
      on: { isFollowedByViewer: true, followerCount: 1 },
      off: { isFollowedByViewer: false, followerCount: 0 },
      again: { isFollowedByViewer: true, followerCount: 1 },
    });
  });

  it('like then unlike in one document answer each its own state', async () => {
    const author = await signUp(app, 'writer');
    const fan = await signUp(app, 'fan');
    const blog = await publish(app, author, 'liked');
    const data = ok(
      await app.gql(
        `mutation($b: ID!) {
          on: likeBlog(blogId: $b) { isLiked likeCount }
          off: likeBlog(blogId: $b, liked: false) { isLiked likeCount }
          again: likeBlog(blogId: $b) { isLiked likeCount author { nickName } }
        }`,
        { b: blog },
        fan.token,
      ),
    );
    expect(data).toEqual({
      on: { isLiked: true, likeCount: 1 },
      off: { isLiked: false, likeCount: 0 },
      again: { isLiked: true, likeCount: 1, author: { nickName: 'writer' } },
    });
  });
});
