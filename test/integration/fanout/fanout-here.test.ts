/**
 * A publish's fan-out dispatched in the process that committed it (FanoutWorkers.dispatchHere,
 * where that process runs workers): a task whose followers fit in one chunk is delivered and
 * finished there, with no dispatch job added to the queue; a bigger one is queued as before; one
 * whose dispatch fails there is handed to the queue; and one that the process took but never
 * finished (it died) is queued by the relay.
 */
import { createFeedService } from '../../../src/composition';
import { MysqlPool } from '../../../src/db/mysql';
import { SqlStatementLog } from '../../../src/db/database';
import type { FanoutQueue } from '../../../src/fanout/fanout.queue';
import { FanoutService } from '../../../src/fanout/fanout.service';
import { FanoutStore } from '../../../src/fanout/fanout.store';
import { FanoutWorkers } from '../../../src/fanout/fanout.worker';
import { fromGlobalId } from '../../../src/kernel/global-id';
import {
  addFollowers,
  FEED_PAGE,
  follow,
  inboxScores,
  MYSQL_URL,
  ok,
  publish,
  signUp,
  startTestApp,
  TestApp,
  testDatabase,
} from '../../support/harness';
import { waitFor } from '../../support/processes';

const CHUNK = 20;
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('fanout_here', { env: { FEED_MODEL: 'push', FANOUT_CHUNK_SIZE: String(CHUNK) } });
});
afterAll(() => app.close());

async function taskOf(blogId: string): Promise<{ id: number; status: string; chunks_total: number }> {
  const [task] = await app.db.query('SELECT id, status, chunks_total FROM tb_fanout_task WHERE blog_id = ?', [
    fromGlobalId(blogId).id,
  ]);
  return { id: Number(task.id), status: task.status, chunks_total: Number(task.chunks_total) };
}

/** The dispatch jobs added to the queue for these tasks (BullMQ's event stream keeps every "added"). */
async function dispatchJobsAdded(taskIds: number[]): Promise<string[]> {
  const queue = app.services.fanoutQueue!.queue;
  const entries = await app.redis.xrange(queue.toKey('events'), '-', '+');
  const wanted = new Set(taskIds.map((id) => `dispatch-${id}`));
  return entries
    .map(([, fields]) =>
      Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : []))),
    )
    .filter((event) => event.event === 'added' && wanted.has(event.jobId))
    .map((event) => event.jobId);
}

/** A pool of the test's database that adds the first `width` characters of each statement it runs to `statements`. */
function loggingPool(statements: string[], width: number, poolSize: number): MysqlPool {
  const log = new SqlStatementLog(console);
  log.ran = (statement) => void statements.push(statement.replace(/\s+/g, ' ').slice(0, width));
  return new MysqlPool(`${MYSQL_URL}/${testDatabase('fanout_here')}`, { poolSize, statementTimeoutMs: 0 }, log);
}

async function expectDelivered(followers: number[], blogId: string): Promise<void> {
  const [blog] = await app.db.query('SELECT created_at FROM tb_blog WHERE id = ?', [fromGlobalId(blogId).id]);
  expect(new Set(await inboxScores(app, followers, blogId))).toEqual(new Set([String(blog.created_at.getTime())]));
}

it('delivers a task of one chunk in the publishing process, without a dispatch job', async () => {
  const author = await signUp(app, 'small');
  const followers = await addFollowers(app, author, 1000, CHUNK);
  const blogId = await publish(app, author, 'one chunk');
  await app.services.fanout!.idle();
  const task = await taskOf(blogId);
  expect(task).toMatchObject({ status: 'done', chunks_total: 1 });
  await expectDelivered(followers, blogId);
  expect(await dispatchJobsAdded([task.id])).toEqual([]);
});

it('finishes a task of an author without followers here in two statements: the read of followers, one write', async () => {
  const loner = await signUp(app, 'loner');
  // Recorded as a publish records it, dispatched here by workers whose pool logs every statement.
  const blogId = fromGlobalId(await publish(app, loner, 'anyone?')).id;
  const statements: string[] = [];
  const pool = loggingPool(statements, 40, 1);
  try {
    const store = new FanoutStore(pool, () => new Date());
    const taskId = await pool.transaction((sql) =>
      store.insertTask(sql, 'deliver', { blogId, authorId: fromGlobalId(loner.id).id, score: 1 }),
    );
    const feed = createFeedService(app.config, pool, app.redis, { warn: () => {}, inFlight: store });
    const workers = new FanoutWorkers({
      config: app.config,
      store,
      feed,
      queue: app.services.fanoutQueue!,
      warn: () => {},
    });
    statements.length = 0;
    const fresh = {
      kind: 'deliver' as const,
      blogId,
      authorId: fromGlobalId(loner.id).id,
      score: 1,
      queuedAt: Date.now(),
    };
    expect(await workers.dispatchHere({ taskId, fresh })).toBeNull();
    expect(statements).toEqual([
      'SELECT follow_user_id, user_id FROM tb_f',
      'UPDATE tb_fanout_task SET dispatched = T',
    ]);
    const [task] = await app.db.query('SELECT status, dispatched, chunks_total FROM tb_fanout_task WHERE id = ?', [
      taskId,
    ]);
    expect(task).toEqual({ status: 'done', dispatched: 1, chunks_total: 0 });
  } finally {
    await pool.close();
  }
});

it('queues a task of more followers than a chunk, whose job records its chunks', async () => {
  const author = await signUp(app, 'bigger');
  const followers = await addFollowers(app, author, 2000, CHUNK + 1);
  const blogId = await publish(app, author, 'two chunks');
  await app.services.fanout!.idle();
  const task = await taskOf(blogId);
  expect(task).toMatchObject({ status: 'done', chunks_total: 2 });
  await expectDelivered(followers, blogId);
  expect(await dispatchJobsAdded([task.id])).toEqual([`dispatch-${task.id}`]);
});

it('hands a task whose dispatch failed here to the queue, to be read again', async () => {
  // Workers whose MySQL pool is closed: the dispatch's first read fails.
  const closed = new MysqlPool(
    `${MYSQL_URL}/${testDatabase('fanout_here')}`,
    { poolSize: 1, statementTimeoutMs: 0 },
    new SqlStatementLog(console),
  );
  await closed.close();
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);
  const store = new FanoutStore(closed, () => new Date());
  const feed = createFeedService(app.config, closed, app.redis, { warn, inFlight: store });
  const workers = new FanoutWorkers({ config: app.config, store, feed, queue: app.services.fanoutQueue!, warn });
  const fresh = { kind: 'deliver' as const, blogId: 1, authorId: 1, score: Date.now(), queuedAt: Date.now() };
  expect(await workers.dispatchHere({ taskId: 424242, fresh })).toEqual({ taskId: 424242 });
  expect(warnings).toEqual([
    'fan-out task 424242 failed in the process that published it; it is queued for the workers',
  ]);
});

it('queues a task the workers here leave without waiting for the delivery of the ones beside it', async () => {
  // Task ids no row has: the queue is a recorder, and the marks of queued tasks change nothing.
  const [small, big] = [900_001, 900_002];
  const added: number[] = [];
  const queue = {
    add: async (jobs: Array<{ data: { taskId: number } }>) => {
      added.push(...jobs.map((job) => job.data.taskId));
    },
  } as unknown as FanoutQueue;
  const fanout = new FanoutService({ store: new FanoutStore(app.mysql, () => new Date()), queue, warn: () => {} });
  let release!: () => void;
  const delivering = new Promise<void>((resolve) => (release = resolve));
  fanout.runDispatchesHere(async (job) => (job.taskId === small ? delivering.then(() => null) : job));
  const blog = { dbId: 1, authorId: 1, score: Date.now() };
  // One turn of the event loop: one batch.
  fanout.enqueue(small, 'deliver', blog);
  fanout.enqueue(big, 'deliver', blog);
  await waitFor('the big task queued', async () => added.includes(big));
  release();
  await fanout.flush();
  expect(added).toEqual([big]);
});

it('a task the publishing process took and never finished (it died) is queued by the relay, and pages show it meanwhile', async () => {
  // As if the process died right after taking it: nothing done, nothing queued, nothing marked.
  app.services.fanout!.runDispatchesHere(async () => null);
  const author = await signUp(app, 'orphan');
  const reader = await signUp(app, 'orphanreader');
  await follow(app, reader, author);
  ok(await app.gql(FEED_PAGE, { first: 5 }, reader.token)); // the reader's inbox, built
  const followers = await addFollowers(app, author, 3000, 3);
  const blogId = await publish(app, author, 'taken and dropped');
  // Until the relay has queued it and a worker delivered it, the task stays in the fan-out
  // watermark: every page the reader reads meanwhile has the blog on top.
  let pages = 0;
  while ((await taskOf(blogId)).status !== 'done') {
    const page = ok(await app.gql(FEED_PAGE, { first: 5 }, reader.token));
    expect(page.followFeed.edges[0].node.id).toBe(blogId);
    pages += 1;
  }
  expect(pages).toBeGreaterThan(0);
  await app.services.fanout!.idle();
  const task = await taskOf(blogId);
  expect(task.status).toBe('done');
  await expectDelivered([...followers, fromGlobalId(reader.id).id], blogId);
  expect(await dispatchJobsAdded([task.id])).toEqual([`dispatch-${task.id}`]);
});

describe('the first followers of inline dispatches (FanoutStore.firstFollowerIds)', () => {
  it('reads the calls of one turn of the event loop in one statement, each author its own first followers', async () => {
    const statements: string[] = [];
    const pool = loggingPool(statements, 30, 2);
    try {
      const store = new FanoutStore(pool, () => new Date());
      const many = await signUp(app, 'first-many');
      const few = await signUp(app, 'first-few');
      const none = await signUp(app, 'first-none');
      await addFollowers(app, many, 4000, 7);
      await addFollowers(app, few, 4100, 2);
      const [manyId, fewId, noneId] = [many, few, none].map((user) => fromGlobalId(user.id).id);
      statements.length = 0;
      // A limit below the first author's followers: each part of the statement has its own.
      const read = await Promise.all([
        store.firstFollowerIds(manyId, 5),
        store.firstFollowerIds(fewId, 5),
        store.firstFollowerIds(noneId, 5),
        store.firstFollowerIds(manyId, 5),
      ]);
      expect(statements).toEqual(['(SELECT follow_user_id, user_i']);
      const alone = await Promise.all([manyId, fewId, noneId, manyId].map((id) => store.followerIdsAfter(id, 0, 5)));
      expect(read).toEqual(alone);
      expect(read).toEqual([[4000, 4001, 4002, 4003, 4004], [4100, 4101], [], [4000, 4001, 4002, 4003, 4004]]);
      // Another limit, or another turn, is another statement; one author alone is the plain keyset page.
      statements.length = 0;
      expect(await Promise.all([store.firstFollowerIds(manyId, 2), store.firstFollowerIds(fewId, 1)])).toEqual([
        [4000, 4001],
        [4100],
      ]);
      expect(await store.firstFollowerIds(fewId, 5)).toEqual([4100, 4101]);
      expect(statements).toEqual([
        'SELECT follow_user_id, user_id',
        'SELECT follow_user_id, user_id',
        'SELECT follow_user_id, user_id',
      ]);
    } finally {
      await pool.close();
    }
  });

  it('delivers the blogs of concurrent publishes, each to its own followers only', async () => {
    const authors = await Promise.all([0, 1, 2].map((i) => signUp(app, `together${i}`)));
    const followers = [];
    for (const [i, author] of authors.entries()) followers.push(await addFollowers(app, author, 4200 + 100 * i, 3 + i));
    const blogIds = await Promise.all(authors.map((author, i) => publish(app, author, `together ${i}`)));
    await app.services.fanout!.idle();
    for (const [i, blogId] of blogIds.entries()) {
      expect(await taskOf(blogId)).toMatchObject({ status: 'done', chunks_total: 1 });
      await expectDelivered(followers[i], blogId);
      // Nobody else's inbox got it: the followers of the other authors.
      const others = followers.filter((_, j) => j !== i).flat();
      expect(await inboxScores(app, others, blogId)).toEqual(others.map(() => null));
    }
  });
});

describe('the finish of inline dispatches (FanoutStore.finishUnchunked)', () => {
  /**
   * A FanoutStore whose pool logs the first words of every statement, and tasks of fresh blogs
   * (their own fan-out done), recorded last: the app's relay leaves a pending task alone for its
   * first 500 ms (RELAY_GRACE_MS), and each test is done with them well within that.
   */
  async function storeAndTasks(n: number) {
    const statements: string[] = [];
    const pool = loggingPool(statements, 30, 2);
    const store = new FanoutStore(pool, () => new Date());
    const author = await signUp(app, `finisher${n}${Math.floor(Math.random() * 1e6)}`);
    const authorId = fromGlobalId(author.id).id;
    const blogIds = [];
    for (let i = 0; i < n; i += 1) blogIds.push(fromGlobalId(await publish(app, author, `finish ${i}`)).id);
    await app.services.fanout!.idle();
    const tasks = [];
    for (const blogId of blogIds) {
      const id = await pool.transaction((sql) => store.insertTask(sql, 'deliver', { blogId, authorId, score: 1 }));
      tasks.push({ id, authorId, blogId, createdAt: new Date() });
    }
    statements.length = 0;
    return { store, pool, tasks, statements };
  }

  async function rowOf(taskId: number) {
    const [row] = await app.db.query('SELECT status, cursor_user_id, chunks_total FROM tb_fanout_task WHERE id = ?', [
      taskId,
    ]);
    return { status: row.status, cursor: Number(row.cursor_user_id), chunks: Number(row.chunks_total) };
  }

  it('finishes the calls of one turn of the event loop in one statement, each told that it finished its task', async () => {
    const { store, pool, tasks, statements } = await storeAndTasks(3);
    try {
      const finished = await Promise.all(tasks.map((task, i) => store.finishUnchunked(task, 100 + i, true)));
      expect(statements).toEqual(['UPDATE tb_fanout_task t FORCE ']);
      expect(finished.map((f) => f?.task)).toEqual(tasks.map((task) => ({ taskId: task.id, authorId: task.authorId })));
      for (const [i, task] of tasks.entries())
        expect(await rowOf(task.id)).toEqual({ status: 'done', cursor: 100 + i, chunks: 1 });
    } finally {
      await pool.close();
    }
  });

  it('tells each call of a turn whether it finished its task when some did not: a deleted blog, a done task, the same task twice', async () => {
    const { store, pool, tasks, statements } = await storeAndTasks(4);
    const [live, twice, deleted, done] = tasks;
    try {
      await app.db.query('UPDATE tb_blog SET deleted_at = NOW(3) WHERE id = ?', [deleted.blogId]);
      expect(await store.finishUnchunked(done, 7, true)).not.toBeNull();
      statements.length = 0;
      const finished = await Promise.all([
        store.finishUnchunked(live, 11, true),
        store.finishUnchunked(twice, 12, true),
        store.finishUnchunked(deleted, 13, true),
        store.finishUnchunked(done, 14, true),
        store.finishUnchunked(twice, 15, true),
      ]);
      const [liveDone, twiceFirst, deletedDone, doneAgain, twiceSecond] = finished.map((f) => f !== null);
      expect({ liveDone, deletedDone, doneAgain }).toEqual({ liveDone: true, deletedDone: false, doneAgain: false });
      // The same task in two calls: exactly one of them finished it, with its cursor.
      expect([twiceFirst, twiceSecond].filter(Boolean)).toHaveLength(1);
      // The turn's statement and its read back (not all four finished), the second call for the same task alone.
      expect([...statements].sort()).toEqual(
        ['SELECT id, cursor_user_id, fin', 'UPDATE tb_fanout_task t FORCE ', 'UPDATE tb_fanout_task t FORCE '].sort(),
      );
      expect(await rowOf(live.id)).toEqual({ status: 'done', cursor: 11, chunks: 1 });
      expect(await rowOf(twice.id)).toEqual({ status: 'done', cursor: twiceFirst ? 12 : 15, chunks: 1 });
      expect((await rowOf(deleted.id)).status).not.toBe('done');
      expect(await rowOf(done.id)).toEqual({ status: 'done', cursor: 7, chunks: 1 });
      // Without the blog's check the deleted one finishes (a retract's finish, or a delivery taking its writes back).
      expect(await store.finishUnchunked(deleted, 13, false)).not.toBeNull();
    } finally {
      await pool.close();
    }
  });
});
