/**
 * The purge of fan-out bookkeeping: tasks (tb_fanout_task) finished more than
 * FANOUT_RETENTION_DAYS ago are deleted with their chunks (tb_fanout_chunk), a batch at a time.
 * A finished task is only a record (the blog and the inboxes hold the result); kept for ever,
 * a million-follower deliver leaves 1,000 chunk rows per blog. Every worker process runs one;
 * two purging at once delete the same rows, which is harmless.
 */
import type { FanoutLog } from './fanout.service';
import { FanoutStore } from './fanout.store';

/** How often each worker process purges: the table grows by minutes, retention counts in days. */
export const PURGE_INTERVAL_MS = 5 * 60 * 1000;
/** Rows per DELETE: each statement locks little and for a short time, beside the live fan-out. */
export const PURGE_BATCH = 1000;
/** Batches per pass at most, so one pass stays short; a backlog is worked off over a few passes. */
export const PURGE_BATCHES_PER_PASS = 100;

export interface FanoutPurgerDeps {
  store: FanoutStore;
  /** FANOUT_RETENTION_DAYS: tasks finished longer ago than this are deleted. */
  retentionDays: number;
  now: () => Date;
  warn: FanoutLog;
}

export class FanoutPurger {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();

  private readonly store: FanoutStore;
  private readonly retentionDays: number;
  private readonly now: () => Date;
  private readonly warn: FanoutLog;

  constructor(deps: FanoutPurgerDeps) {
    this.store = deps.store;
    this.retentionDays = deps.retentionDays;
    this.now = deps.now;
    this.warn = deps.warn;
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.purgeOnce());
    }, PURGE_INTERVAL_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass; returns how many tasks were deleted. Never throws (MySQL away: next pass). */
  async purgeOnce(): Promise<number> {
    const before = new Date(this.now().getTime() - this.retentionDays * 86_400_000);
    let purged = 0;
    try {
      for (let batch = 0; batch < PURGE_BATCHES_PER_PASS; batch += 1) {
        const deleted = await this.store.purgeFinished(before, PURGE_BATCH);
        purged += deleted;
        if (deleted < PURGE_BATCH) break;
      }
    } catch (error) {
      this.warn('purging finished fan-out tasks failed; the next pass retries', error);
    }
    return purged;
  }
}
