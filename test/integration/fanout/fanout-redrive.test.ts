/**
 * No fan-out event is stranded: an outage longer than a job's whole backoff leaves its job in
 * BullMQ's failed set, and the relay drives the task again once the outage ends, dispatch and
 * chunk jobs alike. And finished tasks are purged after FANOUT_RETENTION_DAYS.
 */
import { Connection, createConnection } from 'mysql2/promise';
import { createFeedService } from '../../../src/composition';
import { MysqlDatabase, SqlStatementLog } from '../../../src/db/database';
import { MysqlPool } from '../../../src/db/mysql';
import { FanoutPurger, PURGE_BATCH } from '../../../src/fanout/fanout.purge';
import { FanoutQueue } from '../../../src/fanout/fanout.queue';
import { FanoutStore } from '../../../src/fanout/fanout.store';
import { FanoutWorkers } from '../../../src/fanout/fanout.worker';
import { fromGlobalId } from '../../../src/kernel/global-id';
import {
  addFollowers,
  inboxScores,
  MYSQL_URL,
  publish,
  signUp,
  startTestApp,
  TestApp,
  testDatabase,
} from '../../support/harness';
import { TcpProxy, waitFor } from '../../support/processes';

describe('a fan-out job that used up its attempts', () => {
  let app: TestApp;
  let proxy: TcpProxy;
  let workerDb: MysqlDatabase;
  let workerQueue: FanoutQueue;
  let workers: FanoutWorkers;
  let locker: Connection;
  const warnings: string[] = [];

  beforeAll(async () => {
    // Two attempts 50 ms apart: the whole backoff is over long before the outage is.
    app = await startTestApp('fanout_redrive', {
      env: {
        FANOUT_WORKERS: '0',
        FEED_MODEL: 'push',
        FANOUT_CHUNK_SIZE: '10',
        FANOUT_JOB_ATTEMPTS: '2',
        FANOUT_JOB_BACKOFF_MS: '50',
        FANOUT_REDRIVE_AFTER_MS: '1000',
        DATABASE_STATEMENT_TIMEOUT_MS: '1000',
      },
    });
    // The worker reaches MySQL through a proxy that the test cuts; the API does not.
    const mysql = new URL(MYSQL_URL);
    proxy = new TcpProxy(mysql.hostname, Number(mysql.port || 3306));
    await proxy.start();
    const behindProxy = new URL(MYSQL_URL);
    behindProxy.port = String(proxy.port);
    workerDb = new MysqlPool(
      `${behindProxy.toString().replace(/\/$/, '')}/${testDatabase('fanout_redrive')}`,
      { poolSize: 4, statementTimeoutMs: 1000 },
      new SqlStatementLog(console),
    );
    workerQueue = new FanoutQueue(app.config);
    const warn = (message: string) => warnings.push(message);
    const store = new FanoutStore(workerDb, () => new Date());
    const feed = createFeedService(app.config, workerDb, app.redis, { warn, inFlight: store });
    workers = new FanoutWorkers({ config: app.config, store, feed, queue: workerQueue, warn });
    workers.start(1);
    locker = await createConnection({ uri: `${MYSQL_URL}/${testDatabase('fanout_redrive')}` });
  });
  afterAll(async () => {
    proxy.unblock();
    await locker.end();
    await app.close();
    await workers.stop();
    await workerQueue.close();
    await workerDb.close();
    await proxy.stop();
  });

  const jobState = (id: string) => app.services.fanoutQueue!.queue.getJobState(id);

  it('runs again when the outage ends: every follower is served and the task finishes', async () => {
    const author = await signUp(app, 'author');
    const followers = await addFollowers(app, author, 1000, 30);

    // 1. MySQL is unreachable for the worker: the dispatch job uses up its attempts.
    proxy.block();
    const blog = await publish(app, author, 'through an outage');
    const [{ id: taskId }] = await app.query<{ id: string }>('SELECT MAX(id) AS id FROM tb_fanout_task');
    await waitFor(
      'the dispatch job to fail for good',
      async () => (await jobState(`dispatch-${taskId}`)) === 'failed',
      15_000,
    );
    // The worker says so in its 'failed' handler, which runs a moment after the state is written.
    await waitFor(
      'the warning that it failed for good',
      async () => warnings.some((message) => message.includes(`fan-out job dispatch-${taskId} failed for good`)),
      5_000,
    );

    // 2. When MySQL is back, the test holds the blog row: the chunks deliver, but cannot record
    // that they finished, and use up their attempts too.
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM tb_blog WHERE id = ? FOR UPDATE', [fromGlobalId(blog).id]);
    proxy.unblock();
    try {
      await waitFor(
        'the relay to drive the dispatch again',
        async () => (await inboxScores(app, followers, blog)).every((score) => score !== null),
        20_000,
      );
      await waitFor(
        'a chunk job to fail for good',
        async () => (await jobState(`chunk-${taskId}-1`)) === 'failed',
        20_000,
      );
    } finally {
      await locker.query('ROLLBACK');
    }

    // 3. The relay drives the task once more; its dispatcher drives the failed chunks.
    await app.services.fanout?.idle(30_000);
    const [task] = await app.query('SELECT status, chunks_total, chunks_done FROM tb_fanout_task WHERE id = ?', [
      taskId,
    ]);
    expect(task).toEqual({ status: 'done', chunks_total: 3, chunks_done: 3 });
    const chunks = await app.query('SELECT runs, finished_at FROM tb_fanout_chunk WHERE task_id = ? ORDER BY seq', [
      taskId,
    ]);
    expect(chunks.every((chunk) => chunk.finished_at !== null)).toBe(true);
    // Counted: the retries of step 2 and the run that finished it (a job's first run counts
    // itself only at its finish, so the first run of step 2, which failed, is not).
    expect(Math.max(...chunks.map((chunk) => Number(chunk.runs)))).toBeGreaterThanOrEqual(2);
    expect((await inboxScores(app, followers, blog)).filter((score) => score === null)).toEqual([]);
  });
});

describe('the purge of finished fan-out tasks', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('fanout_purge', { env: { FANOUT_WORKERS: '0', FANOUT_RETENTION_DAYS: '7' } });
  });
  afterAll(() => app.close());

  it('deletes tasks finished more than FANOUT_RETENTION_DAYS ago with their chunks, in batches, and keeps the rest', async () => {
    const day = 86_400_000;
    const now = Date.now();
    const old = new Date(now - 8 * day);
    const recent = new Date(now - 6 * day);
    // More old finished tasks than one batch, each with two chunks; plus a recent finished one
    // and an old unfinished one, which must stay.
    const oldCount = PURGE_BATCH * 2 + 500;
    const tasks: unknown[][] = Array.from({ length: oldCount }, (_, i) => [
      i + 1,
      'deliver',
      1,
      1,
      1,
      'done',
      old,
      old,
    ]);
    tasks.push(
      [oldCount + 1, 'deliver', 1, 1, 1, 'done', recent, recent],
      [oldCount + 2, 'deliver', 1, 1, 1, 'queued', old, null],
    );
    await app.db.query(
      'INSERT INTO tb_fanout_task (id, kind, blog_id, author_id, score, status, created_at, finished_at) VALUES ?',
      [tasks],
    );
    const chunks = tasks.flatMap(([id]) => [
      [id, 1, 0, 1, 1],
      [id, 2, 1, 2, 1],
    ]);
    await app.db.query('INSERT INTO tb_fanout_chunk (task_id, seq, after_user_id, through_user_id, runs) VALUES ?', [
      chunks,
    ]);

    const purger = new FanoutPurger({
      store: new FanoutStore(app.mysql, () => new Date()),
      retentionDays: app.config.fanoutRetentionDays,
      now: () => new Date(now),
      warn: () => {},
    });
    expect(await purger.purgeOnce()).toBe(oldCount);
    const left = await app.query('SELECT id FROM tb_fanout_task ORDER BY id');
    expect(left.map((row) => Number(row.id))).toEqual([oldCount + 1, oldCount + 2]);
    const [{ n }] = await app.query('SELECT COUNT(*) AS n FROM tb_fanout_chunk');
    expect(Number(n)).toBe(4);
    // A second pass finds nothing more; two days later the recent one goes too.
    expect(await purger.purgeOnce()).toBe(0);
    const later = new FanoutPurger({
      store: new FanoutStore(app.mysql, () => new Date()),
      retentionDays: 7,
      now: () => new Date(now + 2 * day),
      warn: () => {},
    });
    expect(await later.purgeOnce()).toBe(1);
    expect((await app.query('SELECT id FROM tb_fanout_task')).map((row) => Number(row.id))).toEqual([oldCount + 2]);
  });
});
