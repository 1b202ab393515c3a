/**
 * The fan-out bookkeeping in MySQL: every statement on tb_fanout_task and tb_fanout_chunk.
 *
 * A task is one event of the transactional outbox: written in the same transaction as the blog
 * change, so an event exists exactly when the change committed, whatever happens to Redis or to
 * the process afterwards. The task is also the progress cursor of its fan-out: `cursor_user_id`
 * is the last follower covered by a chunk, so a dispatcher that dies resumes there.
 */
import { DataSource } from 'typeorm';
import { select, Sql, write } from '../db/sql';

export type TaskKind = 'deliver' | 'retract';

export interface FanoutTask {
  id: number;
  kind: TaskKind;
  blogId: number;
  authorId: number;
  score: number;
  status: 'pending' | 'queued' | 'done';
  dispatched: boolean;
  cursorUserId: number;
  chunksTotal: number;
}

export interface FanoutChunk {
  taskId: number;
  seq: number;
  afterUserId: number;
  throughUserId: number;
  finished: boolean;
}

interface TaskRow {
  id: string;
  kind: TaskKind;
  blog_id: string;
  author_id: string;
  score: string;
  status: FanoutTask['status'];
  dispatched: number;
  cursor_user_id: string;
  chunks_total: number;
}

function taskOf(row: TaskRow): FanoutTask {
  return {
    id: Number(row.id),
    kind: row.kind,
    blogId: Number(row.blog_id),
    authorId: Number(row.author_id),
    score: Number(row.score),
    status: row.status,
    dispatched: Boolean(row.dispatched),
    cursorUserId: Number(row.cursor_user_id),
    chunksTotal: Number(row.chunks_total),
  };
}

export class FanoutStore {
  constructor(
    private readonly db: DataSource,
    private readonly now: () => Date,
  ) {}

  /** Records an event; call inside the transaction that changes the blog. */
  async insertTask(sql: Sql, kind: TaskKind, blog: { blogId: number; authorId: number; score: number }): Promise<number> {
    const result = await write(
      sql,
      `INSERT INTO tb_fanout_task (kind, blog_id, author_id, score, status, created_at)
       VALUES (?, ?, ?, ?, 'pending', ?)`,
      [kind, blog.blogId, blog.authorId, blog.score, this.now()],
    );
    return Number(result.insertId);
  }

  async markQueued(taskIds: readonly number[]): Promise<void> {
    if (taskIds.length === 0) return;
    await write(this.db, "UPDATE tb_fanout_task SET status = 'queued', queued_at = ? WHERE id IN (?) AND status = 'pending'", [
      this.now(),
      taskIds,
    ]);
  }

  /** Events still only in the outbox, created at least `olderThanMs` ago, oldest first. */
  async pendingTaskIds(olderThanMs: number, limit: number): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db,
      "SELECT id FROM tb_fanout_task WHERE status = 'pending' AND created_at <= ? ORDER BY id LIMIT ?",
      [new Date(this.now().getTime() - olderThanMs), limit],
    );
    return rows.map((row) => Number(row.id));
  }

  /**
   * Events queued at least `olderThanMs` ago and still not done. Normally their jobs are just
   * running; but a Redis that restarted without persistence lost them, and re-adding is the
   * only way they finish. Re-adding a job that still exists is a no-op (same job id).
   */
  async staleQueuedTaskIds(olderThanMs: number, limit: number): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db,
      "SELECT id FROM tb_fanout_task WHERE status = 'queued' AND queued_at <= ? ORDER BY id LIMIT ?",
      [new Date(this.now().getTime() - olderThanMs), limit],
    );
    return rows.map((row) => Number(row.id));
  }

  /** Records that stale events were queued again, so the next pass leaves them alone for a while. */
  async touchQueued(taskIds: readonly number[]): Promise<void> {
    if (taskIds.length === 0) return;
    await write(this.db, "UPDATE tb_fanout_task SET queued_at = ? WHERE id IN (?) AND status = 'queued'", [this.now(), taskIds]);
  }

  async task(taskId: number): Promise<FanoutTask | null> {
    const [row] = await select<TaskRow>(
      this.db,
      `SELECT id, kind, blog_id, author_id, score, status, dispatched, cursor_user_id, chunks_total
       FROM tb_fanout_task WHERE id = ?`,
      [taskId],
    );
    return row ? taskOf(row) : null;
  }

  /** How many events are not done yet (for tests, shutdown and monitoring). */
  async unfinishedTaskCount(): Promise<number> {
    const [row] = await select<{ n: string }>(this.db, "SELECT COUNT(*) AS n FROM tb_fanout_task WHERE status <> 'done'", []);
    return Number(row.n);
  }

  /**
   * Creates the next chunk and advances the task's cursor past it, atomically: after a crash
   * either both happened (resume after the chunk) or neither did (the chunk is made again).
   */
  async addChunk(task: FanoutTask, seq: number, afterUserId: number, throughUserId: number): Promise<void> {
    await this.db.transaction(async (sql) => {
      await write(
        sql,
        'INSERT INTO tb_fanout_chunk (task_id, seq, after_user_id, through_user_id, runs) VALUES (?, ?, ?, ?, 0)',
        [task.id, seq, afterUserId, throughUserId],
      );
      await write(sql, 'UPDATE tb_fanout_task SET cursor_user_id = ?, chunks_total = ? WHERE id = ?', [
        throughUserId,
        seq,
        task.id,
      ]);
    });
  }

  async markDispatched(taskId: number): Promise<void> {
    await write(this.db, 'UPDATE tb_fanout_task SET dispatched = TRUE WHERE id = ?', [taskId]);
  }

  async unfinishedChunkSeqs(taskId: number): Promise<number[]> {
    const rows = await select<{ seq: number }>(
      this.db,
      'SELECT seq FROM tb_fanout_chunk WHERE task_id = ? AND finished_at IS NULL ORDER BY seq',
      [taskId],
    );
    return rows.map((row) => Number(row.seq));
  }

  /** Loads a chunk and counts this run of it (a count above 1 means it was redone). */
  async startChunk(taskId: number, seq: number): Promise<FanoutChunk | null> {
    await write(this.db, 'UPDATE tb_fanout_chunk SET runs = runs + 1 WHERE task_id = ? AND seq = ?', [taskId, seq]);
    const [row] = await select<{ after_user_id: string; through_user_id: string; finished_at: Date | null }>(
      this.db,
      'SELECT after_user_id, through_user_id, finished_at FROM tb_fanout_chunk WHERE task_id = ? AND seq = ?',
      [taskId, seq],
    );
    if (!row) return null;
    return {
      taskId,
      seq,
      afterUserId: Number(row.after_user_id),
      throughUserId: Number(row.through_user_id),
      finished: row.finished_at !== null,
    };
  }

  /** Marks a chunk finished; counts it towards its task only the first time. */
  async finishChunk(taskId: number, seq: number): Promise<void> {
    await this.db.transaction(async (sql) => {
      const finished = await write(
        sql,
        'UPDATE tb_fanout_chunk SET finished_at = ? WHERE task_id = ? AND seq = ? AND finished_at IS NULL',
        [this.now(), taskId, seq],
      );
      if (finished.affectedRows === 1) {
        await write(sql, 'UPDATE tb_fanout_task SET chunks_done = chunks_done + 1 WHERE id = ?', [taskId]);
      }
    });
  }

  /** Marks the task done once every chunk exists and has finished. */
  async completeIfDone(taskId: number): Promise<void> {
    await write(
      this.db,
      `UPDATE tb_fanout_task SET status = 'done', finished_at = ?
       WHERE id = ? AND dispatched AND chunks_done >= chunks_total AND status <> 'done'`,
      [this.now(), taskId],
    );
  }

  /** Follower ids of an author after `afterUserId`, ascending: one keyset page. */
  async followerIdsAfter(authorId: number, afterUserId: number, limit: number): Promise<number[]> {
    const rows = await select<{ user_id: string }>(
      this.db,
      'SELECT user_id FROM tb_follow WHERE follow_user_id = ? AND user_id > ? ORDER BY user_id LIMIT ?',
      [authorId, afterUserId, limit],
    );
    return rows.map((row) => Number(row.user_id));
  }

  /** The followers a chunk covers, as the follow graph is now. */
  async followerIdsIn(authorId: number, chunk: FanoutChunk): Promise<number[]> {
    const rows = await select<{ user_id: string }>(
      this.db,
      'SELECT user_id FROM tb_follow WHERE follow_user_id = ? AND user_id > ? AND user_id <= ? ORDER BY user_id',
      [authorId, chunk.afterUserId, chunk.throughUserId],
    );
    return rows.map((row) => Number(row.user_id));
  }

  async isBlogDeleted(blogId: number): Promise<boolean> {
    const [row] = await select<{ deleted_at: Date | null }>(this.db, 'SELECT deleted_at FROM tb_blog WHERE id = ?', [blogId]);
    return !row || row.deleted_at !== null;
  }
}
