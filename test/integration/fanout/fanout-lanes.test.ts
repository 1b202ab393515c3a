/**
 * Fan-out lanes (src/fanout/fanout.queue.ts): a fan-out that fits in one chunk does not wait
 * behind the queued chunks of a big one, and big fan-outs share the workers chunk by chunk.
 *
 * The jobs are queued before a worker that runs one job at a time (at most 20 a second) starts,
 * or while it runs, so the order in which it takes them is the queue's alone. Nothing here
 * measures time: the order is read afterwards from the outbox (when each task and each chunk
 * finished, as the worker recorded it).
 */
import { FanoutDispatcher } from '../../../src/fanout/fanout.dispatcher';
import { FanoutStore } from '../../../src/fanout/fanout.store';
import { RunningWorkers, startFanoutWorkers } from '../../../src/composition';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { addFollowers, inboxScores, publish, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';
import { waitFor } from '../../support/processes';

let app: TestApp;
let workers: RunningWorkers | undefined;

beforeAll(async () => {
  // API only: each test starts the worker when the jobs it is about are queued.
  app = await startTestApp('fanout_lanes', {
    env: { FANOUT_WORKERS: '0', FANOUT_CHUNK_SIZE: '10', FANOUT_CONCURRENCY: '1', FANOUT_JOBS_PER_SECOND: '20' },
  });
});
afterEach(async () => {
  await workers?.stop();
  workers = undefined;
});
afterAll(() => app.close());

function startWorker(): void {
  workers = startFanoutWorkers(app.services, 1, { kind: 'shared', db: app.mysql });
}

interface TaskRow {
  id: string;
  status: string;
  chunks_total: number;
  chunks_done: number;
  finished_at: Date | null;
}

const taskOf = async (blogId: string): Promise<TaskRow> =>
  (
    await app.query<TaskRow>(
      "SELECT id, status, chunks_total, chunks_done, finished_at FROM tb_fanout_task WHERE blog_id = ? AND kind = 'deliver'",
      [fromGlobalId(blogId).id],
    )
  )[0];

/** When each chunk of a task finished, by seq (1-based). */
const chunkFinishes = async (taskId: string): Promise<Date[]> =>
  (
    await app.query<{ finished_at: Date }>('SELECT finished_at FROM tb_fanout_chunk WHERE task_id = ? ORDER BY seq', [
      taskId,
    ])
  ).map((row) => row.finished_at);

/** Publishes and waits until the publish has queued its dispatch job. */
async function publishQueued(author: TestUser, title: string): Promise<string> {
  const blogId = await publish(app, author, title);
  await waitFor(`${title}: its dispatch job queued`, async () => (await taskOf(blogId))?.status !== 'pending');
  return blogId;
}

it('a one-chunk fan-out does not wait behind the queued chunks of a big one published before it', async () => {
  const big = await signUp(app, 'big');
  const small = await signUp(app, 'small');
  const bigFollowers = await addFollowers(app, big, 10_001, 400); // 40 chunks
  const smallFollowers = await addFollowers(app, small, 20_001, 5); // 1 chunk

  // The big fan-out's 40 chunks are queued (dispatched here, as its dispatch job would), then
  // the small one is published; only then does a worker start.
  const bigBlog = await publishQueued(big, 'to four hundred');
  const store = new FanoutStore(app.mysql, () => new Date());
  await new FanoutDispatcher({ store, queue: app.services.fanoutQueue!, chunkSize: 10 }).dispatch(
    Number((await taskOf(bigBlog)).id),
  );
  expect((await taskOf(bigBlog)).chunks_total).toBe(40);
  const smallBlog = await publishQueued(small, 'to five');
  startWorker();
  await app.services.fanout?.idle(60_000);

  const bigTask = await taskOf(bigBlog);
  const smallTask = await taskOf(smallBlog);
  expect([bigTask.status, smallTask.status]).toEqual(['done', 'done']);
  // In the order the jobs were queued, the small one's dispatch would run after all 40 chunks.
  // It runs first (dispatch jobs have no priority), and its chunk is a first chunk: only the big
  // one's first chunk goes before it.
  const bigChunks = await chunkFinishes(bigTask.id);
  expect(bigChunks.filter((finished) => finished > smallTask.finished_at!).length).toBeGreaterThanOrEqual(38);
  expect(bigTask.finished_at! > smallTask.finished_at!).toBe(true);

  expect((await inboxScores(app, smallFollowers, smallBlog)).every((score) => score !== null)).toBe(true);
  expect((await inboxScores(app, bigFollowers, bigBlog)).every((score) => score !== null)).toBe(true);
});

it('two big fan-outs share the worker: the later one catches up, then they advance chunk by chunk', async () => {
  const first = await signUp(app, 'first');
  const second = await signUp(app, 'second');
  const firstFollowers = await addFollowers(app, first, 30_001, 300); // 30 chunks
  const secondFollowers = await addFollowers(app, second, 40_001, 300); // 30 chunks

  startWorker();
  const firstBlog = await publishQueued(first, 'first of two');
  await waitFor('the first fan-out under way', async () => (await taskOf(firstBlog)).chunks_done >= 3);
  const secondBlog = await publishQueued(second, 'second of two');
  await app.services.fanout?.idle(60_000);

  const firstTask = await taskOf(firstBlog);
  const secondTask = await taskOf(secondBlog);
  expect([firstTask.status, secondTask.status]).toEqual(['done', 'done']);
  const firstChunks = await chunkFinishes(firstTask.id);
  const secondChunks = await chunkFinishes(secondTask.id);
  expect([firstChunks.length, secondChunks.length]).toEqual([30, 30]);

  // How far the first had got when the second's first chunk ran; at most one window of the rate
  // limit (20 jobs), so the first was far from done.
  const ahead = firstChunks.filter((at) => at < secondChunks[0]).length;
  expect(ahead).toBeGreaterThanOrEqual(3);
  expect(ahead).toBeLessThan(20);
  // The second catches up: its chunks 1..ahead before the first's next one. Queued in order, all
  // 30 of the second's chunks would have come after the first's last one.
  expect(secondChunks[ahead - 1] <= firstChunks[ahead]).toBe(true);
  // Then they alternate: chunk k of each before chunk k + 1 of either, so both progress until
  // both are nearly done.
  for (let k = ahead; k + 1 < 30; k += 1) {
    expect(firstChunks[k + 1] >= secondChunks[k]).toBe(true);
    expect(secondChunks[k + 1] >= firstChunks[k]).toBe(true);
  }
  expect(secondChunks.filter((at) => at < firstChunks[29]).length).toBeGreaterThanOrEqual(28);

  expect((await inboxScores(app, firstFollowers, firstBlog)).every((score) => score !== null)).toBe(true);
  expect((await inboxScores(app, secondFollowers, secondBlog)).every((score) => score !== null)).toBe(true);
});
