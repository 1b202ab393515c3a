/**
 * The executor: writes one chunk of inboxes.
 *
 * The job carries the chunk's follower ids, read by the dispatcher a moment before; they are
 * written with one script call per 1000 inboxes (Inbox.deliver / Inbox.retract). Writes are
 * idempotent, so a chunk that is run again after a crash does no harm. (A follower who
 * unfollowed in between may get the entry; the feed never shows a blog of an author the viewer
 * does not follow, see FeedService.)
 *
 * A blog deleted while its delivery is in flight must end in no inbox. The retract task walks
 * every follower after the delete committed, and a delivering chunk checks for the delete *after*
 * writing (its finishing statement only succeeds while the blog is live): if the delete came
 * first, the chunk takes its own writes back; if the check came first, the delete committed
 * later still, and the retract task's pass over these followers follows the writes. Either way
 * the last write to each inbox removes the blog.
 */
import { Inbox } from '../feed/inbox';
import type { Metrics } from '../observability';
import { ChunkJob } from './fanout.queue';
import { FanoutStore } from './fanout.store';

export class FanoutExecutor {
  private readonly finished: (lagSeconds: number) => void;

  constructor(
    private readonly store: FanoutStore,
    private readonly inbox: Inbox,
    private readonly metrics?: Pick<Metrics, 'inboxesWritten' | 'fanoutFinished'>,
  ) {
    this.finished = (lag) => this.metrics?.fanoutFinished(lag);
  }

  async runChunk(job: ChunkJob): Promise<void> {
    if (!(await this.store.startChunk(job.taskId, job.seq))) return;
    if (job.kind === 'retract') {
      await this.inbox.retract(job.followerIds, job.blogId);
      await this.store.finishChunk(job.taskId, job.seq, false, this.finished);
      return;
    }
    await this.inbox.deliver(job.followerIds, { id: job.blogId, score: job.score });
    this.metrics?.inboxesWritten(job.followerIds.length);
    // Usually one statement: finish unless the blog was deleted meanwhile.
    if (await this.store.finishChunk(job.taskId, job.seq, true, this.finished)) return;
    if (await this.store.isBlogDeleted(job.blogId)) await this.inbox.retract(job.followerIds, job.blogId);
    await this.store.finishChunk(job.taskId, job.seq, false, this.finished);
  }
}
