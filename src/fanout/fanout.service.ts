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
}

/** How often idle() looks at the outbox. */
const IDLE_POLL_MS = 25;

export class FanoutService {
  private readonly enqueuing = new Set<Promise<void>>();
  /** Events committed in this turn of the event loop, queued together at its end (null: none yet). */
  private committed: DispatchJob[] | null = null;

  private readonly store: FanoutStore;
  private readonly queue: FanoutQueue | null;
  private readonly warn: FanoutLog;
  private readonly leavingWatermark: () => Promise<number>;
  private readonly now: () => Date;

  constructor(deps: FanoutServiceDeps) {
    this.store = deps.store;
    this.queue = deps.queue;
    this.warn = deps.warn;
    this.leavingWatermark = deps.leavingWatermark ?? (async () => 0);
    this.now = deps.now ?? (() => new Date());
  }

  /** Records "deliver this blog to the author's followers"; call inside the publishing transaction. */
  recordDeliver(sql: Sql, blog: FanoutBlog): Promise<number> {
    return this.store.insertTask(sql, 'deliver', { blogId: blog.dbId, authorId: blog.authorId, score: blog.score });
  }

  /** Records "take this blog out of every inbox"; call inside the deleting transaction. */
  recordRetract(sql: Sql, blog: FanoutBlog): Promise<number> {
    return this.store.insertTask(sql, 'retract', { blogId: blog.dbId, authorId: blog.authorId, score: blog.score });
  }

  /**
   * Queues a committed event's dispatch job, in the background. The job carries the task (see
   * FreshTask), so that its first run reads no row. The events committed in one turn of the event
   * loop (concurrent publishes under load) go together: one round trip adds their jobs and one
   * statement marks them queued, a commit less per publish than one each.
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
    const taskIds = () => jobs.map((queued) => queued.taskId);
    const work = new Promise<void>((resolve) => setImmediate(resolve))
      .then(async () => {
        this.committed = null;
        await queue.add(jobs.map((queued) => dispatchJob(queued.taskId, queued.fresh)));
        await this.store.markQueued(taskIds());
      })
      .catch((error: unknown) =>
        this.warn(`fan-out tasks ${taskIds().join(', ')} stay in the outbox for the relay`, error),
      );
    this.enqueuing.add(work);
    void work.finally(() => this.enqueuing.delete(work));
  }

  /**
   * Resolves once every recorded event has been fully delivered and has left the watermark, so
   * that pages read it from inboxes alone (tests, benchmarks, drains). A Redis that does not
   * answer has no watermark to wait for: pages read MySQL until it is back.
   */
  async idle(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await Promise.allSettled([...this.enqueuing]);
    const leaving = () => this.leavingWatermark().catch(() => 0);
    while ((await this.store.unfinishedTaskCount()) > 0 || (await leaving()) > 0) {
      if (Date.now() > deadline)
        throw new Error(`fan-out still unfinished (or not out of the watermark) after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }

  /** Waits for the background enqueues of this process (shutdown). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.enqueuing]);
  }
}
