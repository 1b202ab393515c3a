/**
 * The inbox: what a reader's cached feed is, and every operation on it, as one interface with
 * two implementations of exactly the same semantics:
 * - RedisInbox (inbox.redis.ts): Lua scripts (scripts/*.lua) over three keys per reader, used by
 *   the service;
 * - MemoryInbox (inbox.memory.ts): the same operations on plain maps, the specification the
 *   scripts are tested against (test/integration/feed/inbox-conformance.test.ts) and the inbox of the
 *   model test of the feed rules (test/unit/feed/feed-rules-model.test.ts).
 * Nothing but feed/ and the fan-out executor (through FeedService) writes to an inbox.
 *
 * ## What an inbox holds
 * - entries: the ids of the reader's feed's *fanned-out* blogs (tb_blog.pushed) with their score
 *   (the blog's created_at in epoch ms, from the database row, never the time of the fan-out),
 *   read in canonical order (score DESC, id DESC). Blogs nobody fans out (a big author's, any
 *   blog published under the pull model) are never in an inbox: pages merge them in from MySQL.
 *   What an inbox holds depends on the data, not on the model of the process that wrote it, so
 *   processes of every model can share the inboxes at once (a rolling deploy);
 * - floor: the inbox holds *every* fanned-out blog of the reader's feed whose score is at least
 *   `floor`, except blogs whose fan-out is still in flight (see the watermark below). Below the
 *   floor it knows nothing, holds nothing, and no writer ever adds anything there; pages
 *   continue below it from MySQL (the cold path). A rebuild sets the floor (0 when the snapshot
 *   held the whole feed); trimming to FEED_MAX_ITEMS and a follow's backfill cut raise it. Trust
 *   is this explicit number, never inferred from the lowest entry;
 * - followees: whom the reader follows, kept with the same versions as the entries, so that a
 *   page finds its followees among the authors whose fan-out is in flight in Redis itself;
 * - the follow state per followee it has seen changes of (a signed version, below);
 * - its generation (below), and while a rebuild runs, its build token and start.
 *
 * ## Generations
 * Redis may come back with less than it had: restarted from an older dump, failed over to a
 * replica that missed writes, restored from a backup. Such an inbox is consistent with itself and
 * wrong. So every inbox is stamped with the generation it was built in, a number kept in MySQL
 * and raised whenever a process finds that Redis is not the server it was (its run id changed:
 * feed/generation.ts); a read passes the current generation, and an inbox of another one is
 * missing (the read rebuilds it). The watermark's "synced" marker and the big-author token carry
 * the generation too. Nothing Redis held before is trusted after.
 *
 * ## Eviction
 * Both the entries and the followees hold a sentinel member, so that a key Redis evicted (under
 * a volatile-* maxmemory-policy) is seen: an inbox is intact only with both sentinels, a
 * delivery that finds its sorted set gone forgets the inbox, and so does a rebuild's finish (the
 * deliveries recorded during the build went with the set).
 *
 * ## Ordering per reader: versions
 * Every follow or unfollow of reader V increments tb_user.feed_version of V in the same
 * transaction, under V's row lock, so V's changes carry versions in commit order. Redis may see
 * them in another order (two devices, a double click, a slow request, the relay applying a change
 * a dead process left). Each change is applied with its version, and an inbox records, per
 * followee, the version of the last change it applied (+v followed, -v unfollowed) and, as
 * `base`, the version its rebuild snapshot saw. A change whose version is not newer than both is
 * stale and changes no entry: a fast unfollow then follow cannot end with the follow undone. An
 * unfollow first records itself, then reads the entries, asks MySQL which are the followee's, and
 * removes them only if no newer change of the pair came in between. A follow replaces whatever
 * entries of the followee the inbox still holds (an overtaken unfollow may have left some,
 * deleted ones included) with the followee's newest blogs, then asks MySQL which of those were
 * deleted meanwhile and takes them back.
 *
 * A follow change is written, in its transaction, to an outbox row (tb_feed_change) and marks
 * the inbox pending just before the commit (a mark per change, kept even where there is no inbox
 * yet, so that a rebuild started meanwhile keeps it); the change is applied and its own mark
 * cleared after the commit, by the process that made it or, if that process died or Redis was
 * away, by the relay from the outbox row. Until then readers do not trust the inbox. A mark older
 * than PENDING_STALE_MS (its change never committed) makes the reader rebuild the inbox.
 *
 * ## Deliveries: the fan-out's chunks
 * A chunk is made from the follow graph as MySQL showed it a moment before. It is written only to
 * inboxes that exist (a missing inbox is rebuilt from MySQL when read), at or above their floor,
 * and only where the inbox's own followees say its reader follows the author: a valid inbox's
 * followees are exact (its follow changes are applied with their versions, and one committed but
 * not applied yet marks it pending), so a chunk made before an unfollow writes nothing to that
 * inbox, and one made before a follow finds the follow's backfill has the blog or writes it. Where
 * the inbox cannot say, the blog is written: a rebuild records it (its finish keeps it only if
 * the snapshot has the reader follow the author); a pending change's reader is reported, and the
 * executor asks MySQL whether they follow the author and takes the blog back from an unfollower,
 * unless the inbox knows a newer state of the pair: a follow applied after that answer's version,
 * or a rebuild from a later snapshot (FeedService.deliver). That take-back can come after the
 * pending change's own clear, which makes the inbox trusted again: so a pending write whose
 * author the followees do not hold is recorded with the inbox, and the clear of the last mark
 * takes it out if the followees still lack the author (an unfollow was applied; the model test
 * found a page in that window showing a muted author's blog). In the steady state a chunk asks
 * MySQL about nobody.
 * The inbox answers "follows" without reading its followees where it can, because that read is
 * most of what the check costs: a pair changed since the inbox's install has its own version,
 * signed as the followees hold the author; and an inbox installed before MySQL listed the chunk's
 * readers (`listed`: a time on the inboxes' clock taken before that read, in the same
 * generation) may trust the list: a change of the pair since would be marked pending or carry its
 * version, and a muted follow, which MySQL lists, is installed as the pair's unfollow at the
 * snapshot's version. That is the one rule here that compares times: the inboxes' clock is
 * Redis's TIME kept from going back, on a single server only (a cluster's inboxes always read
 * their followees), and a Redis lost or restored from a dump starts a new generation.
 *
 * ## Rebuild
 * begin (marks the inbox building, in the current generation, at Redis's time) -> snapshot (one
 * consistent MySQL read on the primary: V's feed_version, followees and newest fanned-out feed
 * entries) -> finish. Deliveries and retractions that come during the build are recorded; the
 * finish adds the snapshot, drops deliveries of authors the snapshot does not have V follow,
 * keeps retracted blogs out, and sets floor, base and followees. A follow change newer than the
 * snapshot that arrived during the build, or a sorted set evicted during it, makes the finish give
 * up ('raced': the inbox is dropped and the build starts again). A build that has not finished after BUILD_STALE_MS (its process died) is
 * taken over by the next read.
 *
 * ## Fan-out watermark
 * Beside the inboxes, the deliver tasks in flight, per author with the lowest score each has in
 * flight. Publishing adds the task before its transaction commits; the fan-out removes it once
 * every chunk is written. A page gets, with its inbox read (same round trip), its followees among
 * the authors in flight, and reads only their blogs at or above those scores from MySQL: a page
 * pays for fan-out in flight only when its reader follows someone being fanned out. The set also
 * holds a marker that it is complete in this generation: after Redis lost it, readers trust no
 * inbox until it has been rebuilt from the unfinished tasks in MySQL.
 *
 * ## Big-author generation
 * Beside the watermark, a token "<generation>:<random>" replaced when an author's first
 * not-fanned-out blog commits: just before the commit by an unsettled one ("~" first: no list is
 * kept meanwhile, as a pending inbox is not trusted), just after by a settled one. Each read
 * returns it with the inbox's follow version, so a reader's list of big followees can be kept
 * between pages (FeedService) and re-read only when one of them moved. A token, not a counter:
 * after Redis lost it, a counter would start again and meet numbers that lists kept before the
 * loss carry.
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
  /** No inbox (never built, expired, evicted, or of another generation). */
  | { state: 'missing' }
  /** A rebuild runs, started `ageMs` ago by Redis's clock. */
  | { state: 'building'; ageMs: number }
  /** A follow change of the reader is committed or about to be, and not applied yet: the oldest was marked `ageMs` ago. */
  | { state: 'pending'; ageMs: number };

/** An author whose fan-out is in flight, with the lowest blog score in flight. */
export interface AuthorInFlight {
  authorId: number;
  score: number;
}

/** The fan-out watermark as a page sees it. */
export type Watermark =
  /** Redis lost the watermark (or it is of another generation): no inbox can be trusted until it is synced. */
  | { synced: false }
  /** The reader's followees with a fan-out in flight (none: nothing to read above the inbox). */
  | { synced: true; followees: AuthorInFlight[] }
  /** Too many authors in flight to look up (a cluster): every followee's blogs at or above `oldest` may be on their way. */
  | { synced: true; oldest: number };

/** What one read of an inbox returns (one round trip on a single server). */
export interface InboxRead {
  view: InboxView;
  watermark: Watermark;
  /**
   * The big-author generation of the read's epoch: a token, replaced each time an author gets
   * their first blog that was not fanned out. A list of a reader's big followees, kept with the
   * inbox's `version` and this token, is still right while neither has changed. null when Redis
   * holds none of this epoch (never set, lost, of an older generation), or while it is unsettled:
   * no kept list may be trusted then.
   */
  bigAuthors: string | null;
  /**
   * The pulled-blog tokens of the authors the read was asked for (`pulledOf`), in their order,
   * read at the same instant as the inbox (as pulledBlogTokens reads them). Absent where they
   * cannot be read in the same command (a Redis Cluster: other slots), or when none were asked for.
   */
  pulledTokens?: Array<string | null>;
}

/** What a rebuild installs, from one MySQL snapshot of the reader's feed. */
export interface FeedSnapshot {
  /** tb_user.feed_version of the reader in the snapshot. */
  version: number;
  /** Who the reader followed in the snapshot. */
  followeeIds: number[];
  /** Whom the reader followed but muted in the snapshot (not followees; MySQL lists them among the author's followers). */
  mutedIds: number[];
  /** The entries the inbox holds of the newest FEED_MAX_ITEMS of the feed. */
  entries: ScoredId[];
  /** 0 when those were the whole feed, else just above the lowest of them. */
  floor: number;
}

/** A delivery chunk: one blog for some readers. */
export interface Delivery {
  entry: ScoredId;
  authorId: number;
  /** When MySQL listed these readers among the author's followers, if known (see Listing). */
  listed?: Listing;
}

/**
 * A time on the inboxes' clock (Inbox.clock) taken before MySQL listed a chunk's readers, and the
 * generation the listing process trusted then: an inbox of that generation whose followees were
 * installed before it may trust the list instead of reading its followees (see Deliveries).
 */
export interface Listing {
  at: number;
  epoch: number;
}

/** What a delivery did, per reader (see Deliveries). */
export interface DeliveryOutcome {
  /** Readers whose inbox got the blog and, by its own followees, follow its author. */
  written: number[];
  /** Readers whose inbox got the blog while a follow change of theirs is pending: MySQL must say whether it stays. */
  unsure: number[];
  /** Of those two, the readers with a live-feed subscription open (the live bus's mark). */
  live: number[];
}

/** A deliver task in the watermark. */
export interface TaskInFlight {
  taskId: number;
  authorId: number;
  score: number;
}

/** The first character of an unsettled big-author generation. */
export const UNSETTLED = '~';

/** An unsettled big-author generation (its publish died before its commit) expires after this. */
export const BIG_AUTHOR_CHANGE_MS = 60_000;

export type BuildOutcome = 'done' | 'raced' | 'lost';

export type FollowOutcome = 'applied' | 'reapplied' | 'stale';

export interface Inbox {
  /**
   * The first `limit` entries after `from` (at or above the floor) of an inbox of generation
   * `epoch`, the watermark and the big-author generation: one round trip on a single server; with
   * `pulledOf`, there also those authors' pulled-blog tokens (InboxRead.pulledTokens).
   */
  read(
    readerId: number,
    from: FeedPosition,
    limit: number,
    epoch: number,
    pulledOf?: readonly number[],
  ): Promise<InboxRead>;
  /**
   * Which of `authorIds` the reader follows, from a valid inbox's followees (exact while it is
   * valid, see "Deliveries"); null when the inbox is not valid in this generation (missing,
   * building, a follow change pending), and only MySQL can say.
   */
  followedAmong(readerId: number, authorIds: readonly number[], epoch: number): Promise<Set<number> | null>;
  /**
   * Replaces the big-author generation (see InboxRead):
   * - 'changing': an author's first not-fanned-out blog is about to commit; until 'changed',
   *   the generation is unsettled and no list is kept or trusted (it expires after
   *   BIG_AUTHOR_CHANGE_MS if the publishing process dies);
   * - 'changed': that blog is committed (or rolled back);
   * - 'missing': only when there is none of this epoch (the first reader after a loss).
   */
  renewBigAuthors(reason: 'changing' | 'changed' | 'missing', epoch: number): Promise<void>;
  /**
   * The pulled-blog tokens of these authors (feed/pulled-blogs.ts), in their order: the settled
   * token of generation `epoch`, or null (none, another generation's, or unsettled: a change is
   * committing). One round trip.
   */
  pulledBlogTokens(authorIds: readonly number[], epoch: number): Promise<Array<string | null>>;
  /**
   * Replaces an author's pulled-blog token, as renewBigAuthors does the big-author generation:
   * 'changing' just before a not-fanned-out blog of theirs commits or is deleted (unsettled, it
   * expires after BIG_AUTHOR_CHANGE_MS), 'changed' after, 'missing' only when there is none of
   * this epoch.
   */
  renewPulledBlogs(authorId: number, reason: 'changing' | 'changed' | 'missing', epoch: number): Promise<void>;

  /** The inboxes' clock, ms, that Listing.at and installs are measured on; 0 where installs record none (a cluster). */
  clock(): Promise<number>;
  /** Writes one blog into the inboxes of many readers (see Deliveries). */
  deliver(readerIds: readonly number[], delivery: Delivery): Promise<DeliveryOutcome>;
  /** Takes a blog back from a reader who does not follow its author as of `change.version` (see Deliveries). */
  retractUnfollowed(readerId: number, blogId: number, change: FollowChange): Promise<void>;
  /** Takes a deleted blog out of the inboxes of many readers. */
  retract(readerIds: readonly number[], blogId: number): Promise<void>;

  /** Every blog id the inbox holds; null when it does not exist. */
  blogIds(readerId: number): Promise<number[] | null>;
  /**
   * A follow: replaces the followee's entries (`stale`: those the inbox held) with its newest
   * ones; `floor`: the inbox is complete only from there up. 'reapplied': this very change was
   * applied before (a retry), 'stale': a newer change of the pair is known, or there is no inbox.
   */
  applyFollow(
    readerId: number,
    change: FollowChange,
    entries: readonly ScoredId[],
    floor: number | null,
    stale?: readonly number[],
  ): Promise<FollowOutcome>;
  /**
   * An unfollow's first step: records it; the inbox's blog ids (also when this very change was
   * recorded before: a retry), or null when stale or missing.
   */
  markUnfollow(readerId: number, change: FollowChange): Promise<number[] | null>;
  /** An unfollow's second step: removes these blogs unless a newer change of the pair came. */
  removeUnfollowed(readerId: number, change: FollowChange, blogIds: readonly number[]): Promise<void>;

  /** Follow change `changeId` of the reader is about to commit: readers do not trust the inbox until it is cleared. */
  markPending(readerId: number, changeId: number): Promise<void>;
  /** That change is applied (or came to nothing): its mark goes, and only its own. */
  clearPending(readerId: number, changeId: number): Promise<void>;
  /** The ids of the follow changes marked pending on the reader's inbox. */
  pendingChanges(readerId: number): Promise<number[]>;

  /** A new user's inbox: valid and empty, in generation `epoch`. */
  create(readerId: number, version: number, epoch: number): Promise<void>;
  /** Starts a rebuild in generation `epoch`; false when a valid inbox exists or a recent rebuild runs. */
  beginBuild(readerId: number, token: string, epoch: number): Promise<boolean>;
  finishBuild(readerId: number, token: string, snapshot: FeedSnapshot): Promise<BuildOutcome>;
  /** Forgets an inbox (its state is unknown); the next read rebuilds it. Pending marks stay. */
  drop(readerId: number): Promise<void>;
  /** The reader is active: the inbox lives ACTIVE_DAYS from now. */
  touch(readerId: number): Promise<void>;
  /** False while Redis cannot be used: callers go to MySQL at once instead of waiting. */
  available(): boolean;

  /** Adds a deliver task to the watermark (inside the publishing transaction, before commit). */
  markInFlight(task: TaskInFlight): Promise<void>;
  /** Removes finished tasks from the watermark. */
  clearInFlight(tasks: ReadonlyArray<Pick<TaskInFlight, 'taskId' | 'authorId'>>): Promise<void>;
  /** Whether the watermark holds every task in flight of generation `epoch` (its marker). */
  isWatermarkSynced(epoch: number): Promise<boolean>;
  /** The watermark's tasks (for its upkeep) and whether it is synced in generation `epoch`. */
  inFlight(epoch: number): Promise<{ synced: boolean; tasks: TaskInFlight[] }>;
  /** Adds tasks to the watermark, and marks it synced in generation `epoch` when `complete`. */
  syncInFlight(tasks: readonly TaskInFlight[], complete: boolean, epoch: number): Promise<void>;
  /** Marks the watermark incomplete (a task is known to be missing from it). */
  unsyncWatermark(): Promise<void>;
  /** Calls `listener` each time Redis can be used again: after a reconnect, and when its breaker closes. */
  onAvailable?(listener: () => void): void;
}

/** BUILD_STALE_MS's default: a rebuild that has not finished after this long (by Redis's clock) is taken over by the next reader. */
export const BUILD_STALE_MS = 30_000;

/**
 * A follow change that has not been applied this long after it was marked will not be: its
 * transaction never committed (the relay applies committed ones from the outbox within seconds).
 * The inbox is rebuilt from MySQL.
 */
export const PENDING_STALE_MS = 60_000;
