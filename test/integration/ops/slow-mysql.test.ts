/**
 * MySQL too slow: DATABASE_STATEMENT_TIMEOUT_MS stops a statement, and stuck in-process fan-out
 * workers leave the API its own pool.
 */
import { Connection, createConnection } from 'mysql2/promise';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { withTimeout } from '../../../src/kernel/timeout';
import {
  errorCode,
  follow,
  MYSQL_URL,
  ok,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  testDatabase,
} from '../../support/harness';

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
    expect(
      ok(await app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount } }', { b: blog }, fan.token)).likeBlog
        .likeCount,
    ).toBe(1);
  });
});
describe('in-process fan-out workers and the API pool', () => {
  let app: TestApp;
  let locker: Connection;
  beforeAll(async () => {
    // No statement limit here: a stuck worker statement would hold its connection for ever.
    // Chunks of one follower: with two followers every dispatch records chunks (a task of one
    // chunk runs it in its dispatch and records none), so it needs the chunk table.
    app = await startTestApp('worker_pool', {
      env: {
        DATABASE_STATEMENT_TIMEOUT_MS: '0',
        DATABASE_POOL_SIZE: '2',
        FANOUT_CONCURRENCY: '8',
        FANOUT_CHUNK_SIZE: '1',
      },
    });
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
    await follow(app, await signUp(app, 'second-reader'), author);
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
      const page = ok(
        await withTimeout(
          app.gql('query { followFeed(first: 10) { edges { node { id } } } }', {}, reader.token),
          5000,
          'a feed page',
        ),
      );
      expect(page.followFeed.edges.length).toBeGreaterThanOrEqual(1);
      ok(
        await withTimeout(
          app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount } }', { b: before }, reader.token),
          5000,
          'a like',
        ),
      );
      const [{ stuck }] = await app.query("SELECT COUNT(*) AS stuck FROM tb_fanout_task WHERE status <> 'done'");
      expect(Number(stuck)).toBeGreaterThan(0);
    } finally {
      await locker.query('UNLOCK TABLES');
    }
    await app.services.fanout?.idle(60_000);
    expect(await scrollFeed(app, reader, 10)).toEqual([...during, before]);
  });
});
