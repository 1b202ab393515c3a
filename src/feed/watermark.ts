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
 * - A publish that could not add its task (Redis down or hanging) leaves the set incomplete:
 *   the process remembers it, and when Redis can be used again, before it trusts an inbox, it
 *   marks the set unsynced (every process stops trusting inboxes) and rebuilds it (catchUp).
 * - The relay's pass (maintain), every second in every worker process, adds the outbox's
 *   unfinished tasks (a task whose publisher died before it could repair is in the set within a
 *   pass) and removes tasks that finished without leaving (a Redis error at that moment) or whose
 *   publish rolled back.
 */
import { performance } from 'node:perf_hooks';
import type { Inbox, TaskInFlight } from './inbox';

/** The fan-out's bookkeeping, as far as the watermark needs it (FanoutStore). */
export interface InFlightSource {
  /** Deliver tasks not finished, with their authors and blogs' scores. */
  unfinishedDeliveries(): Promise<TaskInFlight[]>;
  /** Of these task ids, those that are finished, and those that do not exist (yet, or rolled back). */
  finishedAmong(taskIds: readonly number[]): Promise<{ done: number[]; missing: number[] }>;
}

/** A task in the watermark that MySQL does not know (its publish rolled back) is dropped after this. */
const ORPHAN_MS = 60_000;

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

  constructor(private readonly deps: WatermarkDeps) {}

  /**
   * A deliver task is about to commit: readers stop trusting inboxes for its author at its score
   * until it is delivered. Never fails the publish: with Redis away, the task is remembered as
   * missed and the set repaired before this process trusts an inbox again.
   */
  async started(task: TaskInFlight): Promise<void> {
    const { inbox, warn } = this.deps;
    if (!inbox.available()) {
      this.missedTask = true;
      warn(`fan-out task ${task.taskId} is not in the fan-out watermark: Redis is away; it is repaired when Redis is back`);
      return;
    }
    await inbox.markInFlight(task).catch((error: unknown) => {
      this.missedTask = true;
      warn(`fan-out task ${task.taskId} is not in the fan-out watermark; it is repaired`, error);
    });
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
    await inbox.syncInFlight(await inFlight.unfinishedDeliveries(), false, epoch);
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
    const { synced, tasks } = await inbox.inFlight(epoch);
    if (!synced) return this.sync(epoch);
    await inbox.syncInFlight(await inFlight.unfinishedDeliveries(), false, epoch);
    if (tasks.length === 0) return;
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

  /** Resolves when a sync started so far is done (tests). */
  async idle(): Promise<void> {
    await this.syncing;
  }
}
