/**
 * The executor: writes one chunk of inboxes.
 *
 * The followers of the chunk are read as the follow graph is *now* (an unfollow since dispatch
 * is respected), then written with pipelined commands (Inbox.deliver / Inbox.retract). Writes are
 * idempotent, so a chunk that is run again after a crash does no harm.
 *
 * A blog deleted while its delivery is in flight must end in no inbox. The retract task walks
 * every follower after the delete committed, and a delivering chunk checks for the delete *after*
 * writing: if the delete came first, the chunk takes its own writes back; if the check came
 * first, the delete committed later still, and the retract task's pass over these followers
 * follows the writes. Either way the last write to each inbox removes the blog.
 */
import { Inbox } from '../feed/inbox';
import { FanoutStore } from './fanout.store';

export class FanoutExecutor {
  constructor(
    private readonly store: FanoutStore,
    private readonly inbox: Inbox,
  ) {}

  async runChunk(taskId: number, seq: number): Promise<void> {
    const started = await this.store.startChunk(taskId, seq);
    if (!started) return;
    const { task, chunk } = started;
    const followerIds = await this.store.followerIdsIn(task.authorId, chunk);
    if (task.kind === 'deliver') {
      await this.inbox.deliver(followerIds, { id: task.blogId, score: task.score });
      if (await this.store.isBlogDeleted(task.blogId)) await this.inbox.retract(followerIds, task.blogId);
    } else {
      await this.inbox.retract(followerIds, task.blogId);
    }
    await this.store.finishChunk(taskId, seq);
  }
}
