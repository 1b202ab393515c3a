/**
 * The fan-out bookkeeping in MySQL: every statement on tb_fanout_task and tb_fanout_chunk.
 *
 * A task is one event of the transactional outbox: written in the same transaction as the blog
 * change, so an event exists exactly when the change committed, whatever happens to Redis or to
 * the process afterwards. The task is also the progress cursor of its fan-out: `cursor_user_id`
 * is the last follower covered by a chunk, so a dispatcher that dies resumes there.
 */
import DataLoader from 'dataloader';
import type { MysqlDatabase, Sql } from '../db/database';
import { currentTraceParent } from '../kernel/tracing';

export type TaskKind = 'deliver' | 'retract';

/** Told when a call completed a task: which (with its author), and how long it took from its event (seconds). */
export type FanoutCompletion = (task: { taskId: number; authorId: number }, lagSeconds: number) => void;

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
  /** When the event was recorded (the fan-out lag counts from here). */
  createdAt: Date;
  /** The traceparent of the request that recorded the event (kernel/tracing.ts); null when untraced. */
  traceContext: string | null;
}

/** A chunk: the followers with afterUserId < user_id <= throughUserId. */
export interface FanoutChunkRange {
  seq: number;
  afterUserId: number;
  throughUserId: number;
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
  created_at: Date;
  trace_context: string | null;
}

/** The columns of a TaskRow: task() and taskToDispatch() read the same row. */
const TASK_COLUMNS = [
  'id',
  'kind',
  'blog_id',
  'author_id',
  'score',
  'status',
  'dispatched',
  'cursor_user_id',
  'chunks_total',
  'created_at',
  'trace_context',
];

/** TASK_COLUMNS qualified by a table alias. */
function taskColumns(alias: string): string {
  return TASK_COLUMNS.map((column) => `${alias}.${column}`).join(', ');
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
    createdAt: row.created_at,
    traceContext: row.trace_context ?? null,
  };
}

/** A task completed by a call, and how long it took from its event (seconds). */
export interface FinishedTask {
  task: { taskId: number; authorId: number };
  lagSeconds: number;
}

/** A call of finishUnchunked waiting for its turn's statement. */
interface UnchunkedFinish {
  task: Pick<FanoutTask, 'id' | 'authorId' | 'createdAt'>;
  throughUserId: number;
  resolve: (finished: FinishedTask | null) => void;
  reject: (error: unknown) => void;
}

/**
 * Authors whose first followers one statement reads at most (firstFollowerIds): under load a turn
 * of the event loop commits a few dozen publishes at most; past this many the rest go in another
 * statement, so that no statement grows with the load.
 */
export const FIRST_FOLLOWERS_PER_STATEMENT = 64;

/** The keyset page of an author's followers (followerIdsAfter; see there for the index it forces). */
const FOLLOWERS_AFTER =
  'SELECT follow_user_id, user_id FROM tb_follow FORCE INDEX (ix_follow_followee) WHERE follow_user_id = ? AND user_id > ? ORDER BY user_id LIMIT ?';

export class FanoutStore {
  /** finishUnchunked's calls of this turn of the event loop, by whether they finish only while the blog is live. */
  private readonly unchunkedFinishes: { live?: UnchunkedFinish[]; any?: UnchunkedFinish[] } = {};
  /** firstFollowerIds' batches, one loader per limit (a process asks with one: FANOUT_CHUNK_SIZE + 1). */
  private readonly firstFollowers = new Map<number, DataLoader<number, number[]>>();

  constructor(
    /** MySQL only: the fan-out never runs on the embedded store, and some statements here are MySQL's alone (UPDATE ... JOIN). */
    private readonly db: MysqlDatabase,
    private readonly now: () => Date,
  ) {}

  /** Records an event, with the trace of the request that records it; call inside the transaction that changes the blog. */
  async insertTask(
    sql: Sql,
    kind: TaskKind,
    blog: { blogId: number; authorId: number; score: number },
  ): Promise<number> {
    const result = await sql.write(
      `INSERT INTO tb_fanout_task (kind, blog_id, author_id, score, status, created_at, trace_context)
       VALUES (?, ?, ?, ?, 'pending', ?, ?)`,
      [kind, blog.blogId, blog.authorId, blog.score, this.now(), currentTraceParent()],
    );
    return Number(result.insertId);
  }

  /**
   * Marks events whose jobs were just added. A worker may be finishing one of them already, and
   * its UPDATE locks the task's row and then changes its (status, id) index entry: this one must
   * lock in the same order, row first (FORCE INDEX (PRIMARY)). Left to itself, MariaDB read the
   * rows through that index, locked the entry first, and deadlocked with the worker (5 and 3
   * times in two bench:mixed runs: the batch's mark rolled back, its tasks left for the relay).
   */
  async markQueued(taskIds: readonly number[]): Promise<void> {
    if (taskIds.length === 0) return;
    await this.db.write(
      "UPDATE tb_fanout_task FORCE INDEX (PRIMARY) SET status = 'queued', queued_at = ? WHERE id IN (?) AND status = 'pending'",
      [this.now(), taskIds],
    );
  }

  /** Events still only in the outbox, created at least `olderThanMs` ago, oldest first. */
  async pendingTaskIds(olderThanMs: number, limit: number): Promise<number[]> {
    const rows = await this.db.select<{ id: string }>(
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
    const rows = await this.db.select<{ id: string }>(
      "SELECT id FROM tb_fanout_task WHERE status = 'queued' AND queued_at <= ? ORDER BY id LIMIT ?",
      [new Date(this.now().getTime() - olderThanMs), limit],
    );
    return rows.map((row) => Number(row.id));
  }

  /** Records that stale events were queued again, so the next pass leaves them alone for a while (row first, as markQueued). */
  async touchQueued(taskIds: readonly number[]): Promise<void> {
    if (taskIds.length === 0) return;
    await this.db.write(
      "UPDATE tb_fanout_task FORCE INDEX (PRIMARY) SET queued_at = ? WHERE id IN (?) AND status = 'queued'",
      [this.now(), taskIds],
    );
  }

  async task(taskId: number): Promise<FanoutTask | null> {
    const [row] = await this.db.select<TaskRow>(`SELECT ${taskColumns('t')} FROM tb_fanout_task t WHERE t.id = ?`, [
      taskId,
    ]);
    return row ? taskOf(row) : null;
  }

  /**
   * A task to dispatch, and whether its blog was deleted (or is gone), in one statement: most
   * dispatches are a publish's, where the deleted check is one statement of four.
   */
  async taskToDispatch(taskId: number): Promise<{ task: FanoutTask; blogDeleted: boolean } | null> {
    const [row] = await this.db.select<TaskRow & { blog_live: number | null }>(
      `SELECT ${taskColumns('t')}, b.deleted_at IS NULL AND b.id IS NOT NULL AS blog_live
       FROM tb_fanout_task t LEFT JOIN tb_blog b ON b.id = t.blog_id WHERE t.id = ?`,
      [taskId],
    );
    return row ? { task: taskOf(row), blogDeleted: !Number(row.blog_live) } : null;
  }

  /** How many events are not done yet (for tests, shutdown and monitoring). */
  async unfinishedTaskCount(): Promise<number> {
    const [row] = await this.db.select<{ n: string }>(
      "SELECT COUNT(*) AS n FROM tb_fanout_task WHERE status <> 'done'",
      [],
    );
    return Number(row.n);
  }

  /**
   * Records the next chunks and advances the task's cursor past them, atomically: after a crash
   * either all of it happened (resume after the last chunk) or none of it (they are made again).
   * `last`: these are the task's last chunks, and the task is marked dispatched with them (one
   * commit less than marking it after).
   */
  async addChunks(taskId: number, chunks: readonly FanoutChunkRange[], { last = false } = {}): Promise<void> {
    if (chunks.length === 0) return;
    const final = chunks[chunks.length - 1];
    await this.db.transaction(async (sql) => {
      await sql.write('INSERT INTO tb_fanout_chunk (task_id, seq, after_user_id, through_user_id, runs) VALUES ?', [
        chunks.map((chunk) => [taskId, chunk.seq, chunk.afterUserId, chunk.throughUserId, 0]),
      ]);
      await sql.write(
        'UPDATE tb_fanout_task SET cursor_user_id = ?, chunks_total = ?, dispatched = dispatched OR ? WHERE id = ?',
        [final.throughUserId, final.seq, last, taskId],
      );
    });
  }

  async markDispatched(taskId: number): Promise<void> {
    await this.db.write('UPDATE tb_fanout_task SET dispatched = TRUE WHERE id = ?', [taskId]);
  }

  async unfinishedChunks(taskId: number): Promise<FanoutChunkRange[]> {
    const rows = await this.db.select<{ seq: number; after_user_id: string; through_user_id: string }>(
      'SELECT seq, after_user_id, through_user_id FROM tb_fanout_chunk WHERE task_id = ? AND finished_at IS NULL ORDER BY seq',
      [taskId],
    );
    return rows.map((row) => ({
      seq: Number(row.seq),
      afterUserId: Number(row.after_user_id),
      throughUserId: Number(row.through_user_id),
    }));
  }

  /**
   * Counts a run of a chunk (more than 1 = redone); false when it is unknown or finished. Only a
   * job's later runs ask (FanoutExecutor.runChunk): a first run is counted by its finish, so a
   * first run that failed is not counted.
   */
  async startChunk(taskId: number, seq: number): Promise<boolean> {
    const counted = await this.db.write(
      'UPDATE tb_fanout_chunk SET runs = runs + 1 WHERE task_id = ? AND seq = ? AND finished_at IS NULL',
      [taskId, seq],
    );
    return counted.affectedRows > 0;
  }

  /**
   * Marks a chunk finished and counts it towards its task, in one statement and only the first
   * time, then marks the task done when it was the last one. With `unlessBlogDeleted` it does
   * nothing when the blog has been deleted, and says so by returning false. With `countRun` it
   * also counts the run that finishes it (one that did not call startChunk).
   */
  async finishChunk(
    taskId: number,
    seq: number,
    unlessBlogDeleted = false,
    onComplete?: FanoutCompletion,
    countRun = false,
  ): Promise<boolean> {
    const finished = await this.db.write(
      `UPDATE tb_fanout_chunk c JOIN tb_fanout_task t ON t.id = c.task_id JOIN tb_blog b ON b.id = t.blog_id
       SET c.finished_at = ?, t.chunks_done = t.chunks_done + 1${countRun ? ', c.runs = c.runs + 1' : ''}
       WHERE c.task_id = ? AND c.seq = ? AND c.finished_at IS NULL ${unlessBlogDeleted ? 'AND b.deleted_at IS NULL' : ''}`,
      [this.now(), taskId, seq],
    );
    if (finished.affectedRows === 0) return false;
    const completed = await this.completeIfDone(taskId);
    if (completed !== null) onComplete?.(completed.task, completed.lagSeconds);
    return true;
  }

  /**
   * Finishes a task whose followers, through `throughUserId`, were one chunk, delivered inside its
   * dispatch without a chunk row (fanout.dispatcher.ts): the task is dispatched, its one chunk
   * done and the task done, in one statement, only if nothing else dispatched it meanwhile. With
   * `unlessBlogDeleted` it does nothing when the blog has been deleted. Returns the completion
   * when this call finished it (null: deleted, or dispatched or finished already).
   *
   * The calls of one turn of the event loop share that statement (finishUnchunkedTogether): under
   * load the inline dispatches of concurrent publishes reach their finish together (their inbox
   * writes come back in one Redis reply), and each statement here is an autocommit, a round trip
   * and a redo-log flush, a sixth of what a publish costs MySQL. A call waits for nothing but the
   * end of its turn.
   */
  finishUnchunked(
    task: Pick<FanoutTask, 'id' | 'authorId' | 'createdAt'>,
    throughUserId: number,
    unlessBlogDeleted: boolean,
  ): Promise<FinishedTask | null> {
    return new Promise((resolve, reject) => {
      const key = unlessBlogDeleted ? 'live' : 'any';
      let batch = this.unchunkedFinishes[key];
      // The same task twice in one statement could not tell which call finished it: the second runs alone.
      if (batch?.some((finish) => finish.task.id === task.id)) {
        this.finishUnchunkedTogether([{ task, throughUserId, resolve, reject }], unlessBlogDeleted);
        return;
      }
      if (!batch) {
        batch = this.unchunkedFinishes[key] = [];
        setImmediate(() => {
          this.unchunkedFinishes[key] = undefined;
          this.finishUnchunkedTogether(batch!, unlessBlogDeleted);
        });
      }
      batch.push({ task, throughUserId, resolve, reject });
    });
  }

  /**
   * One statement finishes these tasks (distinct ids), each as finishUnchunked says. Its count of
   * rows says which it finished when it is all or none of them; otherwise (a blog deleted, or a
   * task another dispatch finished, both rare) the tasks are read back, and this statement's are
   * those with its finished_at and cursor. Only another finish of the same task in the same
   * millisecond with the same cursor could be taken for this one: its completion would then be
   * told twice, which leaves the watermark twice (a no-op) and counts one lag more.
   */
  private finishUnchunkedTogether(batch: UnchunkedFinish[], unlessBlogDeleted: boolean): void {
    const now = this.now();
    const ids = batch.map((finish) => finish.task.id);
    const cursors = batch.flatMap((finish) => [finish.task.id, finish.throughUserId]);
    const finishing = async (): Promise<Set<number>> => {
      // FORCE INDEX: with several ids MariaDB may range over the status index instead (status <>
      // 'done', few rows: EXPLAIN on bench:mixed's database), whose next-key locks would hold the
      // publishes' INSERTs of tasks until this commits; markQueued forces it for the same reason.
      const finished = await this.db.write(
        `UPDATE tb_fanout_task t FORCE INDEX (PRIMARY) JOIN tb_blog b ON b.id = t.blog_id
         SET t.cursor_user_id = CASE t.id ${batch.map(() => 'WHEN ? THEN ?').join(' ')} END,
           t.chunks_total = 1, t.chunks_done = 1, t.dispatched = TRUE, t.status = 'done', t.finished_at = ?
         WHERE t.id IN (?) AND NOT t.dispatched AND t.chunks_total = 0 AND t.status <> 'done'
           ${unlessBlogDeleted ? 'AND b.deleted_at IS NULL' : ''}`,
        [...cursors, now, ids],
      );
      if (finished.affectedRows === 0) return new Set();
      if (finished.affectedRows === batch.length) return new Set(ids);
      const rows = await this.db.select<{ id: string; cursor_user_id: string; finished_at: Date | null }>(
        "SELECT id, cursor_user_id, finished_at FROM tb_fanout_task WHERE id IN (?) AND status = 'done'",
        [ids],
      );
      const through = new Map(batch.map((finish) => [finish.task.id, finish.throughUserId]));
      return new Set(
        rows
          .filter(
            (row) =>
              row.finished_at?.getTime() === now.getTime() &&
              Number(row.cursor_user_id) === through.get(Number(row.id)),
          )
          .map((row) => Number(row.id)),
      );
    };
    finishing().then(
      (finished) => {
        for (const { task, resolve } of batch)
          resolve(
            finished.has(task.id)
              ? {
                  task: { taskId: task.id, authorId: task.authorId },
                  lagSeconds: (now.getTime() - task.createdAt.getTime()) / 1000,
                }
              : null,
          );
      },
      (error: unknown) => {
        for (const { reject } of batch) reject(error);
      },
    );
  }

  /**
   * A task just committed whose author has no follower: dispatched and done in one statement
   * (marking it dispatched, completing it and reading it back took three), and only while
   * nothing else dispatched it or recorded a chunk of it. Returns, when this call completed it,
   * the task and how long it took from its event to now (seconds).
   */
  async finishWithoutFollowers(
    task: Pick<FanoutTask, 'id' | 'authorId' | 'createdAt'>,
  ): Promise<{ task: { taskId: number; authorId: number }; lagSeconds: number } | null> {
    const now = this.now();
    const finished = await this.db.write(
      `UPDATE tb_fanout_task SET dispatched = TRUE, status = 'done', finished_at = ?
       WHERE id = ? AND NOT dispatched AND chunks_total = 0 AND status <> 'done'`,
      [now, task.id],
    );
    if (finished.affectedRows === 0) return null;
    return {
      task: { taskId: task.id, authorId: task.authorId },
      lagSeconds: (now.getTime() - task.createdAt.getTime()) / 1000,
    };
  }

  /**
   * Marks the task done once every chunk exists and has finished. Returns, when this call
   * completed it, the task with its author and how long it took from its event to now (seconds).
   */
  async completeIfDone(
    taskId: number,
  ): Promise<{ task: { taskId: number; authorId: number }; lagSeconds: number } | null> {
    const now = this.now();
    const done = await this.db.write(
      `UPDATE tb_fanout_task SET status = 'done', finished_at = ?
       WHERE id = ? AND dispatched AND chunks_done >= chunks_total AND status <> 'done'`,
      [now, taskId],
    );
    if (done.affectedRows === 0) return null;
    const [row] = await this.db.select<{ created_at: Date; author_id: string }>(
      'SELECT created_at, author_id FROM tb_fanout_task WHERE id = ?',
      [taskId],
    );
    return row
      ? {
          task: { taskId, authorId: Number(row.author_id) },
          lagSeconds: (now.getTime() - row.created_at.getTime()) / 1000,
        }
      : null;
  }

  /**
   * Follower ids of an author after `afterUserId`, ascending: one keyset page, read from the
   * (follow_user_id, user_id) index alone. Inactive followers are not filtered here: their
   * inboxes have expired, and the delivery script writes only to inboxes that exist, which
   * costs less than joining every follower to tb_user.
   *
   * FORCE INDEX makes it a range scan that starts at the cursor. Without it MariaDB 10.11 reads
   * the index by `follow_user_id` alone (a `ref` access) and filters `user_id > ?` row by row:
   * each page then scans every follower before the cursor, and a million-follower walk scanned
   * 50 million index entries (about 5 s of MariaDB CPU, measured with ANALYZE: 510,001 rows
   * read for a page of 10,000 halfway through).
   */
  async followerIdsAfter(authorId: number, afterUserId: number, limit: number): Promise<number[]> {
    const rows = await this.db.select<{ user_id: string }>(FOLLOWERS_AFTER, [authorId, afterUserId, limit]);
    return rows.map((row) => Number(row.user_id));
  }

  /**
   * An author's first `limit` followers, ascending: followerIdsAfter(authorId, 0, limit), for the
   * dispatch of a task just committed (fanout.dispatcher.ts, dispatchIfOneChunk). The calls of one
   * turn of the event loop share one statement, a UNION ALL of each author's keyset page: under
   * load the publishes of a turn commit together and each dispatches at once, and each statement
   * costs the API about 96 µs of CPU (a Redis write about 20: docs/benchmarks.md, machine AC) and
   * wakes a MariaDB thread. Calls for the same author in one turn share its rows: each dispatch
   * starts after its task committed, so a read at the end of the turn is as good as one at the
   * call. A call waits for nothing but the end of its turn (a DataLoader that dispatches on
   * setImmediate, without a cache: every turn reads afresh).
   */
  firstFollowerIds(authorId: number, limit: number): Promise<number[]> {
    let loader = this.firstFollowers.get(limit);
    if (!loader) {
      loader = new DataLoader((authorIds) => this.readFirstFollowers(authorIds, limit), {
        cache: false,
        maxBatchSize: FIRST_FOLLOWERS_PER_STATEMENT,
        batchScheduleFn: (dispatch) => setImmediate(dispatch),
      });
      this.firstFollowers.set(limit, loader);
    }
    return loader.load(authorId);
  }

  /** One statement reads these authors' first followers (an author asked twice is read once). */
  private async readFirstFollowers(authorIds: readonly number[], limit: number): Promise<number[][]> {
    const distinct = [...new Set(authorIds)];
    const statement =
      distinct.length === 1 ? FOLLOWERS_AFTER : distinct.map(() => `(${FOLLOWERS_AFTER})`).join(' UNION ALL ');
    const rows = await this.db.select<{ follow_user_id: string; user_id: string }>(
      statement,
      distinct.flatMap((authorId) => [authorId, 0, limit]),
    );
    const followers = new Map<number, number[]>(distinct.map((authorId) => [authorId, []]));
    for (const row of rows) followers.get(Number(row.follow_user_id))!.push(Number(row.user_id));
    // A UNION ALL promises no order across or within its parts' rows; each call gets its own array.
    return authorIds.map((authorId) => [...followers.get(authorId)!].sort((a, b) => a - b));
  }

  /** The followers a chunk covers, as the follow graph is now (re-queueing after a crash). */
  async followerIdsIn(authorId: number, chunk: FanoutChunkRange): Promise<number[]> {
    const rows = await this.db.select<{ user_id: string }>(
      'SELECT user_id FROM tb_follow WHERE follow_user_id = ? AND user_id > ? AND user_id <= ? ORDER BY user_id',
      [authorId, chunk.afterUserId, chunk.throughUserId],
    );
    return rows.map((row) => Number(row.user_id));
  }

  /** Deliver tasks not finished yet, with their authors and blogs' scores (the fan-out watermark's truth). */
  async unfinishedDeliveries(): Promise<Array<{ taskId: number; authorId: number; score: number }>> {
    const rows = await this.db.select<{ id: string; author_id: string; score: string }>(
      "SELECT id, author_id, score FROM tb_fanout_task WHERE status IN ('pending', 'queued') AND kind = 'deliver'",
      [],
    );
    return rows.map((row) => ({ taskId: Number(row.id), authorId: Number(row.author_id), score: Number(row.score) }));
  }

  /** The publish of this deliver task could not add it to the watermark; call inside its transaction. */
  async markUnwatermarked(sql: Sql, taskId: number): Promise<void> {
    await sql.write('UPDATE tb_fanout_task SET watermarked = FALSE WHERE id = ?', [taskId]);
  }

  /** Unfinished deliver tasks whose publish could not add them to the watermark (a handful at most: ix_fanout_task_watermarked). */
  async unwatermarkedDeliveries(limit: number): Promise<Array<{ taskId: number; authorId: number; score: number }>> {
    const rows = await this.db.select<{ id: string; author_id: string; score: string }>(
      "SELECT id, author_id, score FROM tb_fanout_task WHERE NOT watermarked AND status IN ('pending', 'queued') AND kind = 'deliver' LIMIT ?",
      [limit],
    );
    return rows.map((row) => ({ taskId: Number(row.id), authorId: Number(row.author_id), score: Number(row.score) }));
  }

  /** These tasks are in the watermark now. */
  async markWatermarked(taskIds: readonly number[]): Promise<void> {
    if (taskIds.length > 0)
      await this.db.write('UPDATE tb_fanout_task SET watermarked = TRUE WHERE id IN (?)', [taskIds]);
  }

  /** Of these task ids, those that are done, and those that do not exist. */
  async finishedAmong(taskIds: readonly number[]): Promise<{ done: number[]; missing: number[] }> {
    if (taskIds.length === 0) return { done: [], missing: [] };
    const rows = await this.db.select<{ id: string; status: string }>(
      'SELECT id, status FROM tb_fanout_task WHERE id IN (?)',
      [taskIds],
    );
    const status = new Map(rows.map((row) => [Number(row.id), row.status]));
    return {
      done: taskIds.filter((id) => status.get(id) === 'done'),
      missing: taskIds.filter((id) => !status.has(id)),
    };
  }

  /**
   * Deletes up to `limit` tasks finished before `before`, with their chunks, in statements of at
   * most `limit` rows each (short locks, small undo); returns how many tasks went. Chunks go
   * first: a purge cut short leaves finished tasks with fewer chunks, never orphan chunks.
   */
  async purgeFinished(before: Date, limit: number): Promise<number> {
    const rows = await this.db.select<{ id: string }>(
      "SELECT id FROM tb_fanout_task WHERE status = 'done' AND finished_at < ? ORDER BY finished_at LIMIT ?",
      [before, limit],
    );
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => Number(row.id));
    let deleted: number;
    do {
      deleted = (await this.db.write('DELETE FROM tb_fanout_chunk WHERE task_id IN (?) LIMIT ?', [ids, limit]))
        .affectedRows;
    } while (deleted === limit);
    await this.db.write('DELETE FROM tb_fanout_task WHERE id IN (?)', [ids]);
    return ids.length;
  }

  async isBlogDeleted(blogId: number): Promise<boolean> {
    const [row] = await this.db.select<{ deleted_at: Date | null }>('SELECT deleted_at FROM tb_blog WHERE id = ?', [
      blogId,
    ]);
    return !row || row.deleted_at !== null;
  }
}
