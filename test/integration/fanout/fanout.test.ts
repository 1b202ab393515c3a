/**
 * The durable fan-out pipeline in one process: outbox events, chunking and resume, deletes
 * racing a delivery in flight.
 */
import { createConnection } from 'mysql2/promise';
import { chunksInRound, FanoutDispatcher } from '../../../src/fanout/fanout.dispatcher';
import type { ChunkJob, FanoutQueue, FreshTask } from '../../../src/fanout/fanout.queue';
import { FanoutService } from '../../../src/fanout/fanout.service';
import { FanoutExecutor } from '../../../src/fanout/fanout.executor';
import { FanoutStore } from '../../../src/fanout/fanout.store';
import type { Delivery } from '../../../src/feed/inbox';
import { RedisInbox } from '../../../src/feed/inbox.redis';
import { fromGlobalId, toGlobalId } from '../../../src/kernel/global-id';
import {
  addFollowers,
  inboxScores,
  MYSQL_URL,
  ok,
  publish,
  signUp,
  startTestApp,
  testDatabase,
  TestApp,
} from '../../support/harness';
import { waitFor } from '../../support/processes';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('fanout', { env: { FANOUT_CHUNK_SIZE: '100' } });
});
afterAll(() => app.close());

const tasksOf = (blogId: string) =>
  app.db.query(
    'SELECT kind, status, dispatched, chunks_total, chunks_done FROM tb_fanout_task WHERE blog_id = ? ORDER BY id',
    [fromGlobalId(blogId).id],
  );

it('records the event with the blog and delivers it to every follower in chunks', async () => {
  const author = await signUp(app, 'author');
  const followers = await addFollowers(app, author, 10_001, 1050);
  const id = await publish(app, author, 'hello');
  await app.services.fanout?.idle();
  const [task] = await tasksOf(id);
  expect(task).toEqual({ kind: 'deliver', status: 'done', dispatched: 1, chunks_total: 11, chunks_done: 11 });
  const [blog] = await app.db.query('SELECT created_at FROM tb_blog WHERE id = ?', [fromGlobalId(id).id]);
  const scores = await inboxScores(app, followers, id);
  expect(new Set(scores)).toEqual(new Set([String(blog.created_at.getTime())]));
  // The chunks cover the followers exactly: contiguous id ranges, no overlap, no gap.
  const chunks = await app.db.query(
    'SELECT seq, after_user_id a, through_user_id t FROM tb_fanout_chunk c JOIN tb_fanout_task k ON k.id = c.task_id WHERE k.blog_id = ? ORDER BY seq',
    [fromGlobalId(id).id],
  );
  expect(chunks.map((c: any) => Number(c.seq))).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
  expect(Number(chunks[0].a)).toBe(0);
  for (let i = 1; i < chunks.length; i += 1) expect(chunks[i].a).toBe(chunks[i - 1].t);
  expect(Number(chunks[10].t)).toBe(followers[followers.length - 1]);
});

it('finishes an author without followers at once', async () => {
  const loner = await signUp(app, 'loner');
  const id = await publish(app, loner, 'anyone?');
  await app.services.fanout?.idle();
  expect(await tasksOf(id)).toEqual([
    { kind: 'deliver', status: 'done', dispatched: 1, chunks_total: 0, chunks_done: 0 },
  ]);
});

it('a dispatcher that dies mid-way resumes from its cursor without walking followers twice', async () => {
  const author = await signUp(app, 'resumed');
  const followers = await addFollowers(app, author, 20_001, 730);
  // Record an event without queueing it, then dispatch it by hand with a queue that fails on
  // its 3rd use, as a crash between recording chunks and queueing them would.
  const blogId = await publish(app, author, 'resume me');
  await app.services.fanout?.idle(); // the normal path delivers it...
  const store = new FanoutStore(app.mysql, () => new Date());
  const taskId = await app.mysql.transaction((sql) =>
    store.insertTask(sql, 'deliver', {
      blogId: fromGlobalId(blogId).id,
      authorId: fromGlobalId(author.id).id,
      score: 1,
    }),
  ); // ...and this second event for the same blog is the one we crash.
  // Marked queued, as the request's enqueue would: the outbox relay (every 200 ms here) must not
  // queue its dispatch job too, or the worker would dispatch it beside this test.
  await store.markQueued([taskId]);
  let adds = 0;
  const crashingQueue = {
    add: async (jobs: unknown[]) => {
      if (jobs.length > 0 && ++adds === 2) throw new Error('simulated crash');
      await app.services.fanoutQueue!.add(jobs as never);
    },
  };
  // Chunks of 10 followers, made in growing rounds: the 2nd round is recorded, then "crashes".
  await expect(new FanoutDispatcher({ store, queue: crashingQueue, chunkSize: 10 }).dispatch(taskId)).rejects.toThrow(
    'simulated crash',
  );
  const [halfway] = await app.db.query('SELECT chunks_total, cursor_user_id FROM tb_fanout_task WHERE id = ?', [
    taskId,
  ]);
  const recorded = chunksInRound(0) + chunksInRound(1);
  expect(recorded).toBeLessThan(73); // the crash comes before the last round
  expect(halfway.chunks_total).toBe(recorded);
  expect(Number(halfway.cursor_user_id)).toBe(followers[recorded * 10 - 1]);
  // Run it again, as BullMQ would retry it: it re-queues the unfinished chunks and goes on.
  await new FanoutDispatcher({ store, queue: app.services.fanoutQueue!, chunkSize: 10 }).dispatch(taskId);
  await waitFor('the resumed task', async () => (await store.task(taskId))?.status === 'done');
  const chunks = await app.db.query(
    'SELECT after_user_id a, through_user_id t, runs FROM tb_fanout_chunk WHERE task_id = ? ORDER BY seq',
    [taskId],
  );
  expect(chunks).toHaveLength(73);
  for (let i = 1; i < chunks.length; i += 1) expect(chunks[i].a).toBe(chunks[i - 1].t);
  expect(Number(chunks[72].t)).toBe(followers[followers.length - 1]);
  // The chunks recorded before the crash but never queued were queued by the resumed run.
  expect(chunks.every((chunk: any) => chunk.runs >= 1)).toBe(true);
  expect((await inboxScores(app, followers, blogId)).every((score) => score !== null)).toBe(true);
});

/** A deliver task of this blog (global ids) recorded as queued, which the relay leaves to the test; its id. */
async function newDeliverTask(store: FanoutStore, blogId: string, authorId: string): Promise<number> {
  const taskId = await app.mysql.transaction((sql) =>
    store.insertTask(sql, 'deliver', {
      blogId: fromGlobalId(blogId).id,
      authorId: fromGlobalId(authorId).id,
      score: 1,
    }),
  );
  await store.markQueued([taskId]);
  return taskId;
}

it("runs a task's only chunk inside its dispatch, recording nothing first, and runs it again when that run fails", async () => {
  const author = await signUp(app, 'inline');
  const followers = await addFollowers(app, author, 30_001, 8);
  const blogId = await publish(app, author, 'one chunk');
  await app.services.fanout?.idle();
  const store = new FanoutStore(app.mysql, () => new Date());
  const newTask = () => newDeliverTask(store, blogId, author.id);
  const queued: unknown[] = [];
  const recordingQueue = { add: async (jobs: unknown[]) => void queued.push(...jobs) };

  // Fits in one chunk of 10: run inline, nothing queued.
  const inline: number[][] = [];
  const first = await newTask();
  await new FanoutDispatcher({
    store,
    queue: recordingQueue,
    chunkSize: 10,
    runChunk: async (job) => void inline.push(job.followerIds),
  }).dispatch(first);
  expect(inline).toEqual([followers]);
  expect(queued).toEqual([]);
  // The dispatch job is the inline chunk's retry: nothing is recorded until its finish.
  expect(await store.task(first)).toMatchObject({ dispatched: false, chunksTotal: 0 });
  expect(await app.db.query('SELECT seq FROM tb_fanout_chunk WHERE task_id = ?', [first])).toEqual([]);

  // More than one chunk (chunks of 5): every chunk is queued, none runs inline.
  const second = await newTask();
  await new FanoutDispatcher({
    store,
    queue: recordingQueue,
    chunkSize: 5,
    runChunk: async (job) => void inline.push(job.followerIds),
  }).dispatch(second);
  expect(inline).toHaveLength(1);
  expect(queued).toHaveLength(2);

  // The inline run fails (Redis away, a crash): the retried dispatch walks the followers again
  // (here a dispatcher without inline runs, which records the chunk and queues its job).
  const third = await newTask();
  const failing = new FanoutDispatcher({
    store,
    queue: app.services.fanoutQueue!,
    chunkSize: 10,
    runChunk: () => Promise.reject(new Error('simulated failure')),
  });
  await expect(failing.dispatch(third)).rejects.toThrow('simulated failure');
  expect((await store.task(third))?.status).not.toBe('done');
  await new FanoutDispatcher({ store, queue: app.services.fanoutQueue!, chunkSize: 10 }).dispatch(third);
  await waitFor('the retried task', async () => (await store.task(third))?.status === 'done');
  const [chunk] = await app.db.query('SELECT runs FROM tb_fanout_chunk WHERE task_id = ?', [third]);
  expect(chunk.runs).toBe(1); // the job's run: the failed inline one recorded nothing
});

it("carries when each chunk's followers were listed, read before their read, down to the inboxes' write", async () => {
  const author = await signUp(app, 'listed');
  const followers = await addFollowers(app, author, 31_001, 12);
  const blogId = await publish(app, author, 'listed');
  const store = new FanoutStore(app.mysql, () => new Date());
  const newTask = () => newDeliverTask(store, blogId, author.id);
  // The store's reads of followers and the clock's readings, in their order.
  const events: string[] = [];
  const listingStore: FanoutStore = Object.create(store);
  listingStore.followerIdsAfter = (...args) => {
    events.push('followers');
    return store.followerIdsAfter(...args);
  };
  let readings = 0;
  const listed = async () => {
    events.push('clock');
    readings += 1;
    return { at: 1000 + readings, epoch: 9 };
  };
  const queued: Array<{ data: ChunkJob }> = [];
  const recordingQueue = { add: async (jobs: unknown[]) => void queued.push(...(jobs as Array<{ data: ChunkJob }>)) };

  // Queued chunks (1 follower each, 12 of them, in two rounds: 10, then 2): the clock read
  // before each read of followers, and each chunk carries its own round's reading.
  await new FanoutDispatcher({ store: listingStore, queue: recordingQueue, chunkSize: 1, listed }).dispatch(
    await newTask(),
  );
  expect(chunksInRound(0)).toBe(10);
  expect(events).toEqual(['clock', 'followers', 'clock', 'followers']);
  expect(queued.map((job) => job.data.listed?.at)).toEqual([...Array<number>(10).fill(1001), 1002, 1002]);
  expect(queued.every((job) => job.data.listed?.epoch === 9)).toBe(true);

  // A chunk run inline carries it too, and the executor hands it to the inboxes' write.
  const delivered: Delivery[] = [];
  const feed = {
    deliver: async (_readers: readonly number[], delivery: Delivery) => void delivered.push(delivery),
    retract: async () => {},
  };
  const executor = new FanoutExecutor({ store, feed, onComplete: () => {} });
  const inlineTask = await newTask();
  await new FanoutDispatcher({
    store: listingStore,
    queue: recordingQueue,
    chunkSize: 20,
    listed,
    runChunk: (job, task) => executor.runOnlyChunk(job, task),
  }).dispatch(inlineTask);
  expect(delivered.map((delivery) => delivery.listed)).toEqual([{ at: 1003, epoch: 9 }]);
  expect((await store.task(inlineTask))?.status).toBe('done');

  // Without a clock (or none to read: a cluster, no trusted generation) nothing is carried.
  queued.length = 0;
  await new FanoutDispatcher({ store, queue: recordingQueue, chunkSize: 3 }).dispatch(await newTask());
  expect(queued.map((job) => 'listed' in job.data)).toEqual([false, false, false, false]);
  expect(followers).toHaveLength(12);
});

it("runs a job's first run without the start statement, counts it at its finish, and a later run of a finished chunk writes nothing", async () => {
  const author = await signUp(app, 'first-run');
  const followers = await addFollowers(app, author, 32_001, 6);
  const blogId = await publish(app, author, 'first run');
  const store = new FanoutStore(app.mysql, () => new Date());
  const queued: Array<{ data: ChunkJob }> = [];
  const recordingQueue = { add: async (jobs: unknown[]) => void queued.push(...(jobs as Array<{ data: ChunkJob }>)) };
  // Two chunks of 3, recorded and queued (to this test, which runs them by hand).
  const taskId = await newDeliverTask(store, blogId, author.id);
  await new FanoutDispatcher({ store, queue: recordingQueue, chunkSize: 3 }).dispatch(taskId);
  expect(queued).toHaveLength(2);
  const chunkRows = () =>
    app.db.query(
      'SELECT seq, runs, finished_at IS NOT NULL AS finished FROM tb_fanout_chunk WHERE task_id = ? ORDER BY seq',
      [taskId],
    );
  const writes: number[][] = [];
  const feed = {
    deliver: async (readers: readonly number[]) => void writes.push([...readers]),
    retract: async () => {},
  };
  const executor = new FanoutExecutor({ store, feed, onComplete: () => {} });
  const starts: number[] = [];
  const counting: FanoutStore = Object.create(store);
  counting.startChunk = (...args) => {
    starts.push(args[1]);
    return store.startChunk(...args);
  };
  const countingExecutor = new FanoutExecutor({ store: counting, feed, onComplete: () => {} });

  // A first run: no start statement; its finish counts it.
  await countingExecutor.runChunk(queued[0].data, true);
  expect(starts).toEqual([]);
  expect(await chunkRows()).toEqual([
    { seq: 1, runs: 1, finished: 1 },
    { seq: 2, runs: 0, finished: 0 },
  ]);
  // A later run of the finished chunk: counted nowhere, writes nothing.
  await countingExecutor.runChunk(queued[0].data, false);
  expect(starts).toEqual([1]);
  expect(writes).toHaveLength(1);
  // A later run of an unfinished chunk (its first run died): counted at its start, not again at its finish.
  await countingExecutor.runChunk(queued[1].data, false);
  expect(starts).toEqual([1, 2]);
  expect(await chunkRows()).toEqual([
    { seq: 1, runs: 1, finished: 1 },
    { seq: 2, runs: 1, finished: 1 },
  ]);
  expect((await store.task(taskId))?.status).toBe('done');
  // A first run that meets a finished chunk (queued again by a dispatcher while it finished)
  // writes again, which is allowed, and its finish counts nothing.
  await executor.runChunk(queued[1].data, true);
  expect(writes).toHaveLength(3);
  expect(writes[2]).toEqual(followers.slice(3, 6));
  expect(await chunkRows()).toEqual([
    { seq: 1, runs: 1, finished: 1 },
    { seq: 2, runs: 1, finished: 1 },
  ]);
});

it('a blog deleted while its delivery is in flight ends in no inbox', async () => {
  // A slow worker: 100 followers a chunk, at most 8 jobs a second.
  const slow = await startTestApp('fanout_slow', { env: { FANOUT_CHUNK_SIZE: '100', FANOUT_JOBS_PER_SECOND: '8' } });
  try {
    const author = await signUp(slow, 'author');
    const followers = await addFollowers(slow, author, 50_001, 2000);
    const id = await publish(slow, author, 'regrettable');
    const blogDbId = fromGlobalId(id).id;
    await waitFor('some chunks delivered', async () => {
      const [task] = await slow.db.query(
        "SELECT chunks_done FROM tb_fanout_task WHERE blog_id = ? AND kind = 'deliver'",
        [blogDbId],
      );
      return task && task.chunks_done >= 3;
    });
    const delivered = (await inboxScores(slow, followers, id)).filter((score) => score !== null).length;
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThan(followers.length);
    ok(await slow.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: id }, author.token));
    await slow.services.fanout?.idle(60_000);
    expect((await inboxScores(slow, followers, id)).filter((score) => score !== null)).toEqual([]);
  } finally {
    await slow.close();
  }
});

/** An author with `count` followers whose inboxes exist, a blog of theirs, and a deliver task of it that only this test runs. */
async function taskOfOneChunk(name: string, firstFollowerId: number, count: number) {
  const author = await signUp(app, name);
  const followers = await addFollowers(app, author, firstFollowerId, count);
  const blogId = await publish(app, author, 'one chunk');
  // (Not fanout.idle(): the tests above leave tasks of their own unfinished on purpose.)
  await waitFor('its own fan-out', async () => (await tasksOf(blogId)).every((task: any) => task.status === 'done'));
  // Out of the inboxes again: the task below is what must put it back (or not).
  await app.services.feed.retract(followers, fromGlobalId(blogId).id);
  const store = new FanoutStore(app.mysql, () => new Date());
  const [{ score }] = await app.db.query('SELECT score FROM tb_fanout_task WHERE blog_id = ?', [
    fromGlobalId(blogId).id,
  ]);
  const taskId = await app.mysql.transaction((sql) =>
    store.insertTask(sql, 'deliver', {
      blogId: fromGlobalId(blogId).id,
      authorId: fromGlobalId(author.id).id,
      score: Number(score),
    }),
  );
  await store.markQueued([taskId]); // the relay leaves it to this test
  return { author, followers, blogId, store, taskId };
}

describe("a task's only chunk, run in its dispatch", () => {
  it('finishes the task in one statement: no chunk row, the completion told once, nothing queued', async () => {
    const { author, followers, blogId, store, taskId } = await taskOfOneChunk('only-chunk', 40_001, 5);
    const completions: Array<{ taskId: number; authorId: number }> = [];
    const executor = new FanoutExecutor({
      store,
      feed: app.services.feed,
      onComplete: (task) => void completions.push(task),
    });
    const queued: unknown[] = [];
    const dispatcher = new FanoutDispatcher({
      store,
      queue: { add: async (jobs: unknown[]) => void queued.push(...jobs) },
      chunkSize: 100,
      runChunk: (job, task) => executor.runOnlyChunk(job, task),
    });
    await dispatcher.dispatch(taskId);
    // A retried dispatch job (its worker died after the finish) changes nothing.
    await dispatcher.dispatch(taskId);
    expect(queued).toEqual([]);
    expect(completions).toEqual([{ taskId, authorId: fromGlobalId(author.id).id }]);
    expect(await store.task(taskId)).toMatchObject({
      status: 'done',
      dispatched: true,
      chunksTotal: 1,
      cursorUserId: followers[followers.length - 1],
    });
    const [{ chunks_done }] = await app.db.query('SELECT chunks_done FROM tb_fanout_task WHERE id = ?', [taskId]);
    expect(chunks_done).toBe(1);
    expect(await app.db.query('SELECT seq FROM tb_fanout_chunk WHERE task_id = ?', [taskId])).toEqual([]);
    expect((await inboxScores(app, followers, blogId)).every((score) => score !== null)).toBe(true);
  });

  it('walks no follower when the blog was deleted before its dispatch (read with the task), and finishes the task', async () => {
    const { author, followers, blogId, store, taskId } = await taskOfOneChunk('only-chunk-gone', 42_001, 5);
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: blogId }, author.token));
    await waitFor('the delete', async () => {
      const retracts = (await tasksOf(blogId)).filter((task: any) => task.kind === 'retract');
      return retracts.length > 0 && retracts.every((task: any) => task.status === 'done');
    });
    const ran: unknown[] = [];
    const queued: unknown[] = [];
    await new FanoutDispatcher({
      store,
      queue: { add: async (jobs: unknown[]) => void queued.push(...jobs) },
      chunkSize: 100,
      runChunk: async (job) => void ran.push(job),
    }).dispatch(taskId);
    expect(ran).toEqual([]);
    expect(queued).toEqual([]);
    expect(await store.task(taskId)).toMatchObject({ status: 'done', dispatched: true, chunksTotal: 0 });
    expect((await inboxScores(app, followers, blogId)).filter((score) => score !== null)).toEqual([]);
  });

  it('takes its writes back when the blog was deleted while it ran, and still finishes the task', async () => {
    const { author, followers, blogId, store, taskId } = await taskOfOneChunk('only-chunk-deleted', 41_001, 5);
    const feed = app.services.feed;
    const executor = new FanoutExecutor({
      store,
      // Delivers, then the author deletes the blog before the chunk's finish.
      feed: {
        deliver: async (readerIds, delivery) => {
          await feed.deliver(readerIds, delivery);
          ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: blogId }, author.token));
        },
        retract: (readerIds, id) => feed.retract(readerIds, id),
      },
      onComplete: () => {},
    });
    await new FanoutDispatcher({
      store,
      queue: { add: async () => {} },
      chunkSize: 100,
      runChunk: (job, task) => executor.runOnlyChunk(job, task),
    }).dispatch(taskId);
    expect((await store.task(taskId))?.status).toBe('done');
    await waitFor('the delete', async () => (await tasksOf(blogId)).every((task: any) => task.status === 'done'));
    expect((await inboxScores(app, followers, blogId)).filter((score) => score !== null)).toEqual([]);
  });
});

describe('a dispatch job that carries its task (its first run)', () => {
  /** The task of taskOfOneChunk as the API's job carries it (FreshTask), and a store that counts reads of tasks. */
  async function freshTaskOfOneChunk(name: string, firstFollowerId: number) {
    const made = await taskOfOneChunk(name, firstFollowerId, 3);
    const [row] = await app.db.query('SELECT blog_id, author_id, score FROM tb_fanout_task WHERE id = ?', [
      made.taskId,
    ]);
    const fresh: FreshTask = {
      kind: 'deliver',
      blogId: Number(row.blog_id),
      authorId: Number(row.author_id),
      score: Number(row.score),
      queuedAt: Date.now(),
    };
    const store = new TaskReadCountingStore(app.mysql, () => new Date());
    const executor = new FanoutExecutor({ store, feed: app.services.feed, onComplete: () => {} });
    const dispatcher = new FanoutDispatcher({
      store,
      queue: { add: async () => {} },
      chunkSize: 100,
      runChunk: (job, task) => executor.runOnlyChunk(job, task),
    });
    return { ...made, fresh, store, dispatcher };
  }

  it('delivers and finishes without reading the task', async () => {
    const { followers, blogId, taskId, fresh, store, dispatcher } = await freshTaskOfOneChunk('fresh', 46_001);
    await dispatcher.dispatch(taskId, fresh);
    expect(store.taskReads).toBe(0);
    expect(await store.task(taskId)).toMatchObject({ status: 'done', dispatched: true, chunksTotal: 1 });
    expect((await inboxScores(app, followers, blogId)).every((score) => score === String(fresh.score))).toBe(true);
  });

  it('leaves a blog deleted before it in no inbox: the finish sees the delete, not a read', async () => {
    const { author, followers, blogId, taskId, fresh, store, dispatcher } = await freshTaskOfOneChunk(
      'fresh-gone',
      47_001,
    );
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: blogId }, author.token));
    await waitFor('the delete', async () =>
      (await tasksOf(blogId)).some((task: any) => task.kind === 'retract' && task.status === 'done'),
    );
    await dispatcher.dispatch(taskId, fresh);
    expect(store.taskReads).toBe(0);
    expect((await store.task(taskId))?.status).toBe('done');
    expect((await inboxScores(app, followers, blogId)).filter((score) => score !== null)).toEqual([]);
  });

  it('a run after another one reads the task, and finds it finished', async () => {
    const { followers, blogId, taskId, fresh, store, dispatcher } = await freshTaskOfOneChunk('fresh-again', 48_001);
    await dispatcher.dispatch(taskId, fresh);
    await app.services.feed.retract(followers, fromGlobalId(blogId).id);
    await dispatcher.dispatch(taskId); // a retried or stalled job: the worker passes no FreshTask
    expect(store.taskReads).toBe(1);
    // Finished by the first run: the second wrote nothing.
    expect((await inboxScores(app, followers, blogId)).filter((score) => score !== null)).toEqual([]);
  });
});

/** A FanoutStore that counts taskToDispatch, the read a fresh dispatch does without. */
class TaskReadCountingStore extends FanoutStore {
  taskReads = 0;

  override async taskToDispatch(taskId: number) {
    this.taskReads += 1;
    return super.taskToDispatch(taskId);
  }
}

describe('the outbox marks under concurrent workers', () => {
  /**
   * The API marks a batch of tasks queued after adding their jobs, so a worker may be finishing
   * one of them meanwhile. The mark once found its rows through the (status, id) index and
   * locked that entry before the row, where the worker's finish locks the row and then changes
   * the entry: MariaDB found that deadlock 5 times in one bench:mixed run. Both now lock the row first.
   * Here a second connection holds the row, as a worker's finish does, while the mark runs.
   */
  it.each([
    ['markQueued', (store: FanoutStore, id: number) => store.markQueued([id])],
    ['touchQueued', (store: FanoutStore, id: number) => store.touchQueued([id])],
  ])('%s waits behind a worker finishing the same task and never deadlocks with it', async (name, mark) => {
    const author = await signUp(app, `locks-${name}`);
    const blogId = Number(fromGlobalId(await publish(app, author, 'locked')).id);
    const status = name === 'markQueued' ? 'pending' : 'queued';
    const inserted = await app.mysql.write(
      `INSERT INTO tb_fanout_task (kind, blog_id, author_id, score, status, created_at, queued_at)
       VALUES ('deliver', ?, ?, 1, ?, NOW(3), NOW(3))`,
      [blogId, fromGlobalId(author.id).id, status],
    );
    const taskId = Number(inserted.insertId);
    const worker = await createConnection({ uri: `${MYSQL_URL}/${testDatabase('fanout')}` });
    try {
      await worker.beginTransaction();
      await worker.query('SELECT id FROM tb_fanout_task WHERE id = ? FOR UPDATE', [taskId]);
      const marking = mark(new FanoutStore(app.mysql, () => new Date()), taskId);
      await waitFor('the mark to wait for the row', async () => {
        // InnoDB refreshes INNODB_TRX only when it was not read for 0.1 s: poll slower than that.
        await new Promise((resolve) => setTimeout(resolve, 150));
        const [rows] = await worker.query('SELECT trx_state, trx_query FROM information_schema.INNODB_TRX');
        return (rows as Array<{ trx_state: string; trx_query: string | null }>).some(
          (trx) => trx.trx_state === 'LOCK WAIT' && /^UPDATE tb_fanout_task .*queued_at/.test(trx.trx_query ?? ''),
        );
      });
      // The worker's finish: the status changes, and with it the (status, id) index entry.
      await worker.query("UPDATE tb_fanout_task SET status = 'done', finished_at = NOW(3) WHERE id = ?", [taskId]);
      await worker.commit();
      await marking;
      const [task] = await app.query('SELECT status FROM tb_fanout_task WHERE id = ?', [taskId]);
      expect(task.status).toBe('done');
    } finally {
      await worker.end();
    }
  });
});

describe('idle()', () => {
  it('waits for a finished deliver task to leave the watermark: until then its readers read it from MySQL', async () => {
    // The relay drops finished tasks from the watermark at its first pass and every 10th: at this
    // interval only the first, so the task put back below stays until this test takes it out.
    const quiet = await startTestApp('fanout_idle', { env: { OUTBOX_RELAY_INTERVAL_MS: '600000' } });
    try {
      const author = await signUp(quiet, 'leaving');
      const blogId = await publish(quiet, author, 'on its way out');
      await quiet.services.fanout!.idle();
      const [task] = await quiet.db.query('SELECT id, author_id, score FROM tb_fanout_task WHERE blog_id = ?', [
        fromGlobalId(blogId).id,
      ]);
      const inFlight = { taskId: Number(task.id), authorId: Number(task.author_id), score: Number(task.score) };
      // Done in the outbox, still in the watermark: where the worker's callback has not run yet.
      const inbox = new RedisInbox({ redis: quiet.redis, keys: quiet.keys, maxItems: 100, ttlSeconds: 3600 });
      await inbox.markInFlight(inFlight);
      expect(await quiet.services.feed.finishedInWatermark()).toBe(1);
      await expect(quiet.services.fanout!.idle(300)).rejects.toThrow(/not out of the watermark\) after 300 ms/);
      await quiet.services.feed.deliveryFinished([inFlight]);
      await quiet.services.fanout!.idle(300);
      expect(await quiet.services.feed.finishedInWatermark()).toBe(0);
    } finally {
      await quiet.close();
    }
  });
});

describe("the API's marks of queued tasks", () => {
  /** A FanoutService whose queue takes every job, on a store that records each markQueued. */
  function service(markQueuedAfterMs: number) {
    const marks: number[][] = [];
    const store = new (class extends FanoutStore {
      override async markQueued(taskIds: readonly number[]) {
        marks.push([...taskIds]);
        return super.markQueued(taskIds);
      }
    })(app.mysql, () => new Date());
    const queue = { add: async () => {} } as unknown as FanoutQueue;
    const fanout = new FanoutService({ store, queue, warn: () => {}, markQueuedAfterMs });
    return { marks, store, fanout };
  }

  /**
   * Tasks recorded (pending) for a blog of a new author, dated an hour ahead so that the relay
   * leaves them alone (it queues tasks pending for 500 ms); `done` finishes them for the tests after.
   */
  async function pendingTasks(name: string, count: number) {
    const author = await signUp(app, name);
    const blogId = fromGlobalId(await publish(app, author, 'marked')).id;
    await waitFor('its own fan-out', async () =>
      (await tasksOf(toGlobalId('Blog', blogId))).every((task: any) => task.status === 'done'),
    );
    const store = new FanoutStore(app.mysql, () => new Date(Date.now() + 3_600_000));
    const blog = { dbId: blogId, authorId: fromGlobalId(author.id).id, score: 1 };
    const taskIds: number[] = [];
    for (let i = 0; i < count; i += 1)
      taskIds.push(
        await app.mysql.transaction((sql) =>
          store.insertTask(sql, 'deliver', { blogId, authorId: blog.authorId, score: 1 }),
        ),
      );
    const done = () => app.db.query("UPDATE tb_fanout_task SET status = 'done' WHERE id IN (?)", [taskIds]);
    return { blog, taskIds, done };
  }

  const statuses = async (taskIds: number[]) =>
    (await app.db.query('SELECT status FROM tb_fanout_task WHERE id IN (?) ORDER BY id', [taskIds])).map(
      (row: any) => row.status,
    );

  it('marks the tasks of jobs added in separate turns with one statement', async () => {
    const { blog, taskIds, done } = await pendingTasks('marks-one', 3);
    const { marks, fanout } = service(60_000);
    for (const taskId of taskIds) {
      fanout.enqueue(taskId, 'deliver', blog);
      await new Promise((resolve) => setImmediate(resolve)); // each its own turn: its own add
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(marks).toEqual([]);
    expect(await statuses(taskIds)).toEqual(['pending', 'pending', 'pending']);
    await fanout.flush(); // as at shutdown (and in idle()): now, not after the delay
    expect(marks).toEqual([taskIds]);
    expect(await statuses(taskIds)).toEqual(['queued', 'queued', 'queued']);
    await done();
  });

  it('marks them by itself after the delay', async () => {
    const { blog, taskIds, done } = await pendingTasks('marks-later', 2);
    const { marks, fanout } = service(50);
    for (const taskId of taskIds) fanout.enqueue(taskId, 'deliver', blog);
    await waitFor('the mark', async () => marks.length > 0);
    expect(marks).toEqual([taskIds]);
    expect(await statuses(taskIds)).toEqual(['queued', 'queued']);
    await done();
  });
});
