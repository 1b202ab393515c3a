/**
 * Fan-out across real process and server failures:
 * - a worker process SIGKILLed in the middle of a 20,000-follower fan-out, then started again;
 * - publishing while the queue's Redis is down (a redis-server of this test's own, stopped).
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import {
  addFollowers,
  follow,
  inboxScores,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
} from '../../support/harness';
import { freePort, PrivateRedis, startWorkerProcess, waitFor } from '../../support/processes';

describe('a worker killed mid-fan-out', () => {
  let app: TestApp;
  beforeAll(async () => {
    // API only: the fan-out runs in worker processes that the test starts and kills.
    // 20,000 inboxes are written and read back in bulk: on a loaded CI machine a pipelined batch can
    // wait longer than the 300 ms default command timeout, which is not what this test is about.
    app = await startTestApp('fanout_kill', { env: { FANOUT_WORKERS: '0', REDIS_COMMAND_TIMEOUT_MS: '5000' } });
  });
  afterAll(() => app.close());

  it('resumes after a restart: every follower gets the blog exactly once, and few chunks are redone', async () => {
    const author = await signUp(app, 'big');
    const followers = await addFollowers(app, author, 100_001, 20_000);
    const workerEnv = {
      ...app.env,
      FANOUT_CHUNK_SIZE: '500', // 40 chunks
      FANOUT_JOBS_PER_SECOND: '20', // about 2 s of work, so there is a middle to kill it in
      FANOUT_CONCURRENCY: '4',
      FANOUT_LOCK_MS: '1500', // the killed worker's jobs are retried 1.5 s after its death
    };
    const first = startWorkerProcess(workerEnv);
    const id = await publish(app, author, 'to twenty thousand');
    const blogDbId = fromGlobalId(id).id;
    const progress = async () =>
      (
        await app.db.query(
          "SELECT chunks_total, chunks_done, status FROM tb_fanout_task WHERE blog_id = ? AND kind = 'deliver'",
          [blogDbId],
        )
      )[0];
    await waitFor('a few chunks done', async () => (await progress())?.chunks_done >= 8, 30_000);
    expect(await first.kill('SIGKILL')).toBeNull();
    const atKill = await progress();
    expect(atKill.status).not.toBe('done');
    expect(atKill.chunks_done).toBeLessThan(40);

    const second = startWorkerProcess(workerEnv);
    try {
      await waitFor('the fan-out to finish', async () => (await progress())?.status === 'done', 60_000);
    } finally {
      expect(await second.kill('SIGTERM')).toBe(0);
    }
    const [blog] = await app.db.query('SELECT created_at FROM tb_blog WHERE id = ?', [blogDbId]);
    const scores = await inboxScores(app, followers, id);
    expect(scores.filter((score) => score === String(blog.created_at.getTime()))).toHaveLength(20_000);
    // A sorted set holds a member once; check that no other entry crept in either.
    const sizes = await Promise.all(followers.slice(0, 2000).map((reader) => app.redis.zcard(app.keys.feed(reader))));
    expect(new Set(sizes)).toEqual(new Set([1 + 1])); // the blog and the inbox's sentinel
    const [runs] = await app.db.query(
      'SELECT COUNT(*) AS chunks, SUM(runs) AS runs FROM tb_fanout_chunk c JOIN tb_fanout_task t ON t.id = c.task_id WHERE t.blog_id = ?',
      [blogDbId],
    );
    const redone = Number(runs.runs) - Number(runs.chunks);
    expect(Number(runs.chunks)).toBe(40);
    expect(redone).toBeLessThan(40 - atKill.chunks_done);
  });
});

describe('publishing while the queue Redis is down', () => {
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    // Persistent: the inboxes outlive the outage, as with any production Redis that persists.
    redis = new PrivateRedis(await freePort(), true);
    await redis.start();
    // A stopped Redis refuses connections, so its commands fail at once whatever the timeout; the
    // suite's 5 s (harness.ts, SUITE_REDIS_TIMEOUT_MS) keeps the check of 1,503 inboxes after it is
    // back from timing out on a loaded CI machine (it did once at the production 300 ms, on Node 24).
    app = await startTestApp('fanout_redis_down', { env: { REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT_MS: '5000' } });
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it('succeeds, and every follower gets the blog once Redis is back', async () => {
    const author = await signUp(app, 'author');
    const fans = [];
    for (let i = 0; i < 3; i += 1) {
      const fan = await signUp(app, `fan${i}`);
      await follow(app, fan, author);
      fans.push(fan);
    }
    const others = await addFollowers(app, author, 200_001, 1500);
    await redis.stop();
    const id = await publish(app, author, 'published in the dark');
    const [task] = await app.db.query('SELECT status FROM tb_fanout_task WHERE blog_id = ?', [fromGlobalId(id).id]);
    expect(task.status).toBe('pending');
    await redis.start();
    await app.services.fanout?.idle(60_000);
    const readers = [...fans.map((fan) => fromGlobalId(fan.id).id), ...others];
    expect((await inboxScores(app, readers, id)).filter((score) => score !== null)).toHaveLength(readers.length);
    for (const fan of fans) expect((await scrollFeed(app, fan, 10))[0]).toBe(id);
  });
});
