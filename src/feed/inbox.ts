/**
 * The inbox: what a reader's cached feed is, and every operation on it, as one interface with
 * two implementations of exactly the same semantics:
 * - RedisInbox (inbox.redis.ts): Lua scripts over a sorted set and a hash per reader, used by
 *   the service;
 * - MemoryInbox (inbox.memory.ts): the same operations on plain maps, the specification the
 *   scripts are tested against (test/integration/inbox-conformance.test.ts) and the inbox of the model
 *   test of the feed rules (test/unit/feed-model.test.ts).
 * Nothing but feed/ and the fan-out executor (through FeedService) writes to an inbox.
 *
 * ## What an inbox holds
 * - entries: blog ids with their score (the blog's created_at in epoch ms, from the database row,
 *   never the time of the fan-out), read in canonical order (score DESC, id DESC);
 * - floor: the inbox holds *every* pushed blog of the reader's feed whose score is at least
 *   `floor`, except blogs whose fan-out is still in flight (see the watermark below). Below the
 *   floor it knows nothing, holds nothing, and no writer ever adds anything there; pages
 *   continue below it from MySQL (the cold path). A rebuild sets the floor (0 when the snapshot
 *   held the whole feed); trimming to FEED_MAX_ITEMS and a follow's backfill cut raise it. Trust
 *   is this explicit number, never inferred from the lowest entry;
 * - the follow state per followee it has seen changes of (a signed version, below);
 * - building: a rebuild from a MySQL snapshot is under way; readers do not trust it yet.
 *
 * ## Ordering per reader: versions
 * Every follow or unfollow of reader V increments tb_user.feed_version of V in the same
 * transaction, under V's row lock, so V's changes carry versions in commit order. Redis may see
 * them in another order (two devices, a double click, a slow request). Each change is applied
 * with its version, and an inbox records, per followee, the version of the last change it
 * applied (+v followed, -v unfollowed) and, as `base`, the version its rebuild snapshot saw.
 * A change whose version is not newer than both is stale and changes no entry: a fast unfollow
 * then follow cannot end with the follow undone. An unfollow first records itself, then reads
 * the entries, asks MySQL which are the followee's, and removes them only if no newer change of
 * the pair came in between. A follow replaces whatever entries of the followee the inbox still
 * holds (an overtaken unfollow may have left some, deleted ones included) with the followee's
 * newest blogs, then asks MySQL which of those were deleted meanwhile and takes them back.
 *
 * A follow change also marks the inbox pending just before its transaction commits, and clears
 * the mark once applied: between the commit and the apply, readers do not trust the inbox (the
 * same reason as the watermark below, for one reader). A mark left by a process that died is
 * stale after PENDING_STALE_MS, and the inbox is then rebuilt.
 *
 * ## Deliveries: the fan-out's chunks
 * A chunk is made from the follow graph as MySQL showed it at `readAt` (MySQL's clock). It is
 * written only to inboxes that exist (a missing inbox is rebuilt from MySQL when read), at or
 * above their floor, and not to an inbox whose snapshot is newer than the chunk (`since` >
 * readAt: the snapshot has the blog already if it belongs there). After writing, the executor
 * asks MySQL who still follows the author and takes the blog back from the others, unless the
 * inbox saw a newer follow of the pair (FeedService.deliver). The inbox's own record of an
 * unfollow does not refuse a chunk: a re-follow may be committed and not yet applied, and the
 * blog would then be lost; MySQL, asked after the write, decides.
 *
 * ## Rebuild
 * begin (marks the inbox building, remembers `since`, a MySQL time taken just before) ->
 * snapshot (one consistent MySQL read: V's feed_version, followees and newest feed entries) ->
 * finish. Deliveries and retractions that come during the build are recorded; the finish adds the
 * snapshot, drops deliveries of authors the snapshot does not have V follow, keeps retracted
 * blogs out, and sets floor and base. A follow change newer than the snapshot that arrived during
 * the build makes the finish give up (the inbox is dropped; the next read starts again).
 *
 * ## Fan-out watermark
 * Beside the inboxes, one set of the deliver tasks in flight with their blogs' scores. Publishing
 * adds the task before its transaction commits; the fan-out removes it once every chunk is
 * written. Readers get its lowest score with the inbox read (same round trip) and read the span
 * above it from MySQL. The set also holds a marker that it is complete: after Redis lost it,
 * readers trust no inbox until it has been rebuilt from the unfinished tasks in MySQL.
 *
 * ## Big-author generation
 * Beside the watermark, a random token replaced when an author's first not-fanned-out blog
 * commits (hybrid): just before the commit by an unsettled one (no list is kept meanwhile, as a
 * pending inbox is not trusted), just after by a settled one. Each read returns it with the inbox's follow version, so a reader's list of
 * big followees can be kept between pages (FeedService) and re-read only when one of them moved.
 * A token, not a counter: after Redis lost it, a counter would start again and meet numbers that
 * lists kept before the loss carry.
 */
import type { FeedPosition, ScoredId } from '../kernel/pagination/cursor';

/** A change of the follow graph of one reader, with its version (see above). */
export interface FollowChange {
  version: number;
  authorId: number;
}

/** What a read found. */
export type InboxView =
  /** `version`: the reader's follow version the inbox is at (the highest it has applied). */
  | { state: 'valid'; floor: number; entries: ScoredId[]; version: number }
  | { state: 'missing' }
  | { state: 'building' }
  /** A follow change of the reader is committed or about to be, and not applied yet. */
  | { state: 'pending'; since: number };

/** The fan-out watermark as a reader sees it. */
export interface Watermark {
  /** false when Redis lost the set (or never had it): no inbox can be trusted until it is synced. */
  synced: boolean;
  /** The lowest score of a blog whose fan-out is in flight; null when none is. */
  oldest: number | null;
}

/** What one read of an inbox returns (one round trip). */
export interface InboxRead {
  view: InboxView;
  watermark: Watermark;
  /**
   * The big-author generation: a random token, replaced each time an author gets their first
   * blog that was not fanned out (hybrid). A list of a reader's big followees, kept with the
   * inbox's `version` and this token, is still right while neither has changed. null when Redis
   * holds none (never set, or lost with everything else), or while it is unsettled: no kept list
   * may be trusted then.
   */
  bigAuthors: string | null;
}

/** What a rebuild installs, from one MySQL snapshot of the reader's feed. */
export interface FeedSnapshot {
  /** tb_user.feed_version of the reader in the snapshot. */
  version: number;
  /** Who the reader followed in the snapshot. */
  followeeIds: number[];
  /** The entries the inbox holds of the newest FEED_MAX_ITEMS of the feed. */
  entries: ScoredId[];
  /** 0 when those were the whole feed, else just above the lowest of them. */
  floor: number;
}

/** A delivery chunk: one blog for some readers, as the follow graph was at `readAt`. */
export interface Delivery {
  entry: ScoredId;
  authorId: number;
  /** MySQL's clock (ms) just after the chunk's follower list was read. */
  readAt: number;
}

/** The first character of an unsettled big-author generation. */
export const UNSETTLED = '~';

/** An unsettled big-author generation (its publish died before its commit) expires after this. */
export const BIG_AUTHOR_CHANGE_MS = 60_000;

export type BuildOutcome = 'done' | 'raced' | 'lost';

export interface Inbox {
  /**
   * The first `limit` entries after `from` (at or above the floor), and the watermark: one round
   * trip.
   */
  read(readerId: number, from: FeedPosition, limit: number): Promise<InboxRead>;
  /**
   * Replaces the big-author generation (see InboxRead):
   * - 'changing': an author's first not-fanned-out blog is about to commit; until 'changed',
   *   the generation is unsettled and no list is kept or trusted (it expires after
   *   BIG_AUTHOR_CHANGE_MS if the publishing process dies);
   * - 'changed': that blog is committed (or rolled back);
   * - 'missing': only when there is none (the first reader after a loss).
   */
  renewBigAuthors(reason: 'changing' | 'changed' | 'missing'): Promise<void>;

  /** Writes one blog into the inboxes of many readers (see Deliveries). */
  deliver(readerIds: readonly number[], delivery: Delivery): Promise<void>;
  /** Takes a blog back from readers who do not follow its author as of `version` (read with it). */
  retractUnfollowed(readerId: number, blogId: number, change: FollowChange, readAt: number): Promise<void>;
  /** Takes a deleted blog out of the inboxes of many readers. */
  retract(readerIds: readonly number[], blogId: number): Promise<void>;

  /** Every blog id the inbox holds; null when it does not exist. */
  blogIds(readerId: number): Promise<number[] | null>;
  /**
   * A follow: replaces the followee's entries (`stale`: those the inbox held) with its newest
   * ones; `floor`: the inbox is complete only from there up.
   */
  applyFollow(readerId: number, change: FollowChange, entries: readonly ScoredId[], floor: number | null, stale?: readonly number[]): Promise<boolean>;
  /** An unfollow's first step: records it; the inbox's blog ids, or null when stale or missing. */
  markUnfollow(readerId: number, change: FollowChange): Promise<number[] | null>;
  /** An unfollow's second step: removes these blogs unless a newer change of the pair came. */
  removeUnfollowed(readerId: number, change: FollowChange, blogIds: readonly number[]): Promise<void>;

  /** A follow change of the reader is about to commit: readers do not trust the inbox until it is applied. */
  markPending(readerId: number, atMs: number): Promise<void>;
  /** That change is applied (or came to nothing). */
  clearPending(readerId: number): Promise<void>;

  /** A new user's inbox: valid and empty. */
  create(readerId: number, version: number): Promise<void>;
  /** Starts a rebuild of a missing inbox; false when it exists or another rebuild runs. */
  beginBuild(readerId: number, token: string, since: number): Promise<boolean>;
  finishBuild(readerId: number, token: string, snapshot: FeedSnapshot): Promise<BuildOutcome>;
  /** Forgets an inbox (its state is unknown); the next read rebuilds it. */
  drop(readerId: number): Promise<void>;
  /** The reader is active: the inbox lives ACTIVE_DAYS from now. */
  touch(readerId: number): Promise<void>;
  /** False while Redis cannot be used: callers go to MySQL at once instead of waiting. */
  available(): boolean;

  /** Adds a deliver task to the watermark (inside the publishing transaction, before commit). */
  markInFlight(taskId: number, score: number): Promise<void>;
  /** Removes finished tasks from the watermark. */
  clearInFlight(taskIds: readonly number[]): Promise<void>;
  /** The watermark's tasks (for reconciliation) and whether it is synced. */
  inFlight(): Promise<{ synced: boolean; tasks: Array<{ taskId: number; score: number }> }>;
  /** Adds tasks to the watermark, and marks it synced when `complete`. */
  syncInFlight(tasks: ReadonlyArray<{ taskId: number; score: number }>, complete: boolean): Promise<void>;
  /** Marks the watermark incomplete (a task is known to be missing from it). */
  unsyncWatermark(): Promise<void>;
  /** Calls `listener` each time the connection to the store is back after a loss. */
  onReconnect?(listener: () => void): void;
}

/** The build token's start time (ms), so a rebuild that died can be taken over. */
export function buildToken(owner: string, startedAtMs: number): string {
  return `${owner}:${startedAtMs}`;
}

export function buildStartedAt(token: string): number {
  return Number(token.slice(token.lastIndexOf(':') + 1));
}

/** A rebuild that has not finished after this long is taken over by the next reader. */
export const BUILD_STALE_MS = 30_000;

/**
 * A follow change that has not been applied this long after it was marked will not be (its
 * process died between the commit and the apply): the inbox is rebuilt from MySQL.
 */
export const PENDING_STALE_MS = 60_000;
