/**
 * The outbox relay: queues the events that could not be queued when they were recorded (Redis
 * was down, or the process died between commit and enqueue), re-queues events whose jobs
 * Redis lost (a restart without persistence), and keeps the fan-out watermark in step with the
 * outbox (rebuilt when Redis lost it; tasks that finished without leaving it are dropped). Every worker process runs one; several relays may
 * pick the same event, which is harmless (same job id, idempotent writes).
 */
import type { FeedService } from '../feed/feed.service';
import { dispatchJob, FanoutQueue } from './fanout.queue';
import { FanoutStore } from './fanout.store';
import type { FanoutLog } from './fanout.service';

/** Events younger than this are left to the API's own enqueue, which is usually under way. */
const RELAY_GRACE_MS = 500;
/** Events queued per pass. */
const RELAY_BATCH = 500;

export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private failing = false;

  constructor(
    private readonly store: FanoutStore,
    private readonly queue: Pick<FanoutQueue, 'add'>,
    private readonly intervalMs: number,
    /** FANOUT_REDRIVE_AFTER_MS: a queued event not done after this long has its job re-added. */
    private readonly redriveAfterMs: number,
    private readonly warn: FanoutLog,
    /** Keeps the fan-out watermark in step with the outbox (FeedService.maintainWatermark). */
    private readonly feed?: Pick<FeedService, 'maintainWatermark'>,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.relayOnce());
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass. Returns quietly (and warns once) while Redis or MySQL is away. */
  async relayOnce(): Promise<void> {
    try {
      const pending = await this.store.pendingTaskIds(RELAY_GRACE_MS, RELAY_BATCH);
      if (pending.length > 0) {
        await this.queue.add(pending.map(dispatchJob));
        await this.store.markQueued(pending);
      }
      const stale = await this.store.staleQueuedTaskIds(this.redriveAfterMs, RELAY_BATCH);
      if (stale.length > 0) {
        // A job that used up its attempts (an outage longer than its backoff) is run again.
        await this.queue.add(stale.map(dispatchJob), { redrive: true });
        await this.store.touchQueued(stale);
      }
      await this.feed?.maintainWatermark();
      if (this.failing) this.warn('outbox relay recovered: pending fan-out tasks are queued again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.warn('outbox relay cannot queue pending fan-out tasks yet; retrying', error);
      this.failing = true;
    }
  }
}
