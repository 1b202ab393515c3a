/**
 * Fan-out, the API side: record an event with the blog change, then hand it to the queue.
 *
 * The request never waits for delivery. `record*` writes the event into the outbox inside the
 * caller's transaction; `enqueue` runs after the commit and only adds one small job, without
 * awaiting it in the request. If Redis is down the event stays 'pending' in the outbox and the
 * relay (fanout.relay.ts) queues it when Redis is back: publishing succeeds either way.
 */
import type { Sql } from '../db/database';
import { currentTraceParent } from '../kernel/tracing';
import { DispatchJob, dispatchJob, FanoutQueue } from './fanout.queue';
import type { TaskKind } from './fanout.store';
import { FanoutStore } from './fanout.store';

export interface FanoutBlog {
  dbId: number;
  authorId: number;
  score: number;
}

export type FanoutLog = (message: string, error?: unknown) => void;

export interface FanoutServiceDeps {
  store: FanoutStore;
  /** null without Redis (the embedded mode, pull model), where no event is ever recorded. */
  queue: FanoutQueue | null;
  warn: FanoutLog;
  /**
   * Finished deliver tasks not yet out of the fan-out watermark (FeedService.finishedInWatermark):
   * a task is done in the outbox a moment before the worker takes it out, and until then its
   * author's readers still read it from MySQL. Absent: none.
   */
  leavingWatermark?: () => Promise<number>;
  /** The clock of the outbox's rows (FanoutStore's). */
  now?: () => Date;
  /** MARK_QUEUED_AFTER_MS unless given (tests). */
  markQueuedAfterMs?: number;
}

/**
 * How long the tasks of added jobs wait to be marked queued, so that one statement marks many.
 * The mark only tells the relay that a task needs no job from it (the relay looks at tasks
 * pending for 500 ms, RELAY_GRACE_MS: keep this well below), and a mark after the task is done
 * changes nothing (only pending tasks are marked). Under load one statement marks a tenth of a
 * second of publishes instead of one turn of the event loop's (2 or 3): a statement and a commit
 * less per publish, a cost that was its own round trip to MySQL.
 */
export const MARK_QUEUED_AFTER_MS = 100;

/**
 * Dispatches a task of this process's own publishes here (FanoutWorkers.dispatchHere): null
 * when it was delivered and finished, else the job to queue.
 */
export type DispatchHere = (job: DispatchJob) => Promise<DispatchJob | null>;

/** How often idle() looks at the outbox. */
const IDLE_POLL_MS = 25;

export class FanoutService {
  private readonly enqueuing = new Set<Promise<void>>();
  /** Events committed in this turn of the event loop, queued together at its end (null: none yet). */
  private committed: DispatchJob[] | null = null;
  /** Tasks whose jobs were added, to be marked queued (MARK_QUEUED_AFTER_MS), and the timer that will. */
  private unmarked: number[] = [];
  private marking: NodeJS.Timeout | null = null;
  /** The in-process workers' dispatch, while they run (runDispatchesHere). */
  private here: DispatchHere | null = null;

  private readonly store: FanoutStore;
  private readonly queue: FanoutQueue | null;
  private readonly warn: FanoutLog;
  private readonly leavingWatermark: () => Promise<number>;
  private readonly now: () => Date;
  private readonly markQueuedAfterMs: number;

  constructor(deps: FanoutServiceDeps) {
    this.store = deps.store;
    this.queue = deps.queue;
    this.warn = deps.warn;
    this.leavingWatermark = deps.leavingWatermark ?? (async () => 0);
    this.now = deps.now ?? (() => new Date());
    this.markQueuedAfterMs = deps.markQueuedAfterMs ?? MARK_QUEUED_AFTER_MS;
  }

  /** Records "deliver this blog to the author's followers"; call inside the publishing transaction. */
  recordDeliver(sql: Sql, blog: FanoutBlog): Promise<number> {
    return this.store.insertTask(sql, 'deliver', { blogId: blog.dbId, authorId: blog.authorId, score: blog.score });
  }

  /**
   * Where this process runs fan-out workers, its committed events are first offered to them
   * (FanoutWorkers.dispatchHere), and only those they leave are queued; null: every event is
   * queued (the workers stopped, or none run here).
   */
  runDispatchesHere(here: DispatchHere | null): void {
    this.here = here;
  }

  /** Records "take this blog out of every inbox"; call inside the deleting transaction. */
  recordRetract(sql: Sql, blog: FanoutBlog): Promise<number> {
    return this.store.insertTask(sql, 'retract', { blogId: blog.dbId, authorId: blog.authorId, score: blog.score });
  }

  /**
   * Queues a committed event's dispatch job, in the background. The job carries the task (see
   * FreshTask), so that its first run reads no row. The events committed in one turn of the event
   * loop (concurrent publishes under load) go together: one round trip adds their jobs, and one
   * statement marks the tasks of every job added within MARK_QUEUED_AFTER_MS queued. Where this
   * process runs workers, they dispatch the events they can here first (runDispatchesHere): those
   * are never marked queued, so that if this process dies before they finish, the relay queues
   * them as it queues an event whose enqueue failed.
   */
  enqueue(taskId: number, kind: TaskKind, blog: FanoutBlog): void {
    const { queue } = this;
    if (!queue) {
      this.warn(`fan-out task ${taskId} was recorded, but there is no queue (no Redis): it stays in the outbox`);
      return;
    }
    const trace = currentTraceParent();
    const job: DispatchJob = {
      taskId,
      fresh: {
        kind,
        blogId: blog.dbId,
        authorId: blog.authorId,
        score: blog.score,
        queuedAt: this.now().getTime(),
        ...(trace ? { trace } : {}),
      },
    };
    if (this.committed) {
      this.committed.push(job);
      return;
    }
    const jobs = [job];
    this.committed = jobs;
    const work = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.committed = null;
      const { here } = this;
      return here ? this.dispatchHereFirst(here, queue, jobs) : this.queueJobs(queue, jobs);
    });
    this.enqueuing.add(work);
    void work.finally(() => this.enqueuing.delete(work));
  }

  /**
   * Offers each job to the workers of this process, and queues each one they leave as soon as
   * they say so: a task past one chunk (known after one read) does not wait for the delivery of
   * the small ones beside it.
   */
  private async dispatchHereFirst(here: DispatchHere, queue: FanoutQueue, jobs: DispatchJob[]): Promise<void> {
    await Promise.all(
      jobs.map(async (job) => {
        const left = await here(job).catch((error: unknown) => {
          this.warn(`fan-out task ${job.taskId} could not be dispatched here; it is queued`, error);
          return job;
        });
        if (left) await this.queueJobs(queue, [left]);
      }),
    );
  }

  /** Adds these jobs in one round trip and marks their tasks queued soon; on failure they stay pending, for the relay. */
  private async queueJobs(queue: FanoutQueue, jobs: DispatchJob[]): Promise<void> {
    try {
      await queue.add(jobs.map((job) => dispatchJob(job.taskId, job.fresh)));
      this.markQueuedSoon(jobs.map((job) => job.taskId));
    } catch (error) {
      this.warn(`fan-out tasks ${jobs.map((job) => job.taskId).join(', ')} stay in the outbox for the relay`, error);
    }
  }

  private markQueuedSoon(taskIds: number[]): void {
    this.unmarked.push(...taskIds);
    if (this.marking) return;
    this.marking = setTimeout(() => void this.markQueuedNow(), this.markQueuedAfterMs);
    // A process that exits first leaves them pending: the relay adds their jobs again (a no-op) and marks them.
    this.marking.unref();
  }

  private markQueuedNow(): Promise<void> {
    if (this.marking) clearTimeout(this.marking);
    this.marking = null;
    const taskIds = this.unmarked;
    this.unmarked = [];
    if (taskIds.length === 0) return Promise.resolve();
    const work = this.store
      .markQueued(taskIds)
      .catch((error: unknown) =>
        this.warn(
          `fan-out tasks ${taskIds.join(', ')} are queued but not marked: the relay adds their jobs again (a no-op) and marks them`,
          error,
        ),
      );
    this.enqueuing.add(work);
    void work.finally(() => this.enqueuing.delete(work));
    return work;
  }

  /**
   * Resolves once every recorded event has been fully delivered and has left the watermark, so
   * that pages read it from inboxes alone (tests, benchmarks, drains). A Redis that does not
   * answer has no watermark to wait for: pages read MySQL until it is back.
   */
  async idle(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // Marks included: a test that counts statements after idle() must not see one land later.
    await this.flush();
    const leaving = () => this.leavingWatermark().catch(() => 0);
    while ((await this.store.unfinishedTaskCount()) > 0 || (await leaving()) > 0) {
      if (Date.now() > deadline)
        throw new Error(`fan-out still unfinished (or not out of the watermark) after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }

  /** Waits for the background enqueues of this process, and marks their tasks queued now (shutdown). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.enqueuing]);
    await this.markQueuedNow();
  }
}
