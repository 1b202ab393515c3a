/**
 * The dispatcher: turns one fan-out task into chunk jobs.
 *
 * It walks the author's followers in id order with keyset pages (`user_id > cursor ORDER BY
 * user_id LIMIT chunkSize`: each page is an index range scan, never an OFFSET) and records each
 * page as a chunk (a follower id range) while advancing the task's cursor in the same
 * transaction. Killed at any point, it runs again (BullMQ retries a stalled job) and:
 *   1. re-adds the jobs of chunks that exist but have not finished (a crash may have come
 *      between recording a chunk and queueing it; queueing twice is a no-op by job id), then
 *   2. continues from the cursor, so no follower page is walked twice.
 */
import { chunkJob, FanoutQueue } from './fanout.queue';
import { FanoutStore } from './fanout.store';

export class FanoutDispatcher {
  constructor(
    private readonly store: FanoutStore,
    private readonly queue: Pick<FanoutQueue, 'add'>,
    private readonly chunkSize: number,
  ) {}

  async dispatch(taskId: number): Promise<void> {
    const task = await this.store.task(taskId);
    if (!task || task.status === 'done') return;
    await this.queue.add((await this.store.unfinishedChunkSeqs(task.id)).map((seq) => chunkJob(task.id, seq)));
    if (!task.dispatched) {
      let cursor = task.cursorUserId;
      let seq = task.chunksTotal;
      for (;;) {
        // A deleted blog needs no further delivery: its retract task takes it out of every inbox.
        if (task.kind === 'deliver' && (await this.store.isBlogDeleted(task.blogId))) break;
        const followerIds = await this.store.followerIdsAfter(task.authorId, cursor, this.chunkSize);
        if (followerIds.length === 0) break;
        seq += 1;
        const through = followerIds[followerIds.length - 1];
        await this.store.addChunk(task, seq, cursor, through);
        await this.queue.add([chunkJob(task.id, seq)]);
        cursor = through;
        if (followerIds.length < this.chunkSize) break;
      }
      await this.store.markDispatched(task.id);
    }
    await this.store.completeIfDone(task.id);
  }
}
