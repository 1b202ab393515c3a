/**
 * Redis, the pull model: the inboxes are kept up to date, pages do not read them (feed.keeping.ts).
 * ReadInboxes (feed.keeping.read.ts) adds the reading.
 */
import type { Sql } from '../db/database';
import type { InboxKeeping, RedisInboxes } from './feed.keeping';
import type { FeedStore, FollowChangeRow } from './feed.store';
import type { InboxGeneration } from './generation';
import type { Inbox, TaskInFlight } from './inbox';
import { FanoutWatermark, InFlightSource } from './watermark';

export interface KeptInboxesDeps {
  inbox: Inbox;
  /** The Redis generation this process trusts. */
  generation: InboxGeneration;
  /** The fan-out's unfinished tasks, to rebuild and upkeep the watermark (FanoutStore). */
  inFlight: InFlightSource | null;
  /** WATERMARK_SETTLE_MS: see watermark.ts. */
  watermarkSettleMs: number;
  /** The follow outbox (tb_feed_change). */
  outbox: Pick<FeedStore, 'recordFollowChange'>;
  warn: (message: string, error?: unknown) => void;
  /** The clock of the outbox's rows (created_at). */
  now: () => Date;
}

export class KeptInboxes implements InboxKeeping, RedisInboxes {
  readonly inbox: Inbox;
  readonly generation: InboxGeneration;
  readonly watermark: FanoutWatermark;
  protected readonly warn: (message: string, error?: unknown) => void;
  private readonly outbox: Pick<FeedStore, 'recordFollowChange'>;
  private readonly now: () => Date;

  constructor(deps: KeptInboxesDeps) {
    this.inbox = deps.inbox;
    this.generation = deps.generation;
    this.warn = deps.warn;
    this.outbox = deps.outbox;
    this.now = deps.now;
    this.watermark = new FanoutWatermark({
      inbox: deps.inbox,
      inFlight: deps.inFlight,
      settleMs: deps.watermarkSettleMs,
      warn: deps.warn,
    });
  }

  redis(): RedisInboxes {
    return this;
  }

  available(): boolean {
    return this.inbox.available();
  }

  currentEpoch(): number | null {
    return this.watermark.incomplete ? null : this.generation.current();
  }

  /** Pages come from MySQL in the pull model. */
  pageInbox(): Inbox | null {
    return null;
  }

  start(): void {
    this.generation.start();
  }

  stop(): void {
    this.generation.stop();
  }

  async check(): Promise<void> {
    await this.generation.check();
  }

  onCatchUpNeeded(listener: () => void): void {
    this.generation.onChange(listener);
    this.inbox.onAvailable?.(listener);
  }

  async recordFollowChange(sql: Sql, change: Omit<FollowChangeRow, 'id'>): Promise<FollowChangeRow> {
    const id = await this.outbox.recordFollowChange(sql, change, this.now());
    await this.markPendingBeforeCommit(change.readerId, id);
    return { id, ...change };
  }

  /** Marks the inbox pending just before a follow change commits; without Redis the outbox row alone carries it. */
  private async markPendingBeforeCommit(readerId: number, changeId: number): Promise<void> {
    if (!this.inbox.available()) return;
    await this.inbox.markPending(readerId, changeId).catch((error: unknown) => {
      this.warn(`marking follow change ${changeId} of user ${readerId} failed; it is applied from the outbox`, error);
    });
  }

  /** Pages do not read inboxes in the pull model: a new user's is built if a process of another model reads it. */
  async openInbox(_userId: number, _epoch: number | null): Promise<void> {}

  async renewBigAuthors(step: 'changing' | 'changed'): Promise<void> {
    return this.inbox.renewBigAuthors(step, await this.generation.confirmed());
  }

  async renewPulledBlogs(authorId: number, step: 'changing' | 'changed'): Promise<void> {
    return this.inbox.renewPulledBlogs(authorId, step, await this.generation.confirmed());
  }

  deliveryStarted(sql: Sql, task: TaskInFlight): Promise<void> {
    return this.watermark.started(sql, task);
  }

  deliveryFinished(tasks: ReadonlyArray<Pick<TaskInFlight, 'taskId' | 'authorId'>>): Promise<void> {
    return this.watermark.finished(tasks);
  }

  async maintainWatermark(): Promise<void> {
    const epoch = this.generation.current();
    if (epoch) await this.watermark.maintain(epoch);
  }

  async syncWatermark(): Promise<void> {
    await this.watermark.sync(await this.generation.confirmed());
  }

  async finishedInWatermark(): Promise<number> {
    const epoch = this.generation.current();
    return epoch ? this.watermark.finishedStillIn(epoch) : 0;
  }

  async idle(): Promise<void> {
    await this.watermark.idle();
  }
}
