/**
 * The outbox relay, every OUTBOX_RELAY_INTERVAL_MS in every worker process:
 * - queues the fan-out events that could not be queued when they were recorded (Redis was down,
 *   or the process died between commit and enqueue), and re-queues events whose jobs Redis lost
 *   (a restart without persistence);
 * - keeps the fan-out watermark in step with the outbox (feed/watermark.ts);
 * - applies the follow changes of the follow outbox that the process that made them did not
 *   (it died, or Redis was away: feed/feed.service.ts).
 * The three are independent: one that fails (BullMQ refusing jobs, say) does not stop the others.
 * Several relays may pick the same event or change, which is harmless (same job id, idempotent
 * writes, versioned changes).
 */
import type { FeedService } from '../feed/feed.service';
import { dispatchJob, FanoutQueue } from './fanout.queue';
import { FanoutStore } from './fanout.store';
import type { FanoutLog } from './fanout.service';

/**
 * Events younger than this are left to the API's own enqueue, which is usually under way (its
 * mark comes MARK_QUEUED_AFTER_MS, 100 ms, after its job: keep this well above).
 */
const RELAY_GRACE_MS = 500;
/** Events queued per pass. */
const RELAY_BATCH = 500;

export interface OutboxRelayDeps {
  store: FanoutStore;
  queue: Pick<FanoutQueue, 'add'>;
  /** OUTBOX_RELAY_INTERVAL_MS: the time between passes. */
  intervalMs: number;
  /** FANOUT_REDRIVE_AFTER_MS: a queued event not done after this long has its job re-added. */
  redriveAfterMs: number;
  warn: FanoutLog;
  /** Keeps the watermark and the inboxes in step with the outboxes. */
  feed?: Pick<FeedService, 'maintainWatermark' | 'relayFollowChanges'>;
}

export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  /** Steps failing now, each warned of once. */
  private readonly failing = new Set<string>();

  private readonly store: FanoutStore;
  private readonly queue: Pick<FanoutQueue, 'add'>;
  private readonly intervalMs: number;
  private readonly redriveAfterMs: number;
  private readonly warn: FanoutLog;
  private readonly feed?: Pick<FeedService, 'maintainWatermark' | 'relayFollowChanges'>;

  constructor(deps: OutboxRelayDeps) {
    this.store = deps.store;
    this.queue = deps.queue;
    this.intervalMs = deps.intervalMs;
    this.redriveAfterMs = deps.redriveAfterMs;
    this.warn = deps.warn;
    this.feed = deps.feed;
  }

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

  /** One pass. Returns quietly (and warns once per step) while Redis or MySQL is away. */
  async relayOnce(): Promise<void> {
    await Promise.all([
      this.step('queue pending fan-out tasks', () => this.queuePending()),
      this.step('keep the fan-out watermark', async () => this.feed?.maintainWatermark()),
      this.step('apply follow changes', async () => this.feed?.relayFollowChanges()),
    ]);
  }

  private async queuePending(): Promise<void> {
    const pending = await this.store.pendingTaskIds(RELAY_GRACE_MS, RELAY_BATCH);
    if (pending.length > 0) {
      await this.queue.add(pending.map((taskId) => dispatchJob(taskId)));
      await this.store.markQueued(pending);
    }
    const stale = await this.store.staleQueuedTaskIds(this.redriveAfterMs, RELAY_BATCH);
    if (stale.length > 0) {
      // A job that used up its attempts (an outage longer than its backoff) is run again.
      await this.queue.add(
        stale.map((taskId) => dispatchJob(taskId)),
        { redrive: true },
      );
      await this.store.touchQueued(stale);
    }
  }

  private async step(what: string, run: () => Promise<unknown>): Promise<void> {
    try {
      await run();
      if (this.failing.delete(what)) this.warn(`outbox relay recovered: ${what}`);
    } catch (error) {
      if (!this.failing.has(what)) this.warn(`outbox relay cannot ${what} yet; retrying`, error);
      this.failing.add(what);
    }
  }
}
