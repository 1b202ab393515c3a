/**
 * The dispatcher: turns one fan-out task into chunk jobs.
 *
 * It walks the author's followers in id order with keyset pages (`user_id > cursor ORDER BY
 * user_id LIMIT n`: each page is an index range scan, never an OFFSET), splits each page into
 * chunks (follower id ranges) and records them while advancing the task's cursor in the same
 * transaction. Killed at any point, it runs again (BullMQ retries a stalled job) and:
 *   1. re-adds the jobs of chunks that exist but have not finished (a crash may have come
 *      between recording a chunk and queueing it; queueing twice is a no-op by job id), then
 *   2. continues from the cursor, so no follower page is walked twice.
 *
 * A task whose followers all fit in one chunk (most authors) runs that chunk inside the dispatch
 * job instead of queueing a chunk job: a BullMQ job costs more Redis work (adding, taking,
 * finishing it) than writing a few dozen inboxes, and the chunk waits behind no other job. Such
 * a chunk is not recorded: the dispatch job is its retry. Writes are idempotent, so a dispatch
 * that dies or fails while delivering is retried (BullMQ, or the relay), reads the followers
 * again and delivers again; the one statement that finishes it records the task dispatched,
 * its chunk done and the task done together (FanoutStore.finishUnchunked), and only while
 * nothing else dispatched it.
 *
 * What a publish's dispatch costs MySQL is most of what a publish costs (one worker dispatches
 * every publish), so the common path is kept short: one read (the followers; the job's first run
 * knows its task from the job, see FreshTask in fanout.queue.ts) and that one write, one commit,
 * where it took fourteen statements and five commits. A re-run, or a job the relay queued, reads
 * the task and whether its blog was deleted in one statement. On the path with chunk jobs, a
 * task that never recorded a chunk has none to re-queue (no read), and the last chunks are
 * recorded together with "dispatched".
 */
import type { Listing } from '../feed/inbox';
import { currentTraceParent, inSpan } from '../kernel/tracing';
import { ChunkJob, chunkJob, FanoutQueue, FreshTask } from './fanout.queue';
import { FanoutChunkRange, FanoutCompletion, FanoutStore, FanoutTask } from './fanout.store';

/**
 * Chunks made per round: one keyset read of chunksInRound(n) * chunkSize follower ids, one
 * transaction recording the chunks and the cursor, one round trip queueing their jobs. The first
 * round is 10 chunks, so a task of up to 10 chunks' followers (most that are queued at all) is
 * walked in one round; each round after it is four times the one before, up to
 * MAX_CHUNKS_PER_ROUND, so that a big walk stays ahead of the executors (rounds of 10 chunks each
 * took about as long as the executors took to write them, and their Redis calls waited behind
 * those writes: bench:fanout, machine Z). A smaller first round was tried (2 chunks): the first
 * inboxes were not written measurably sooner, and tasks of 2 to 10 chunks paid a round more.
 */
export const FIRST_CHUNKS_PER_ROUND = 10;
/** The most chunks in one round: 40 chunk jobs (40,000 follower ids at the default chunk size) in memory at once. */
export const MAX_CHUNKS_PER_ROUND = 40;

/** How many chunks round `round` (from 0) of a walk makes: 10, 40, 40... */
export function chunksInRound(round: number): number {
  return Math.min(MAX_CHUNKS_PER_ROUND, FIRST_CHUNKS_PER_ROUND * 4 ** Math.min(round, 8));
}

/** Splits ascending follower ids, read after `cursor`, into chunks numbered from `seq` + 1. */
export function chunkRanges(
  followerIds: readonly number[],
  cursor: number,
  seq: number,
  chunkSize: number,
): FanoutChunkRange[] {
  const chunks: FanoutChunkRange[] = [];
  let after = cursor;
  for (let start = 0; start < followerIds.length; start += chunkSize) {
    const through = followerIds[Math.min(start + chunkSize, followerIds.length) - 1];
    chunks.push({ seq: seq + chunks.length + 1, afterUserId: after, throughUserId: through });
    after = through;
  }
  return chunks;
}

export interface FanoutDispatcherDeps {
  store: FanoutStore;
  queue: Pick<FanoutQueue, 'add'>;
  /** Followers per chunk job (FANOUT_CHUNK_SIZE). */
  chunkSize: number;
  /** Told when the dispatcher is the one that completes a task (its chunks can finish first). */
  onComplete?: FanoutCompletion;
  /**
   * Delivers the one chunk of a task that fits in one, in the dispatch job, and finishes the task
   * (nothing is recorded before: see above); absent: every chunk is recorded and queued.
   */
  runChunk?: (job: ChunkJob, task: FanoutTask) => Promise<void>;
  /**
   * What chunks carry as `listed`, read before each read of followers (FeedService.followersListed:
   * the inboxes may trust the list then); absent: nothing carried.
   */
  listed?: () => Promise<Listing | null>;
}

export class FanoutDispatcher {
  private readonly store: FanoutStore;
  private readonly queue: Pick<FanoutQueue, 'add'>;
  private readonly chunkSize: number;
  private readonly onComplete?: FanoutCompletion;
  private readonly runChunk?: (job: ChunkJob, task: FanoutTask) => Promise<void>;
  private readonly listed: () => Promise<Listing | null>;

  constructor(deps: FanoutDispatcherDeps) {
    this.store = deps.store;
    this.queue = deps.queue;
    this.chunkSize = deps.chunkSize;
    this.onComplete = deps.onComplete;
    this.runChunk = deps.runChunk;
    this.listed = deps.listed ?? (async () => null);
  }

  /**
   * Dispatches a task: `fresh`, the task as its job carries it, only on the job's first run (see
   * FreshTask); otherwise the task is read.
   */
  async dispatch(taskId: number, fresh?: FreshTask): Promise<void> {
    const read = fresh
      ? { task: taskOfFresh(taskId, fresh), blogDeleted: false }
      : await this.store.taskToDispatch(taskId);
    if (!read || read.task.status === 'done') return;
    const { task, blogDeleted } = read;
    await inDispatchSpan(task, () => this.dispatchTask(task, blogDeleted));
  }

  /**
   * A task just committed, dispatched in the process that committed it (FanoutWorkers.dispatchHere)
   * when its followers fit in one chunk, as its dispatch job would: the chunk delivered inline and
   * the task finished (true). False, after one read and nothing written, when they do not (its
   * dispatch job walks them) or when this dispatcher runs no chunk inline. The read asks for one
   * follower more than a chunk holds: enough to tell, bounded whatever the author's following.
   */
  async dispatchIfOneChunk(taskId: number, fresh: FreshTask): Promise<boolean> {
    const { runChunk } = this;
    if (!runChunk) return false;
    const task = taskOfFresh(taskId, fresh);
    return inDispatchSpan(task, async () => {
      const followerIds = await this.store.firstFollowerIds(task.authorId, this.chunkSize + 1);
      if (followerIds.length > this.chunkSize) return false;
      const [chunk] = chunkRanges(followerIds, 0, 0, this.chunkSize);
      if (chunk) await runChunk(jobOf(task, chunk, followerIds).data, task);
      else await this.finishWithoutFollowers(task);
      return true;
    });
  }

  private async dispatchTask(task: FanoutTask, blogDeleted: boolean): Promise<void> {
    // chunks_total moves with every chunk recorded: a task at 0 has none to re-queue.
    if (task.chunksTotal > 0) await this.requeueUnfinishedChunks(task);
    if (!task.dispatched) {
      const walk = await this.walkFollowers(task, blogDeleted);
      if (walk.inline && this.runChunk) return this.runChunk(walk.inline, task);
      // Marked with the last chunks, before their jobs were queued: the last of them to finish completes the task.
      if (walk.dispatched) return;
    }
    await this.finishDispatched(task.id, !task.dispatched);
  }

  /** A fresh task of an author without followers: nothing to deliver, done in one statement. */
  private async finishWithoutFollowers(task: FanoutTask): Promise<void> {
    const completed = await this.store.finishWithoutFollowers(task);
    if (completed !== null) this.onComplete?.(completed.task, completed.lagSeconds);
  }

  /** Every chunk of the task is recorded (`mark`: say so now); completes it if they are all done. */
  private async finishDispatched(taskId: number, mark: boolean): Promise<void> {
    if (mark) await this.store.markDispatched(taskId);
    const completed = await this.store.completeIfDone(taskId);
    if (completed !== null) this.onComplete?.(completed.task, completed.lagSeconds);
  }

  /**
   * Records the task's chunks from its cursor on and queues their jobs, or returns the job of a
   * task's only chunk when it is to run inline; says whether the task was marked dispatched with
   * its last chunks. `deletedAtRead`: whether the blog was deleted when the task was read.
   */
  private async walkFollowers(
    task: FanoutTask,
    deletedAtRead: boolean,
  ): Promise<{ inline: ChunkJob | null; dispatched: boolean }> {
    let cursor = task.cursorUserId;
    let seq = task.chunksTotal;
    for (let round = 0; ; round += 1) {
      const pageSize = this.chunkSize * chunksInRound(round);
      // A deleted blog needs no further delivery: its retract task takes it out of every inbox.
      // Only a saving: a delete after this check is caught by the chunks' finish (fanout.executor.ts),
      // so the first round may trust the task's read, and later rounds look again.
      if (task.kind === 'deliver' && (round === 0 ? deletedAtRead : await this.store.isBlogDeleted(task.blogId)))
        return { inline: null, dispatched: false };
      const listed = await this.listedFor(task);
      const followerIds = await this.store.followerIdsAfter(task.authorId, cursor, pageSize);
      const chunks = chunkRanges(followerIds, cursor, seq, this.chunkSize);
      if (chunks.length === 0) return { inline: null, dispatched: false };
      const last = followerIds.length < pageSize;
      if (this.runChunk && seq === 0 && chunks.length === 1 && last)
        return { inline: jobOf(task, chunks[0], followerIds, listed).data, dispatched: false };
      await this.store.addChunks(task.id, chunks, { last });
      const jobs = chunks.map((chunk, i) =>
        jobOf(task, chunk, followerIds.slice(i * this.chunkSize, (i + 1) * this.chunkSize), listed),
      );
      await this.queue.add(jobs);
      cursor = chunks[chunks.length - 1].throughUserId;
      seq = chunks[chunks.length - 1].seq;
      if (last) return { inline: null, dispatched: true };
    }
  }

  /** What a chunk of this task carries as `listed`, read now: a retraction needs none. */
  private listedFor(task: FanoutTask): Promise<Listing | null> {
    return task.kind === 'deliver' ? this.listed() : Promise.resolve(null);
  }

  /**
   * After a crash, or when the relay drives a stranded task again: chunks recorded but not
   * finished get their jobs again (a no-op while queued; one that used up its attempts runs again).
   */
  private async requeueUnfinishedChunks(task: FanoutTask): Promise<void> {
    for (const chunk of await this.store.unfinishedChunks(task.id)) {
      const listed = await this.listedFor(task);
      const followerIds = await this.store.followerIdsIn(task.authorId, chunk);
      await this.queue.add([jobOf(task, chunk, followerIds, listed)], { redrive: true });
    }
  }
}

/** A span in the trace of the request that recorded the event: its chunks' spans follow it. */
function inDispatchSpan<T>(task: FanoutTask, work: () => Promise<T>): Promise<T> {
  const attributes = {
    'fanout.task_id': task.id,
    'fanout.kind': task.kind,
    'fanout.blog_id': task.blogId,
    'fanout.author_id': task.authorId,
  };
  return inSpan('fanout dispatch', task.traceContext, attributes, work);
}

/** A task just recorded, as its dispatch job carries it: nothing of it dispatched yet. */
function taskOfFresh(id: number, fresh: FreshTask): FanoutTask {
  return {
    id,
    kind: fresh.kind,
    blogId: fresh.blogId,
    authorId: fresh.authorId,
    score: fresh.score,
    status: 'queued',
    dispatched: false,
    cursorUserId: 0,
    chunksTotal: 0,
    createdAt: new Date(fresh.queuedAt),
    traceContext: fresh.trace ?? null,
  };
}

/**
 * A chunk's job; it carries when its followers were listed and the dispatch's trace
 * (kernel/tracing.ts), when there are.
 */
function jobOf(task: FanoutTask, chunk: FanoutChunkRange, followerIds: number[], listed: Listing | null = null) {
  const { id: taskId, kind, blogId, authorId, score } = task;
  const trace = currentTraceParent();
  const extra = { ...(listed ? { listed } : {}), ...(trace ? { trace } : {}) };
  return chunkJob({ taskId, seq: chunk.seq, kind, blogId, authorId, score, followerIds, ...extra });
}
