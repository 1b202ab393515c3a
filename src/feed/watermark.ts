/**
 * The fan-out watermark's upkeep (inbox.ts, "Fan-out watermark"): which deliver tasks are in
 * flight, kept right whatever happens to Redis or to the processes that publish.
 *
 * - A publish adds its task just before its transaction commits (started); the fan-out removes
 *   it when every chunk is written (finished).
 * - Redis lost the set, or it is of an older generation: it is rebuilt from the outbox's
 *   unfinished tasks, read twice WATERMARK_SETTLE_MS apart (a publish adds its task just before
 *   its commit, so one whose commit the first read missed shows in the second), and only then
 *   marked synced: until then no page trusts an inbox.
 * - A publish that could not add its task (Redis down or hanging) says so in its own transaction
 *   (tb_fanout_task.watermarked = false) and leaves the set incomplete: the process remembers
 *   it, and when Redis can be used again, before it trusts an inbox, it marks the set unsynced
 *   (every process stops trusting inboxes) and rebuilds it (catchUp).
 * - The relay's pass (maintain), every second in every worker process, adds the tasks whose
 *   publish could not add them (a publisher that died before it could repair): a read of a
 *   handful of rows, not of every task in flight. Every ORPHAN_CHECK_PASSES passes it also
 *   removes tasks that finished without leaving (a Redis error at that moment) or whose publish
 *   rolled back.
 */
import { performance } from 'node:perf_hooks';
import type { Sql } from '../db/database';
import type { Inbox, TaskInFlight } from './inbox';

/** The fan-out's bookkeeping, as far as the watermark needs it (FanoutStore). */
export interface InFlightSource {
  /** Deliver tasks not finished, with their authors and blogs' scores. */
  unfinishedDeliveries(): Promise<TaskInFlight[]>;
  /** The publish of this deliver task could not add it to the watermark: recorded in its transaction. */
  markUnwatermarked(sql: Sql, taskId: number): Promise<void>;
  /** Unfinished deliver tasks whose publish could not add them (at most `limit`). */
  unwatermarkedDeliveries(limit: number): Promise<TaskInFlight[]>;
  /** These tasks are in the watermark now. */
  markWatermarked(taskIds: readonly number[]): Promise<void>;
  /** Of these task ids, those that are finished, and those that do not exist (yet, or rolled back). */
  finishedAmong(taskIds: readonly number[]): Promise<{ done: number[]; missing: number[] }>;
}

/** A task in the watermark that MySQL does not know (its publish rolled back) is dropped after this. */
const ORPHAN_MS = 60_000;

/** The relay looks for finished and orphan tasks in the watermark at its first pass and every this many passes after (10 s by default). */
const ORPHAN_CHECK_PASSES = 10;

/** Tasks the relay adds to the watermark per pass. */
const REPAIR_BATCH = 1000;

export interface WatermarkDeps {
  inbox: Inbox;
  /** null in processes that cannot read the outbox (the embedded store has none). */
  inFlight: InFlightSource | null;
  /** WATERMARK_SETTLE_MS */
  settleMs: number;
  warn: (message: string, error?: unknown) => void;
}

export class FanoutWatermark {
  private syncing: Promise<void> | null = null;
  /** Watermark tasks that MySQL did not know, with when (monotonic ms) that was first seen. */
  private readonly orphansSeenAt = new Map<number, number>();
  /** A publish of this process could not add its task: the set is incomplete until catchUp. */
  private missedTask = false;
  private passes = 0;

  constructor(private readonly deps: WatermarkDeps) {}

  /**
   * A deliver task is about to commit (in `sql`, its transaction): readers stop trusting inboxes
   * for its author at its score until it is delivered. Never fails the publish: with Redis away,
   * the task is recorded as not in the watermark (in the same transaction, for the relay) and
   * remembered as missed, and the set is repaired before this process trusts an inbox again.
   */
  async started(sql: Sql, task: TaskInFlight): Promise<void> {
    const { inbox, warn } = this.deps;
    const added = inbox.available()
      ? await inbox.markInFlight(task).then(
          () => true,
          (error: unknown) => {
            warn(`fan-out task ${task.taskId} is not in the fan-out watermark; it is repaired`, error);
            return false;
          },
        )
      : false;
    if (added) return;
    if (!inbox.available())
      warn(
        `fan-out task ${task.taskId} is not in the fan-out watermark: Redis is away; it is repaired when Redis is back`,
      );
    this.missedTask = true;
    await this.deps.inFlight?.markUnwatermarked(sql, task.taskId);
  }

  /** Every chunk of these deliver tasks is written. */
  async finished(tasks: ReadonlyArray<Pick<TaskInFlight, 'taskId' | 'authorId'>>): Promise<void> {
    await this.deps.inbox.clearInFlight(tasks);
  }

  /** Whether a publish of this process left the set incomplete (pages must not trust inboxes). */
  get incomplete(): boolean {
    return this.missedTask;
  }

  /**
   * Before this process trusts inboxes again (at start, in a new generation, after Redis was
   * away): repairs what its own publishes could not write, rebuilds a set that is lost or of an
   * older generation, and adds the outbox's unfinished tasks (those of publishers that failed to
   * add theirs and died).
   */
  async catchUp(epoch: number): Promise<void> {
    const { inbox, inFlight } = this.deps;
    if (this.missedTask) {
      await inbox.unsyncWatermark();
      this.missedTask = false;
    }
    if (!inFlight) return;
    if (!(await inbox.inFlight(epoch)).synced) return this.sync(epoch);
    await this.addUnwatermarked(epoch);
  }

  /** Adds the tasks whose publish could not add them, and records that they are in now. */
  private async addUnwatermarked(epoch: number): Promise<void> {
    const { inbox, inFlight } = this.deps;
    if (!inFlight) return;
    for (;;) {
      const tasks = await inFlight.unwatermarkedDeliveries(REPAIR_BATCH);
      if (tasks.length === 0) return;
      await inbox.syncInFlight(tasks, false, epoch);
      await inFlight.markWatermarked(tasks.map((task) => task.taskId));
      if (tasks.length < REPAIR_BATCH) return;
    }
  }

  /** Rebuilds the set in the background (a read found it unsynced). */
  syncInBackground(epoch: number): void {
    if (this.syncing || !this.deps.inFlight) return;
    this.syncing = this.sync(epoch)
      .catch((error: unknown) => this.deps.warn('rebuilding the fan-out watermark failed', error))
      .finally(() => {
        this.syncing = null;
      });
  }

  /** Rebuilds a lost set from the unfinished tasks in MySQL, then says it is complete. */
  async sync(epoch: number): Promise<void> {
    const { inbox, inFlight, settleMs } = this.deps;
    if (!inFlight || (await inbox.inFlight(epoch)).synced) return;
    await inbox.syncInFlight(await inFlight.unfinishedDeliveries(), false, epoch);
    if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
    await inbox.syncInFlight(await inFlight.unfinishedDeliveries(), true, epoch);
  }

  /** The relay's pass (see above). */
  async maintain(epoch: number): Promise<void> {
    const { inbox, inFlight } = this.deps;
    if (!inFlight) return;
    this.passes += 1;
    if (!(await inbox.isWatermarkSynced(epoch))) return this.sync(epoch);
    await this.addUnwatermarked(epoch);
    if (this.passes % ORPHAN_CHECK_PASSES === 1) await this.dropFinished(epoch);
  }

  /** Removes tasks that finished without leaving, and orphans (their publish rolled back) seen for ORPHAN_MS. */
  private async dropFinished(epoch: number): Promise<void> {
    const { inbox, inFlight } = this.deps;
    const { tasks } = await inbox.inFlight(epoch);
    if (!inFlight || tasks.length === 0) return;
    const { done, missing } = await inFlight.finishedAmong(tasks.map((task) => task.taskId));
    const now = performance.now();
    const orphans = missing.filter((id) => {
      const seen = this.orphansSeenAt.get(id) ?? now;
      this.orphansSeenAt.set(id, seen);
      return now - seen >= ORPHAN_MS;
    });
    for (const id of [...done, ...orphans]) this.orphansSeenAt.delete(id);
    const leaving = new Set([...done, ...orphans]);
    await inbox.clearInFlight(tasks.filter((task) => leaving.has(task.taskId)));
  }

  /**
   * How many tasks the set holds that the outbox says are finished: their leave, in the worker's
   * callback just after the finishing statement, is on its way (or failed, and the relay's next
   * orphan pass drops them). Until it is 0, readers of their authors still read MySQL for them.
   */
  async finishedStillIn(epoch: number): Promise<number> {
    const { inbox, inFlight } = this.deps;
    if (!inFlight) return 0;
    const { tasks } = await inbox.inFlight(epoch);
    if (tasks.length === 0) return 0;
    return (await inFlight.finishedAmong(tasks.map((task) => task.taskId))).done.length;
  }

  /** Resolves when a sync started so far is done (tests). */
  async idle(): Promise<void> {
    await this.syncing;
  }
}
