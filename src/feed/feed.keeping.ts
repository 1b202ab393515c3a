/**
 * What this process does with inboxes, decided once by FeedService's constructor (see
 * inboxKeeping below and the header of feed.service.ts):
 * - NoInboxes (feed.keeping.none.ts): no Redis, the embedded mode. It keeps none; pages come from
 *   MySQL (or SQLite) and follow changes need no outbox.
 * - KeptInboxes (feed.keeping.kept.ts): Redis, the pull model. Inboxes are kept up to date (follow
 *   changes, deliveries, deletes, the watermark), so that a deploy of another model finds them
 *   right, but pages come from MySQL.
 * - ReadInboxes (feed.keeping.read.ts): Redis, push or hybrid. Inboxes are kept, and pages read
 *   them while they are trusted.
 * FeedService applies the rules; this says where they apply.
 */
import type { Sql } from '../db/database';
import type { FollowChangeRow } from './feed.store';
import type { InboxGeneration } from './generation';
import type { Inbox, TaskInFlight } from './inbox';
import type { FanoutWatermark } from './watermark';

/** The inboxes of a process with Redis: the inbox store, the generation it trusts them in, and the fan-out watermark. */
export interface RedisInboxes {
  readonly inbox: Inbox;
  readonly generation: InboxGeneration;
  readonly watermark: FanoutWatermark;
}

export interface InboxKeeping {
  /**
   * The inboxes, for what only a process with Redis reaches: the fan-out's deliveries and
   * retracts, the relay, rebuilds, catching up, reading a page from an inbox. Throws without
   * Redis.
   */
  redis(): RedisInboxes;
  /** Whether inboxes can be used now: Redis answers (never without Redis). */
  available(): boolean;
  /** The generation inboxes are read and written in, while this process's part of the watermark is complete; null otherwise. */
  currentEpoch(): number | null;
  /** The inbox a page reads, when pages read inboxes (push, hybrid) and Redis answers; null: the page comes from MySQL. */
  pageInbox(): Inbox | null;
  /** Starts checking the Redis generation (at once, and every GENERATION_CHECK_MS). */
  start(): void;
  stop(): void;
  /** Checks the Redis generation now. */
  check(): Promise<void>;
  /** Calls `listener` whenever this process has to catch up: a new generation, Redis usable again. */
  onCatchUpNeeded(listener: () => void): void;
  /**
   * Inside a follow change's transaction: its outbox row, and the reader's inbox marked pending
   * just before the commit. Without inboxes neither: there is nothing to apply it to.
   */
  recordFollowChange(sql: Sql, change: Omit<FollowChangeRow, 'id'>): Promise<FollowChangeRow>;
  /** A new user's inbox, valid and empty, in `epoch` (the trusted generation, null: none), where pages read inboxes. */
  openInbox(userId: number, epoch: number | null): Promise<void>;
  /** Replaces the big-author generation (see FeedService.bigAuthorChange); rejects when Redis does not take it. */
  renewBigAuthors(step: 'changing' | 'changed'): Promise<void>;
  /** Replaces an author's pulled-blog token (see FeedService.pulledBlogChange); rejects when Redis does not take it. */
  renewPulledBlogs(authorId: number, step: 'changing' | 'changed'): Promise<void>;
  /** A deliver task is about to commit in `sql`, its transaction (see watermark.ts). */
  deliveryStarted(sql: Sql, task: TaskInFlight): Promise<void>;
  /** Every chunk of these deliver tasks is written. */
  deliveryFinished(tasks: ReadonlyArray<Pick<TaskInFlight, 'taskId' | 'authorId'>>): Promise<void>;
  /** The relay's pass over the watermark (watermark.ts). */
  maintainWatermark(): Promise<void>;
  /** Rebuilds a lost watermark now (seed script, benchmarks, tests). */
  syncWatermark(): Promise<void>;
  /** Finished deliver tasks still in the watermark (FanoutWatermark.finishedStillIn); 0 without one. */
  finishedInWatermark(): Promise<number>;
  /** Resolves when the watermark's background work started so far is done. */
  idle(): Promise<void>;
}
