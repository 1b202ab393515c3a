/**
 * The executor: writes one chunk of inboxes.
 *
 * The job carries the chunk's follower ids, read by the dispatcher a moment before; they are
 * written with one script call per 1000 inboxes (FeedService.deliver / retract). Writes are
 * idempotent, so a chunk that is run again after a crash does no harm. A follower who
 * unfollowed since the chunk was made gets the blog taken back at once (FeedService.deliver).
 *
 * A blog deleted while its delivery is in flight must end in no inbox. The retract task walks
 * every follower after the delete committed, and a delivering chunk checks for the delete *after*
 * writing (its finishing statement only succeeds while the blog is live): if the delete came
 * first, the chunk takes its own writes back; if the check came first, the delete committed
 * later still, and the retract task's pass over these followers follows the writes. Either way
 * the last write to each inbox removes the blog.
 */
import type { FeedService } from '../feed/feed.service';
import type { Metrics } from '../kernel/observability';
import { ChunkJob } from './fanout.queue';
import { FanoutCompletion, FanoutStore, FanoutTask } from './fanout.store';

export interface FanoutExecutorDeps {
  store: FanoutStore;
  /** Owns what enters an inbox: the executor only says which blog goes to which readers. */
  feed: Pick<FeedService, 'deliver' | 'retract'>;
  /** Told when the chunk it finished was its task's last one (the task is done). */
  onComplete: FanoutCompletion;
  metrics?: Pick<Metrics, 'inboxesWritten'>;
}

export class FanoutExecutor {
  private readonly store: FanoutStore;
  private readonly feed: Pick<FeedService, 'deliver' | 'retract'>;
  private readonly onComplete: FanoutCompletion;
  private readonly metrics?: Pick<Metrics, 'inboxesWritten'>;

  constructor(deps: FanoutExecutorDeps) {
    this.store = deps.store;
    this.feed = deps.feed;
    this.onComplete = deps.onComplete;
    this.metrics = deps.metrics;
  }

  /**
   * A chunk from its job. `firstRun`: the job's first run (BullMQ's attemptsStarted), which goes
   * straight to the writes: a statement (and a commit) fewer a chunk, and its finish counts the
   * run. A later run (a retry, a stalled job run again) first counts itself and skips a chunk
   * already finished (startChunk). A first run may still meet a finished chunk, when the
   * dispatcher queued it again (after a crash) while it finished: its writes are then done again,
   * which they allow (idempotent, and a delivery's finish, which fails on a finished chunk, checks
   * for a deleted blog and takes them back), and its finish finds nothing to count.
   */
  async runChunk(job: ChunkJob, firstRun = false): Promise<void> {
    if (!firstRun && !(await this.store.startChunk(job.taskId, job.seq))) return;
    // Jobs queued before chunks carried their author: the task has it (a retract needs none).
    const authorId = job.kind === 'retract' ? 0 : (job.authorId ?? (await this.store.task(job.taskId))?.authorId ?? 0);
    await this.writeAndFinish(job, authorId, (unlessBlogDeleted) =>
      this.store.finishChunk(job.taskId, job.seq, unlessBlogDeleted, this.onComplete, firstRun),
    );
  }

  /**
   * The only chunk of a task, run inside its dispatch without a chunk row (fanout.dispatcher.ts):
   * its finish dispatches and finishes the task in one statement. The same rules as runChunk
   * otherwise; a failure leaves the task as it was, for the retried dispatch to run again.
   */
  async runOnlyChunk(job: ChunkJob, task: Pick<FanoutTask, 'id' | 'authorId' | 'createdAt'>): Promise<void> {
    const through = job.followerIds[job.followerIds.length - 1];
    await this.writeAndFinish(job, task.authorId, async (unlessBlogDeleted) => {
      const completed = await this.store.finishUnchunked(task, through, unlessBlogDeleted);
      if (completed !== null) this.onComplete(completed.task, completed.lagSeconds);
      return completed !== null;
    });
  }

  /**
   * The chunk's writes, then its finish (`finish` says whether it finished): a retract finishes
   * whatever happened; a delivery finishes only while the blog is live (usually one statement),
   * else takes its writes back first (see the top of the file).
   */
  private async writeAndFinish(
    job: ChunkJob,
    authorId: number,
    finish: (unlessBlogDeleted: boolean) => Promise<boolean>,
  ): Promise<void> {
    if (job.kind === 'retract') {
      await this.feed.retract(job.followerIds, job.blogId);
      await finish(false);
      return;
    }
    const entry = { id: job.blogId, score: job.score };
    await this.feed.deliver(job.followerIds, { entry, authorId, ...(job.listed ? { listed: job.listed } : {}) });
    this.metrics?.inboxesWritten(job.followerIds.length);
    if (await finish(true)) return;
    if (await this.store.isBlogDeleted(job.blogId)) await this.feed.retract(job.followerIds, job.blogId);
    await finish(false);
  }
}
