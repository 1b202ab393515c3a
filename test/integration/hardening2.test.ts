/**
 * Hardening II: input and cache rules (nickName limits after NFKC, loader caches a mutation made
 * stale), sign-up and readiness with Redis away, MySQL that is too slow, and the purge of
 * finished fan-out bookkeeping.
 */
import { Connection, createConnection } from 'mysql2/promise';
import { fromGlobalId } from '../../src/kernel/global-id';
import { withTimeout } from '../../src/kernel/timeout';
import { errorCode, follow, MYSQL_URL, ok, publish, scrollFeed, signUp, startTestApp, TestApp, testDatabase } from '../support/harness';

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

describe('MySQL too slow', () => {
  let app: TestApp;
  let locker: Connection;
  beforeAll(async () => {
    app = await startTestApp('mysql_slow', { env: { DATABASE_STATEMENT_TIMEOUT_MS: '1000', DATABASE_POOL_SIZE: '2' } });
    locker = await createConnection({ uri: `${MYSQL_URL}/${testDatabase('mysql_slow')}` });
  });
  afterAll(async () => {
    await locker.end();
    await app.close();
  });

  it('stops a statement at DATABASE_STATEMENT_TIMEOUT_MS with SERVICE_UNAVAILABLE, changing nothing', async () => {
    const author = await signUp(app, 'author');
    const fan = await signUp(app, 'fan');
    const blog = await publish(app, author, 'locked');
    const blogId = Number(fromGlobalId(blog).id);
    // The test holds the blog row's lock: the like's counter update waits for it.
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM tb_blog WHERE id = ? FOR UPDATE', [blogId]);
    const started = performance.now();
    const response = await app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount } }', { b: blog }, fan.token);
    const waited = performance.now() - started;
    await locker.query('ROLLBACK');
    expect(errorCode(response)).toBe('SERVICE_UNAVAILABLE');
    expect(response.errors![0].message).toMatch(/too slow/);
    // Stopped by the limit (1 s), not by InnoDB's 50 s lock wait timeout.
    expect(waited).toBeLessThan(10_000);
    const [{ n }] = await app.query('SELECT COUNT(*) AS n FROM tb_blog_like');
    expect(Number(n)).toBe(0);
    // The pool's connections came back: the same like now succeeds.
    expect(ok(await app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount } }', { b: blog }, fan.token)).likeBlog.likeCount).toBe(1);
  });
});

describe('in-process fan-out workers and the API pool', () => {
  let app: TestApp;
  let locker: Connection;
  beforeAll(async () => {
    // No statement limit here: a stuck worker statement would hold its connection for ever.
    app = await startTestApp('worker_pool', { env: { DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_POOL_SIZE: '2', FANOUT_CONCURRENCY: '8' } });
    locker = await createConnection({ uri: `${MYSQL_URL}/${testDatabase('worker_pool')}` });
  });
  afterAll(async () => {
    await locker.end();
    await app.close();
  });

  it("keeps the API's pool for the API while the in-process fan-out workers are stuck", async () => {
    const author = await signUp(app, 'writer');
    const reader = await signUp(app, 'reader');
    await follow(app, reader, author);
    const before = await publish(app, author, 'before');
    await app.services.fanout?.idle();
    // Every dispatch now waits for the chunk table: the workers' connections (and more jobs
    // than a pool of 2 holds) are stuck until UNLOCK (or fail at the statement limit, and are
    // retried).
    await locker.query('LOCK TABLES tb_fanout_chunk WRITE');
    const during: string[] = [];
    try {
      for (let i = 0; i < 4; i += 1) during.unshift(await publish(app, author, `during ${i}`));
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The API still has its connections: pages and likes answer (with a shared pool they
      // would wait for the workers' connections until UNLOCK).
      const page = ok(await withTimeout(app.gql('query { followFeed(first: 10) { edges { node { id } } } }', {}, reader.token), 5000, 'a feed page'));
      expect(page.followFeed.edges.length).toBeGreaterThanOrEqual(1);
      ok(await withTimeout(app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount } }', { b: before }, reader.token), 5000, 'a like'));
      const [{ stuck }] = await app.query("SELECT COUNT(*) AS stuck FROM tb_fanout_task WHERE status <> 'done'");
      expect(Number(stuck)).toBeGreaterThan(0);
    } finally {
      await locker.query('UNLOCK TABLES');
    }
    await app.services.fanout?.idle(60_000);
    expect(await scrollFeed(app, reader, 10)).toEqual([...during, before]);
  });
});
