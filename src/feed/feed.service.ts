/**
 * The follow feed: every rule of what enters an inbox, when an inbox is trusted and down to
 * where, and how a page is read, in one place (the shape of Mastodon's FeedManager). The inbox
 * itself, its invariant and the mechanisms that keep it (floor, versions, generations,
 * watermark) are described in inbox.ts; this file applies them.
 *
 * followFeed(V) = every live blog whose author V follows now, in canonical order
 * (created_at DESC, id DESC). Whatever the model, a page is the same list cut after the same
 * position, so push, pull and hybrid return identical pages:
 *
 * - pull: one MySQL (or embedded SQLite) query over V's followees (FeedStore.feedPage).
 * - push and hybrid: V's inbox, trusted at or above its floor, merged with the blogs nobody fanned
 *   out (those of authors marked has_pulled_blogs: big authors in hybrid, and every blog
 *   published under the pull model) and, for followees whose fan-out is still in flight, with
 *   their blogs above the watermark from MySQL. Past the floor the page continues from MySQL
 *   after its last item: the cold path. A missing inbox (Redis lost it, it expired while V was
 *   inactive, it is of an older generation) is served from MySQL at once and rebuilt in the
 *   background.
 * The models differ only in which new blogs are fanned out (push: all, pull: none, hybrid: those
 * of authors below BIG_V_FOLLOWERS) and in how pages are read. Every process that has Redis keeps
 * the inboxes up to date (follow changes, deletes, deliveries) whatever its model, and what an
 * inbox holds is recorded with the data (tb_blog.pushed), so the model can change between deploys
 * in any order, and processes of two models can serve at once. Which of these applies to this
 * process (no inboxes, inboxes kept, inboxes kept and read) is decided once: feed.keeping.ts.
 *
 * When this process trusts inboxes at all: only in a confirmed Redis generation
 * (generation.ts), after it has caught up with what it may have missed (at start, in a new
 * generation, and whenever Redis can be used again after an outage: the watermark repaired and
 * rebuilt if needed, the follow changes of the outbox applied). Until then every page comes from
 * MySQL: slower, never wrong.
 *
 * Round trips of a page: one to Redis (the inbox, the watermark's followees in flight and the
 * big-author generation together: one script on a single server, which also reads the pulled-blog
 * tokens of the big followees the reader's kept list names, right at most pages), the not-fanned-out
 * blogs of big followees (only with such followees; the list of them only when the reader's kept
 * list is out of date, see big-followees.ts), the followees' blogs above the watermark only while one of
 * them is being fanned out, the cold path only past the floor, then one statement for the page's
 * data (BlogStore.forViewer: from the hydration cache, else one statement). None depends on `first`.
 */
import { hostname } from 'node:os';
import type { Sql } from '../db/database';
import { DEFAULT_FEED_REBUILDS_IN_FLIGHT, DEFAULT_FEED_REBUILD_WAIT_MS, type FeedModel } from '../kernel/config';
import type { Metrics } from '../kernel/observability';
import { badUserInput, unavailable } from '../kernel/errors';
import { FeedPosition, InvalidCursorError, ScoredId, START } from '../kernel/pagination/cursor';
import {
  fetchSize,
  NewerPageRequest,
  newerFetchSize,
  Page,
  PageRequest,
  positionBefore,
  slicePage,
  sliceNewerPage,
} from '../kernel/pagination/page';
import { BigFolloweeLists } from './big-followees';
import { PULLED_BLOGS_KEPT, PULLED_FILLS_PER_PAGE, PulledBlogLists, PulledList, pulledAfter } from './pulled-blogs';
import { MAX_REMOVED_PER_EVENT } from '../live/live.bus';
import type { InboxKeeping } from './feed.keeping';
import { KeptInboxes } from './feed.keeping.kept';
import { NoInboxes } from './feed.keeping.none';
import { ReadInboxes } from './feed.keeping.read';
import type { LiveFeed } from './feed.live';
import type { FeedStore, FollowChangeRow } from './feed.store';
import type { InboxGeneration } from './generation';
import { Delivery, FollowChange, Inbox, InboxView, Listing, PENDING_STALE_MS, TaskInFlight, Watermark } from './inbox';
import { certainMerge, certainToTheEnd, keysetAfter, SourceReading, sourceRead } from './merge';
import type { InFlightSource } from './watermark';

export type { InFlightSource } from './watermark';

export interface FeedSettings {
  model: FeedModel;
  /** FEED_MAX_ITEMS: the most entries an inbox keeps. */
  maxItems: number;
  /**
   * FEED_REBUILD_ITEMS (at most maxItems; maxItems when absent): the newest entries a rebuild
   * reads. A rebuilt inbox holds those, its floor just above the oldest when there were more,
   * and grows with deliveries up to maxItems; a page below its floor reads MySQL.
   */
  rebuildItems?: number;
  /**
   * FEED_REBUILD_WAIT_MS (its default when absent): how long a page that finds no inbox (or
   * one this process is rebuilding) waits for the reader's rebuild, started by it or running
   * already in this process, before MySQL serves it. 0: MySQL serves it at once.
   */
  rebuildWaitMs?: number;
  /** FEED_REBUILDS_IN_FLIGHT (its default when absent): rebuilds this process runs at once. */
  rebuildsInFlight?: number;
  /** FOLLOW_BACKFILL_ITEMS: how many of a new followee's newest blogs enter the inbox at once. */
  backfillItems: number;
  /** BIG_V_FOLLOWERS: in the hybrid model, an author with this many followers is not fanned out. */
  bigAuthorFollowers: number;
  /** WATERMARK_SETTLE_MS: see watermark.ts. */
  watermarkSettleMs: number;
  /** BUILD_STALE_MS: a rebuild that has not finished this long after it began is taken over by the next read. */
  buildStaleMs: number;
  /**
   * Reads of the feed within this many ms of now (by the blogs' created_at) stand in for blogs
   * that may be younger than a replica's lag: they go to the primary (REPLICA_MAX_LAG_MS plus
   * FRESHNESS_MARGIN_MS). 0: no replicas, everything may read where lag-tolerant reads go.
   */
  freshnessMs: number;
  /**
   * A publish whose blog's created_at is older than this when it is about to commit rolls back
   * and runs again with a new one (PUBLISH_DEADLINE_MS; 0: no deadline, there are no replicas).
   */
  publishDeadlineMs: number;
}

/** The reads and writes of the truth the rules need (FeedStore on MySQL; an in-memory one in the model test). */
export type FeedTruth = Pick<
  FeedStore,
  | 'feedPage'
  | 'feedNewer'
  | 'inFlightBlogs'
  | 'snapshot'
  | 'pulledFollowees'
  | 'pulledBlogs'
  | 'hasFewerFollowers'
  | 'markHasPulledBlogs'
  | 'newestOfAuthor'
  | 'idsOfAuthorAmong'
  | 'followersAmong'
  | 'followStates'
  | 'deletedAmong'
  | 'recordFollowChange'
  | 'followChangesToApply'
  | 'followChangesAmong'
  | 'forgetFollowChange'
>;

export interface FeedServiceDeps {
  store: FeedTruth;
  /** The inboxes; null without Redis (the embedded mode), which keeps none. */
  inbox: Inbox | null;
  /** The Redis generation this process trusts; with inboxes only. */
  generation: InboxGeneration | null;
  settings: FeedSettings;
  warn: (message: string, error?: unknown) => void;
  metrics?: Pick<Metrics, 'pageRead'>;
  /** The fan-out's unfinished tasks, to rebuild and upkeep the watermark (FanoutStore). */
  inFlight?: InFlightSource;
  /** Tells live subscribers which blogs reached their inboxes, and which left them with a follow change (feed.live.ts). */
  live?: Pick<LiveFeed, 'delivered' | 'watching' | 'retracted'>;
  /** The clock of the follow outbox's rows (created_at) and of freshness; tests pass their own. */
  now?: () => Date;
}

/** A committed follow change, with its outbox row's id. */
export type PendingFollowChange = FollowChangeRow;

/**
 * How a follow or unfollow is committed: `transact` runs the caller's transaction and calls
 * `record` inside it with the reader's new follow version once the follow row changed (it
 * writes the outbox row and marks the inbox pending, just before the commit); it returns what
 * `record` returned, or null when nothing changed.
 *
 * `inFeed` is whether the author's blogs are in the reader's feed after the change, when the
 * transaction alone knows it: a follow of a muted author leaves them out (false), and a mute or
 * unmute of a followee commits a change of the feed alone (follow row kept, follow.service.ts).
 * It defaults to changeFollow's `follow`.
 */
export type FollowTransaction = (
  record: (sql: Sql, version: number, inFeed?: boolean) => Promise<PendingFollowChange>,
) => Promise<PendingFollowChange | null>;

/** The writes of a publish that are the caller's, inside its transaction (BlogService: the blog row, the outbox). */
export interface PublishWrites<B extends { score: number }> {
  /** Inserts the blog row, fanned out (`pushed`) or not: the publish's first write. */
  insertBlog(pushed: boolean): Promise<B>;
  /** Records the fan-out's deliver task of a pushed blog (the outbox); returns its id. */
  recordDeliver(blog: B): Promise<number>;
  /**
   * The caller's own last step before the commit, if it has one (BlogService: the new blog's
   * cache lease). Started in the same turn as the feed's last Redis step, so that on one Redis
   * server both go out in one round trip.
   */
  beforeCommit?(): Promise<void>;
}

/** A committed publish: the blog, its deliver task (null: not fanned out), and whether it unsettled the big-author generation. */
export interface Published<B> {
  blog: B;
  taskId: number | null;
  /** The author's first not-fanned-out blog: publish settles the big-author generation after the transaction. */
  becameBig: boolean;
}

/**
 * How a blog is published: `transact` runs the caller's transaction and calls `publishIn` inside
 * it with its `sql` and its writes, which FeedService runs in their order (see publish); it
 * returns what `publishIn` returned once committed.
 */
export type PublishTransaction<B extends { score: number }> = (
  publishIn: (sql: Sql, writes: PublishWrites<B>) => Promise<Published<B>>,
) => Promise<Published<B>>;

/**
 * A user's activity pushes their inbox's expiry back at most this often per process (not on
 * every request): enough for ACTIVE_DAYS, which counts in days.
 */
export const ACTIVITY_WRITE_INTERVAL_MS = 5 * 60 * 1000;

/**
 * Margin added to REPLICA_MAX_LAG_MS for freshness. A reader ages a blog by its created_at, a
 * replica's lag counts from the blog's commit: the margin covers the time between the two
 * (at most PUBLISH_DEADLINE_MS up to the COMMIT, then the COMMIT itself) and the difference
 * between the clocks of the hosts that write created_at and read.
 */
export const FRESHNESS_MARGIN_MS = 10_000;

/**
 * With replicas, a publish whose created_at is older than this when it is about to commit (a
 * lock wait, a slow Redis, a long GC pause in between) rolls back and runs again with a new
 * created_at: committed later than FRESHNESS_MARGIN_MS after its created_at, a blog could still
 * be missing from a replica when readers already read that age there (the model test found
 * it). Far below the margin, so that the COMMIT and the clocks keep the rest of it.
 */
export const PUBLISH_DEADLINE_MS = 2_000;

/** Attempts of a publish that misses PUBLISH_DEADLINE_MS before it is answered SERVICE_UNAVAILABLE. */
const PUBLISH_ATTEMPTS = 3;

/**
 * Attempts (one a second) of a Redis write that must happen once Redis answers again: dropping an
 * inbox that a failed write left in an unknown state, replacing the big-author generation.
 */
const REPAIR_ATTEMPTS = 600;

/**
 * Largest `max` of followFeedNewCount, and its default: a "new posts" banner shows "99+" past
 * it, and the count reads at most this many ids (one bounded range per followee).
 */
export const MAX_NEW_COUNT = 100;

/** Rebuilds tried in a row when a follow change keeps racing them (then MySQL serves). */
const REBUILD_ATTEMPTS = 3;

/*
 * Why the defaults of the rebuild settings (config.ts, DEFAULT_FEED_REBUILDS_IN_FLIGHT and
 * DEFAULT_FEED_REBUILD_WAIT_MS) are what they are.
 *
 * Rebuilds one process runs at once (FEED_REBUILDS_IN_FLIGHT, 32). After Redis lost everything
 * every active reader needs one; each reads at most a page of FEED_REBUILD_ITEMS + 1 from MySQL (FeedStore.snapshot),
 * so this bounds the rows a Redis loss makes MySQL read per process at any moment. A reader whose
 * rebuild does not start now is served from MySQL, and the next read tries again. Why 32, not 8
 * as before: a rebuild waits on a dozen round trips, and under a loss's load the process's event
 * loop makes each of them slow, so rebuilds ran at the count over about 100 ms (bench:mixed,
 * open loop at 700/s: 8 rebuilt 70-80 inboxes a second and 90% of the pages did not come from
 * inboxes within 50 s of the loss; 16 rebuilt 110-140 a second, 30 s; 32, 150-190 a second,
 * 8 s), and every reader not rebuilt yet is served from MySQL, which costs more than the
 * rebuild: the rows MySQL read per rebuild fell with more at once (1,364-1,386 at 8 without the
 * page's wait, 812 at 32). (Queueing the readers turned away instead, tried at 8: their pages
 * waited their whole wait for a rebuild far back in the queue and then read MySQL anyway.)
 *
 * How long a page that finds no inbox waits for its rebuild (FEED_REBUILD_WAIT_MS, 1 s). After a
 * Redis loss every active reader's pages find no inbox. Served from MySQL at once, each of them read about what a rebuild reads
 * and left the rebuild to a later page whenever all the rebuilds allowed were running, so a reader
 * paid for several pulled pages before their rebuild, and the pulled pages kept the process too
 * busy to rebuild quickly (bench:mixed: inboxes not back 50 s after the loss). Waiting makes the
 * rebuild the page's read; a rebuild slower than this (a process overloaded) still leaves the
 * page to MySQL, so the wait bounds what the page adds to its latency.
 */

/** The relay leaves a follow change this long to the process that made it before applying it itself. */
export const FOLLOW_CHANGE_GRACE_MS = 2000;

/** Follow changes applied per batch (relay passes, catching up). */
const FOLLOW_CHANGE_BATCH = 200;

/** A failed catch-up is tried again after this long (pages come from MySQL meanwhile). */
const CATCH_UP_RETRY_MS = 1000;

let buildCounter = 0;

export class FeedService {
  private readonly store: FeedTruth;
  /** What this process does with inboxes (none, keeps them, keeps and reads them): decided once, see feed.keeping.ts. */
  private readonly keeping: InboxKeeping;
  private readonly settings: FeedSettings;
  private readonly warn: (message: string, error?: unknown) => void;
  private readonly metrics?: Pick<Metrics, 'pageRead'>;
  private readonly live?: Pick<LiveFeed, 'delivered' | 'watching' | 'retracted'>;
  private readonly now: () => Date;
  private readonly rebuilding = new Map<number, Promise<void>>();
  /** Other background work of pages (settling stale follow changes), for idle(). */
  private readonly chores = new Set<Promise<void>>();
  private readonly bigFollowees = new BigFolloweeLists();
  private readonly pulledLists = new PulledBlogLists();
  /** Lists being read from MySQL, by author and token: pages that need the same one wait for one read. */
  private readonly pulledFills = new Map<string, Promise<PulledList>>();
  private readonly activityWrittenAt = new Map<number, number>();
  private readonly owner = `${hostname()}:${process.pid}`;
  /** The generation this process has caught up in (see above); null while it has not. */
  private caughtUp: number | null = null;
  private catchingUp: Promise<void> | null = null;
  private catchUpAgain = false;
  /** Set by stop(): no retry of a repair or a catch-up is scheduled any more. */
  private stopped = false;

  constructor(deps: FeedServiceDeps) {
    this.store = deps.store;
    this.settings = deps.settings;
    this.warn = deps.warn;
    this.metrics = deps.metrics;
    this.live = deps.live;
    this.now = deps.now ?? (() => new Date());
    this.keeping = inboxKeeping({ ...deps, warn: this.warn, now: this.now });
    this.keeping.onCatchUpNeeded(() => this.catchUpInBackground());
  }

  // ---------------------------------------------------------------------------------------
  // Trust

  /** Starts checking the Redis generation (at once, and every GENERATION_CHECK_MS); catching up follows. */
  start(): void {
    this.keeping.start();
  }

  stop(): void {
    this.stopped = true;
    this.keeping.stop();
  }

  /** Resolves once this process has confirmed the Redis generation and caught up (or failed to: Redis away). */
  async ready(): Promise<void> {
    await this.keeping.check();
    await this.catchingUp;
  }

  /**
   * The Redis generation this process has confirmed (generation.ts), whether or not it has caught
   * up in it; null while it has not confirmed one, and without Redis. What else this process
   * keeps in Redis is stamped with it (cache/cache.service.ts).
   */
  redisGeneration(): number | null {
    return this.keeping.currentEpoch();
  }

  /** The generation to read inboxes in, when this process trusts them now; null: pages come from MySQL. */
  private trustedEpoch(): number | null {
    const epoch = this.keeping.currentEpoch();
    return epoch !== null && epoch === this.caughtUp ? epoch : null;
  }

  /** Starts catching up (see above), or asks the one running to go round again (only with Redis: keeping.onCatchUpNeeded). */
  private catchUpInBackground(): void {
    if (this.stopped) return;
    this.caughtUp = null;
    this.catchUpAgain = true;
    this.catchingUp ??= this.catchUp().finally(() => {
      this.catchingUp = null;
    });
  }

  private async catchUp(): Promise<void> {
    while (this.catchUpAgain) {
      this.catchUpAgain = false;
      try {
        const { generation, watermark } = this.keeping.redis();
        const epoch = await generation.confirmed();
        this.bigFollowees.clear();
        this.pulledLists.clear();
        await watermark.catchUp(epoch);
        // Every change in the outbox, not those written before now: after the clock stepped
        // back, a change written before the step would look younger than now and stay out.
        await this.applyFollowChanges(null);
        if (!this.catchUpAgain && generation.current() === epoch) this.caughtUp = epoch;
      } catch (error) {
        this.warn('catching up with Redis failed; pages come from MySQL until it succeeds', error);
        setTimeout(() => this.catchUpInBackground(), CATCH_UP_RETRY_MS).unref();
        return;
      }
    }
  }

  // ---------------------------------------------------------------------------------------
  // Reading

  /**
   * A page of the viewer's feed: the ids and scores of its blogs, and the cursor after each.
   * Hydrating them (and hiding an entry whose delete or unfollow is still being cleaned up) is
   * the API's, with the request's loaders (graphql/blog-connection.ts).
   */
  async page(viewerId: number, request: PageRequest): Promise<Page<ScoredId>> {
    return slicePage(request, await this.entries(viewerId, request.from, fetchSize(request)));
  }

  /**
   * Which of `authorIds` the viewer follows, as the viewer's inbox knows it (no SQL): what a page
   * shows only of followed authors checks. null when no trusted inbox can say (Redis away, the
   * pull model, the inbox missing, building or with a follow change pending): ask MySQL then.
   */
  async followedAmong(viewerId: number, authorIds: readonly number[]): Promise<Set<number> | null> {
    const epoch = this.trustedEpoch();
    const inbox = this.keeping.pageInbox();
    if (epoch === null || !inbox) return null;
    const followed = await inbox.followedAmong(viewerId, authorIds, epoch);
    return this.stillTrusted(epoch) ? followed : null;
  }

  /**
   * Whether the generation a read was sent in is still the one this process trusts, checked when
   * its answer is back. A command sent before Redis restarted can run on the new server (ioredis
   * sends it again after reconnecting), and a server restored from an older dump holds inboxes
   * stamped with that same generation: consistent, and older than MySQL. The reconnect makes the
   * process trust no generation at once (generation.ts), before any answer from the new server
   * arrives, so such an answer is caught here and the page goes to MySQL. (The model test found a
   * scroll missing a blog this way: seed 2085991661.)
   */
  private stillTrusted(epoch: number): boolean {
    return this.trustedEpoch() === epoch;
  }

  /**
   * A page up (followFeed's last/before): the `last` blogs newer than `before` closest to it,
   * newest first, and whether more lie above (hasPreviousPage).
   *
   * In every model it is read from the truth (MySQL, or SQLite embedded; FeedStore.feedNewer),
   * on the primary when replicas may lag: what lies above a cursor the client holds is the top
   * of the feed, the part an inbox may not have yet (fan-out in flight) and a replica may lack.
   * It is the same list as the pages down (they equal the truth, see above), cut at the same
   * keyset point, so pages down and up mix without skipping or repeating a blog. Its cost is
   * bounded by `last` and the followees, not by how far above `before` the top is.
   */
  async newerPage(viewerId: number, request: NewerPageRequest): Promise<Page<ScoredId>> {
    return sliceNewerPage(request, await this.newer(viewerId, request.before, newerFetchSize(request)));
  }

  /** The first `n` feed entries of the viewer newer than `before`, the closest first (ascending). */
  async newer(viewerId: number, before: { maxScore: number; afterId: number }, n: number): Promise<ScoredId[]> {
    this.metrics?.pageRead('pull');
    return this.store.feedNewer(
      viewerId,
      { score: before.maxScore, id: before.afterId },
      n,
      this.settings.freshnessMs > 0,
    );
  }

  /**
   * followFeedNewCount: how many feed entries are newer than the cursor `before`, counted up to
   * `max` (0..MAX_NEW_COUNT): a bounded read of at most `max` ids. Bad arguments are
   * BAD_USER_INPUT naming them.
   */
  async newCount(viewerId: number, before: string, max: number): Promise<number> {
    if (!Number.isInteger(max) || max < 0 || max > MAX_NEW_COUNT)
      throw badUserInput(`max must be between 0 and ${MAX_NEW_COUNT} (got ${max})`, 'max');
    let position: NewerPageRequest['before'];
    try {
      position = positionBefore(before);
    } catch (error) {
      if (error instanceof InvalidCursorError) throw badUserInput(error.message, 'before');
      throw error;
    }
    return (await this.newer(viewerId, position, max)).length;
  }

  /** The first `n` feed entries of the viewer after `from`, in canonical order. */
  async entries(viewerId: number, from: FeedPosition, n: number): Promise<ScoredId[]> {
    const epoch = this.trustedEpoch();
    const inbox = this.keeping.pageInbox();
    // Pages of this process do not read inboxes, or Redis is down or hanging, or not trusted yet: degraded, not broken.
    if (epoch === null || !inbox) return this.pullPage(viewerId, from, n);
    try {
      const entries = await this.entriesFromInbox(inbox, epoch, viewerId, { from, n });
      return this.stillTrusted(epoch) ? entries : this.pullPage(viewerId, from, n);
    } catch (error) {
      this.warn(`reading the inbox of user ${viewerId} failed; serving the page from MySQL`, error);
      return this.pullPage(viewerId, from, n);
    }
  }

  /** The page from MySQL alone; near the top of the feed on the primary (a replica may lag behind the newest blogs). */
  private pullPage(viewerId: number, from: FeedPosition, n: number): Promise<ScoredId[]> {
    this.metrics?.pageRead('pull');
    return this.store.feedPage(viewerId, from, n, null, this.fresh(from));
  }

  /** Whether a read from `position` down may meet blogs younger than a replica's lag (it then goes to the primary). */
  private fresh(position: FeedPosition): boolean {
    return (
      this.settings.freshnessMs > 0 &&
      (position.maxScore === null || position.maxScore >= this.now().getTime() - this.settings.freshnessMs)
    );
  }

  /** `waitForRebuild`: a missing inbox is rebuilt, and read again, before MySQL serves the page (rebuildWaitMs). */
  private async entriesFromInbox(
    inbox: Inbox,
    epoch: number,
    viewerId: number,
    page: { from: FeedPosition; n: number },
    waitForRebuild = true,
  ): Promise<ScoredId[]> {
    const { from, n } = page;
    const read = sourceRead(from, n);
    // The reader's kept list of big followees, whatever its version: a guess of the list this page
    // will trust (right at most pages: follow versions and the big-author generation rarely change
    // between two pages of a reader). On a single server the read brings those authors' pulled-blog
    // tokens, read at the same instant as the inbox, and a right guess saves the page a round trip
    // for them; a wrong one is dropped, and the tokens are read after, as without it.
    const guess = read.limit > 0 ? this.bigFollowees.peek(viewerId) : null;
    const {
      view,
      watermark,
      bigAuthors: generation,
      pulledTokens,
    } = await inbox.read(viewerId, read.from, read.limit, epoch, guess ?? undefined);
    if (view.state !== 'valid') {
      // Missing, or being rebuilt by this process (for another page of the reader's, begun just before this read).
      const rebuilt = view.state === 'missing' || (view.state === 'building' && this.rebuilding.has(viewerId));
      if (rebuilt && waitForRebuild && this.settings.rebuildWaitMs !== 0 && (await this.rebuiltInTime(viewerId)))
        return this.entriesFromInbox(inbox, epoch, viewerId, page, false);
      this.repairView(viewerId, view);
      return this.pullPage(viewerId, from, n);
    }
    // Redis lost the watermark: no inbox can be trusted until it is rebuilt from the outbox.
    if (!watermark.synced) {
      this.keeping.redis().watermark.syncInBackground(epoch);
      return this.pullPage(viewerId, from, n);
    }
    const sources: Array<SourceReading<ScoredId>> = [{ items: view.entries, limit: read.limit, floor: view.floor }];
    const bigAuthors = await this.bigFolloweesOf(inbox, epoch, viewerId, view, generation);
    if (bigAuthors.length > 0) {
      // The guess was this very list (the kept one, right at this version): its tokens came with the read.
      const tokens = guess === bigAuthors && pulledTokens ? pulledTokens : null;
      sources.push({
        items: await this.pulledBlogsOf(inbox, epoch, bigAuthors, { from: read.from, limit: read.limit, tokens }),
        limit: read.limit,
        floor: null,
      });
    }
    const inFlight = await this.inFlightBlogs(viewerId, watermark, read.from, read.limit);
    if (inFlight) sources.push({ items: inFlight, limit: read.limit, floor: null });
    const certain = certainMerge(sources);
    const covered = certain.slice(read.skip, read.skip + n);
    if (covered.length === n || certainToTheEnd(sources)) {
      this.metrics?.pageRead('inbox');
      return covered;
    }
    // Below what the sources are sure of (the inbox's floor above 0), MySQL continues: the cold path.
    this.metrics?.pageRead('cold');
    const consumed = certain.slice(0, read.skip + covered.length);
    const next =
      consumed.length === 0 || certain.length < read.skip ? from : keysetAfter(consumed[consumed.length - 1]);
    return covered.concat(await this.store.feedPage(viewerId, next, n - covered.length, null, this.fresh(next)));
  }

  /**
   * Blogs that may be committed and not yet in the inbox: those of the reader's followees whose
   * fan-out is in flight, at or above each one's lowest score in flight (null: none in flight).
   */
  private async inFlightBlogs(
    viewerId: number,
    watermark: Extract<Watermark, { synced: true }>,
    from: FeedPosition,
    limit: number,
  ): Promise<ScoredId[] | null> {
    if ('oldest' in watermark) {
      if (from.maxScore !== null && watermark.oldest > from.maxScore) return null;
      return this.store.feedPage(viewerId, from, limit, watermark.oldest, true);
    }
    const reaching = watermark.followees.filter((author) => from.maxScore === null || author.score <= from.maxScore);
    return reaching.length === 0 ? null : this.store.inFlightBlogs(reaching, from, limit);
  }

  /** What a page does about an inbox it cannot use: rebuild it, or take over a dead rebuild or change. */
  private repairView(viewerId: number, view: Exclude<InboxView, { state: 'valid' }>): void {
    if (view.state === 'missing') this.rebuildInBackground(viewerId);
    else if (view.state === 'building' && view.ageMs >= this.settings.buildStaleMs) this.rebuildInBackground(viewerId);
    else if (view.state === 'pending' && view.ageMs >= PENDING_STALE_MS) this.settleStaleChanges(viewerId);
  }

  /** The reader's big followees: the kept list while it is right, else read again. */
  private async bigFolloweesOf(
    inbox: Inbox,
    epoch: number,
    viewerId: number,
    view: Extract<InboxView, { state: 'valid' }>,
    generation: string | null,
  ): Promise<readonly number[]> {
    const kept = this.bigFollowees.get(viewerId, view.version, generation);
    if (kept) return kept;
    // Redis has no generation of this epoch (new, or lost): set one, so that the next pages can keep lists.
    if (generation === null)
      inbox
        .renewBigAuthors('missing', epoch)
        .catch((error: unknown) => this.warn('setting the big-author generation failed', error));
    const { version, authorIds } = await this.store.pulledFollowees(viewerId);
    this.bigFollowees.set(viewerId, version, generation, authorIds);
    return authorIds;
  }

  /**
   * What FeedStore.pulledBlogs answers for these big authors (the first `limit` of each one's
   * not-fanned-out blogs after `from`), from the lists this process keeps while their tokens hold
   * (pulled-blogs.ts): a list whose token changed is read again (one statement per author, on the
   * primary), and only what a list cannot say (an author without a settled token, a page below
   * a list's last blog) is read from MySQL as before.
   */
  private async pulledBlogsOf(
    inbox: Inbox,
    epoch: number,
    authorIds: readonly number[],
    page: { from: FeedPosition; limit: number; tokens: Array<string | null> | null },
  ): Promise<ScoredId[]> {
    const { from, limit } = page;
    if (limit === 0) return [];
    const tokens = page.tokens ?? (await inbox.pulledBlogTokens(authorIds, epoch));
    // A reader of thousands of big authors fills a few lists per page; the others' blogs come in
    // the one statement below until their lists are kept.
    let fills = 0;
    const mayFill = () => (fills += 1) <= PULLED_FILLS_PER_PAGE;
    const answers = await Promise.all(
      authorIds.map(async (authorId, i) => {
        const list = await this.pulledListOf(inbox, epoch, authorId, tokens[i], mayFill);
        return list && pulledAfter(list, from, limit);
      }),
    );
    const unanswered = authorIds.filter((_, i) => answers[i] === null);
    const fromMysql =
      unanswered.length === 0 ? [] : await this.store.pulledBlogs(unanswered, from, limit, this.fresh(from));
    return answers.flatMap((answer) => answer ?? []).concat(fromMysql);
  }

  /**
   * The author's kept list under `token`, read from MySQL when there is none and `mayFill()`
   * says so; null without a settled token or a fill.
   */
  private async pulledListOf(
    inbox: Inbox,
    epoch: number,
    authorId: number,
    token: string | null,
    mayFill: () => boolean,
  ): Promise<PulledList | null> {
    if (token === null) {
      // None of this generation (new, or lost), or a change committing: set one if none, so that
      // later pages can keep a list (an unsettled one stays).
      inbox
        .renewPulledBlogs(authorId, 'missing', epoch)
        .catch((error: unknown) => this.warn(`setting the pulled-blog token of author ${authorId} failed`, error));
      return null;
    }
    const kept = this.pulledLists.get(authorId, token);
    if (kept) return kept;
    const key = `${authorId}:${token}`;
    let fill = this.pulledFills.get(key);
    if (!fill) {
      if (!mayFill()) return null;
      fill = this.store
        .pulledBlogs([authorId], START, PULLED_BLOGS_KEPT, true)
        .then((newest) => {
          const list = { newest, complete: newest.length < PULLED_BLOGS_KEPT };
          this.pulledLists.set(authorId, token, list);
          return list;
        })
        .finally(() => this.pulledFills.delete(key));
      this.pulledFills.set(key, fill);
    }
    return fill;
  }

  // ---------------------------------------------------------------------------------------
  // Publishing and fan-out

  /**
   * A new blog of `authorId`, committed by `transact` (see PublishTransaction), the one entry
   * point of publishing as changeFollow is of follows. Inside the transaction, in this order:
   * whether the blog is fanned out (decidePush), the caller's blog row, the big-author
   * generation unsettled if this is the author's first not-fanned-out blog, for a pushed blog
   * the caller's deliver task, and last, together, the caller's beforeCommit and either the
   * task's entry in the fan-out watermark or (a blog nobody fans out) the author's pulled-blog
   * token unsettled. After the commit (or
   * the rollback) the big-author generation is settled. Enqueueing the task, or telling live
   * followers of a blog nobody fans out, is the caller's, after this returns.
   */
  async publish<B extends { score: number }>(authorId: number, transact: PublishTransaction<B>): Promise<Published<B>> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.publishOnce(authorId, transact);
      } catch (error) {
        if (!(error instanceof PublishTooSlow)) throw error;
        // The rolled-back task leaves the watermark now (else the relay's orphan pass clears it).
        if (error.task) await this.keeping.deliveryFinished([error.task]).catch(() => {});
        if (attempt >= PUBLISH_ATTEMPTS)
          throw unavailable(
            `the blog could not be published: ${PUBLISH_ATTEMPTS} attempts each took over ${this.settings.publishDeadlineMs} ms before their commit (the last ${error.ageMs} ms); nothing was published; retry shortly`,
          );
      }
    }
  }

  private async publishOnce<B extends { score: number }>(
    authorId: number,
    transact: PublishTransaction<B>,
  ): Promise<Published<B>> {
    let becameBig = false;
    let pulled = false;
    try {
      return await transact(async (sql, writes) => {
        const decision = await this.decidePush(sql, authorId);
        becameBig = decision.becameBig;
        // First of the writes that reach beyond MySQL: a duplicate key rolls back before them.
        const blog = await writes.insertBlog(decision.pushed);
        // Readers stop trusting their kept lists of big followees until this one is committed.
        if (becameBig) await this.bigAuthorChange('changing');
        pulled = !decision.pushed;
        const taskId = decision.pushed ? await writes.recordDeliver(blog) : null;
        await Promise.all([
          writes.beforeCommit?.(),
          taskId !== null
            ? // From the moment the blog is visible in MySQL, readers know that its delivery is
              // in flight (the fan-out watermark).
              this.keeping.deliveryStarted(sql, { taskId, authorId, score: blog.score })
            : // Or readers stop trusting their kept lists of this author's pulled blogs (pulled-blogs.ts).
              this.pulledBlogChange(authorId, 'changing'),
        ]);
        // The last step before the commit (PUBLISH_DEADLINE_MS).
        this.checkPublishDeadline(blog.score, taskId === null ? null : { taskId, authorId });
        return { blog, taskId, becameBig };
      });
    } finally {
      // The author's first blog that readers pull is committed (or rolled back): kept lists of
      // big followees lack them.
      if (becameBig) await this.bigAuthorChange('changed');
      if (pulled) await this.pulledBlogChange(authorId, 'changed');
    }
  }

  private checkPublishDeadline(createdAt: number, task: PublishTooSlow['task']): void {
    const ageMs = this.now().getTime() - createdAt;
    if (this.settings.publishDeadlineMs > 0 && ageMs > this.settings.publishDeadlineMs)
      throw new PublishTooSlow(ageMs, task);
  }

  /**
   * Whether a new blog of this author goes into inboxes: all (push), none (pull), or those of
   * authors with fewer than BIG_V_FOLLOWERS followers (hybrid). Decided per blog inside the
   * publishing transaction and stored with it (tb_blog.pushed); an author with a blog that is not
   * fanned out is marked (has_pulled_blogs), so readers of every model merge in exactly the blogs
   * that were not. `becameBig`: this is the author's first such blog (see bigAuthorChange).
   */
  private async decidePush(sql: Sql, authorId: number): Promise<{ pushed: boolean; becameBig: boolean }> {
    if (this.settings.model === 'push') return { pushed: true, becameBig: false };
    if (
      this.settings.model === 'hybrid' &&
      (await this.store.hasFewerFollowers(sql, authorId, this.settings.bigAuthorFollowers))
    ) {
      return { pushed: true, becameBig: false };
    }
    return { pushed: false, becameBig: await this.store.markHasPulledBlogs(sql, authorId) };
  }

  /**
   * An author's first not-fanned-out blog: kept lists of big followees lack them. Called with
   * 'changing' just before the publish commits (the generation is unsettled: no list is kept
   * or trusted) and with 'changed' after it (a new generation: lists kept before are dropped),
   * before the publish returns, so a page read after the commit has the blog. Never fails the
   * publish: when Redis is away, this process forgets its lists and the 'changed' step is
   * retried every second until it is done (pages are served from MySQL meanwhile).
   */
  private async bigAuthorChange(step: 'changing' | 'changed'): Promise<void> {
    await this.keeping.renewBigAuthors(step).catch((error: unknown) => {
      this.bigFollowees.clear();
      this.warn(`replacing the big-author generation (${step}) failed; retrying every second`, error);
      this.repairWhenPossible(
        () => this.keeping.renewBigAuthors('changed'),
        'gave up replacing the big-author generation: kept lists of big followees may miss an author until their readers follow or unfollow',
      );
    });
  }

  /**
   * A not-fanned-out blog of this author is about to commit or be deleted ('changing'), or it
   * has committed or rolled back ('changed'): the author's pulled-blog token is replaced
   * (pulled-blogs.ts), so that no process serves a list kept from before. Like bigAuthorChange,
   * never fails the write: when Redis is away, this process forgets its lists and the 'changed'
   * step is retried every second until it is done.
   */
  async pulledBlogChange(authorId: number, step: 'changing' | 'changed'): Promise<void> {
    await this.keeping.renewPulledBlogs(authorId, step).catch((error: unknown) => {
      this.pulledLists.clear();
      this.warn(`replacing the pulled-blog token of author ${authorId} (${step}) failed; retrying every second`, error);
      this.repairWhenPossible(
        () => this.keeping.renewPulledBlogs(authorId, 'changed'),
        `gave up replacing the pulled-blog token of author ${authorId}: pages may miss their newest blogs until they publish or delete again`,
      );
    });
  }

  /** Whether inboxes hold this blog: the fanned-out ones, whichever model published them. */
  inInboxes(blog: { pushed: boolean }): boolean {
    return blog.pushed;
  }

  /** Every chunk of these deliver tasks is written. */
  async deliveryFinished(tasks: ReadonlyArray<Pick<TaskInFlight, 'taskId' | 'authorId'>>): Promise<void> {
    await this.keeping.deliveryFinished(tasks);
  }

  /**
   * Writes a chunk of a blog's fan-out (see Deliveries in inbox.ts): the inboxes themselves skip
   * readers who do not follow the author; for those whose follow change is pending, MySQL says
   * whether they follow it now, and an unfollower gets the blog taken back. The chunk was made
   * from the follow graph as it was a moment ago. The live readers among those who got it hear
   * of it.
   */
  async deliver(readerIds: readonly number[], delivery: Delivery): Promise<void> {
    const { inbox } = this.keeping.redis();
    const { unsure, live } = await inbox.deliver(readerIds, delivery);
    const gone = unsure.length === 0 ? [] : await this.unfollowersAmong(delivery.authorId, unsure);
    const blog = { ...delivery.entry, authorId: delivery.authorId };
    await this.live?.delivered(gone.length === 0 ? live : live.filter((id) => !gone.includes(id)), blog);
    if (gone.length === 0) return;
    // One script call per reader, sent together (the client pipelines them), not awaited in turn.
    const unfollowed = (await this.store.followStates(delivery.authorId, gone)).filter((state) => !state.follows);
    await Promise.all(
      unfollowed.map((state) =>
        inbox.retractUnfollowed(state.readerId, delivery.entry.id, {
          version: state.version,
          authorId: delivery.authorId,
        }),
      ),
    );
  }

  /**
   * Delivery.listed, read just before MySQL lists an author's followers; null (inboxes read their
   * followees) when no generation is trusted, Redis cannot tell the time now, or its installs
   * record none (a cluster).
   */
  async followersListed(): Promise<Listing | null> {
    const epoch = this.trustedEpoch();
    if (epoch === null || !this.keeping.available()) return null;
    try {
      const at = await this.keeping.redis().inbox.clock();
      return at > 0 && this.stillTrusted(epoch) ? { at, epoch } : null;
    } catch {
      return null;
    }
  }

  /** Which of these readers do not follow the author now, by MySQL. */
  private async unfollowersAmong(authorId: number, readerIds: readonly number[]): Promise<number[]> {
    const following = await this.store.followersAmong(authorId, readerIds);
    return readerIds.filter((id) => !following.has(id));
  }

  /** Takes a deleted blog out of these readers' inboxes. */
  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    await this.keeping.redis().inbox.retract(readerIds, blogId);
  }

  /** The relay's pass over the watermark (watermark.ts). */
  async maintainWatermark(): Promise<void> {
    await this.keeping.maintainWatermark();
  }

  /** Rebuilds a lost watermark now (seed script, benchmarks, tests). */
  async syncWatermark(): Promise<void> {
    await this.keeping.syncWatermark();
  }

  /** Finished deliver tasks whose leave of the watermark is still on its way (FanoutService.idle). */
  finishedInWatermark(): Promise<number> {
    return this.keeping.finishedInWatermark();
  }

  // ---------------------------------------------------------------------------------------
  // Follows

  /**
   * A follow or unfollow of `authorId` by `readerId` (for the feed: a mute is an unfollow, an
   * unmute a follow), committed by `transact` (see FollowTransaction). Inside the transaction the change is written to the outbox and the inbox
   * is marked pending; after the commit the change is applied and the mark cleared. If this
   * process dies or Redis is away at any point after the commit, the relay applies it from the
   * outbox (see inbox.ts).
   */
  async changeFollow(readerId: number, authorId: number, follow: boolean, transact: FollowTransaction): Promise<void> {
    const change = await transact((sql, version, inFeed = follow) =>
      this.keeping.recordFollowChange(sql, { readerId, authorId, follow: inFeed, version }),
    );
    if (change) await this.applyFollowChange(change);
    if (change && !change.follow) await this.retractFromLive(readerId, authorId);
  }

  /**
   * A committed change ended "reader sees author" (an unfollow, and whatever else ends it
   * through changeFollow, the one entry point of follow changes): the reader's live clients
   * hear that the author's blogs left their feed (followFeedRemoved). Only when the reader
   * watches (one lookup); then the author's newest blogs, FEED_MAX_ITEMS at most (no inbox holds
   * more of anyone) and MAX_REMOVED_PER_EVENT at most. Never fails the change: live events are
   * hints.
   */
  async retractFromLive(readerId: number, authorId: number): Promise<void> {
    const { live } = this;
    if (!live) return;
    try {
      if (!(await live.watching(readerId))) return;
      const newest = await this.store.newestOfAuthor(authorId, Math.min(this.settings.maxItems, MAX_REMOVED_PER_EVENT));
      await live.retracted(
        readerId,
        newest.map((blog) => blog.id),
      );
    } catch (error) {
      this.warn(
        `telling the live clients of user ${readerId} that the blogs of ${authorId} left their feed failed`,
        error,
      );
    }
  }

  /**
   * Applies a committed follow change to its reader's inbox, clears its mark and forgets its
   * outbox row. Safe to run twice or late (versions, inbox.ts). When it cannot run now (Redis away)
   * the row stays for the relay; without Redis there is no inbox to apply it to (and no row).
   */
  async applyFollowChange(change: PendingFollowChange): Promise<void> {
    if (!this.keeping.available()) return;
    try {
      await this.applyFollowChangeNow(change);
    } catch (error) {
      this.warn(`applying follow change ${change.id} of user ${change.readerId} failed; the relay applies it`, error);
    }
  }

  /** applyFollowChange's steps; throws when Redis or MySQL fails one (the row stays). */
  private async applyFollowChangeNow(change: PendingFollowChange): Promise<void> {
    const { inbox } = this.keeping.redis();
    // Pending while it is applied, as from before its commit: a chunk that reaches the inbox
    // meanwhile writes the blog and asks MySQL (UNSURE) instead of trusting the followees, which
    // do not have the change yet. The mark made before the commit is missing when Redis was
    // away then (the relay applies such a change later), so it is made again here.
    await inbox.markPending(change.readerId, change.id);
    await (change.follow ? this.followed(change.readerId, change) : this.unfollowed(change.readerId, change));
    await inbox.clearPending(change.readerId, change.id);
    await this.store.forgetFollowChange(change.id);
  }

  /**
   * Applies the follow changes of the outbox written before `before` (the relay's pass, with a
   * grace for the processes that made them; catching up, all of them). Returns how many. A
   * reader's changes apply in order, and stop at the first that fails; then the pass throws once
   * the batch is done (the rows stay for the next pass): going on would read the same rows again
   * at once, a busy loop while Redis refuses writes, and a catch-up must not trust inboxes that
   * lack a change.
   */
  async applyFollowChanges(before: Date | null): Promise<number> {
    if (!this.keeping.available()) return 0;
    let applied = 0;
    for (;;) {
      const changes = await this.store.followChangesToApply(before, FOLLOW_CHANGE_BATCH);
      const byReader = new Map<number, PendingFollowChange[]>();
      for (const change of changes) byReader.set(change.readerId, [...(byReader.get(change.readerId) ?? []), change]);
      const failures: unknown[] = [];
      await Promise.all(
        [...byReader.values()].map(async (ofReader) => {
          try {
            for (const change of ofReader) {
              await this.applyFollowChangeNow(change);
              applied += 1;
            }
          } catch (error) {
            failures.push(error);
          }
        }),
      );
      if (failures.length > 0) {
        throw new AggregateError(
          failures,
          `the follow changes of ${failures.length} user(s) could not be applied (${applied} were; the first failure: ${messageOf(failures[0])}); they stay in the outbox for the next pass`,
        );
      }
      if (changes.length < FOLLOW_CHANGE_BATCH) return applied;
    }
  }

  /** The relay's pass over the follow outbox: changes their own process has not applied within the grace. */
  relayFollowChanges(): Promise<number> {
    return this.applyFollowChanges(new Date(this.now().getTime() - FOLLOW_CHANGE_GRACE_MS));
  }

  /**
   * An inbox has been pending longer than PENDING_STALE_MS: a change whose transaction never
   * committed (its process died between the mark and the commit) left its mark. Marks of
   * changes still in the outbox are applied; the others are cleared.
   */
  private settleStaleChanges(readerId: number): void {
    const { inbox } = this.keeping.redis();
    const settle = async () => {
      const marked = await inbox.pendingChanges(readerId);
      const waiting = await this.store.followChangesAmong(marked);
      const committed = new Set(waiting.map((change) => change.id));
      for (const id of marked) if (!committed.has(id)) await inbox.clearPending(readerId, id);
      for (const change of waiting) await this.applyFollowChange(change);
    };
    const chore = settle().catch((error: unknown) =>
      this.warn(`settling stale follow changes of user ${readerId} failed`, error),
    );
    this.chores.add(chore);
    void chore.finally(() => this.chores.delete(chore));
  }

  /** A follow (committed with `change.version`): the followee's newest blogs enter the inbox at once. */
  async followed(readerId: number, change: FollowChange): Promise<void> {
    const { inbox } = this.keeping.redis();
    // Entries of the followee the inbox still holds (an unfollow overtaken by this follow left
    // them, deleted ones included) are replaced by what MySQL says is newest now.
    const held = await inbox.blogIds(readerId);
    if (held === null) return; // no inbox: its rebuild reads the follow from MySQL
    const [newest, stale] = await Promise.all([
      this.store.newestOfAuthor(change.authorId, this.settings.backfillItems + 1),
      this.store.idsOfAuthorAmong(change.authorId, held),
    ]);
    const copied = newest.slice(0, this.settings.backfillItems).filter((blog) => this.inInboxes(blog));
    // If the followee has a blog older than those copied, the inbox is complete only above it:
    // the floor rises to just above that blog, and the cold path serves what lies below.
    const firstLeft = newest[this.settings.backfillItems];
    const outcome = await inbox.applyFollow(
      readerId,
      change,
      copied,
      firstLeft === undefined ? null : firstLeft.score + 1,
      stale,
    );
    // A blog deleted since it was read may have had its retract pass this inbox before the
    // copy landed: asked after the write, MySQL says which to take back (a later delete's
    // retract comes after this write anyway). Also when this change was applied before (a
    // retry after a failure that may have come between the copy and this check).
    if (outcome === 'stale' || copied.length === 0) return;
    const deleted = await this.store.deletedAmong(copied.map((blog) => blog.id));
    if (deleted.length > 0) await Promise.all(deleted.map((id) => inbox.retract([readerId], id)));
  }

  /** An unfollow (committed with `change.version`): the followee's blogs leave the inbox at once. */
  async unfollowed(readerId: number, change: FollowChange): Promise<void> {
    const { inbox } = this.keeping.redis();
    const inInbox = await inbox.markUnfollow(readerId, change);
    if (inInbox === null) return; // stale (a newer change of the pair came first), or no inbox
    await inbox.removeUnfollowed(readerId, change, await this.store.idsOfAuthorAmong(change.authorId, inInbox));
  }

  private dropWhenPossible(inbox: Inbox, readerId: number): void {
    this.repairWhenPossible(
      () => inbox.drop(readerId),
      `gave up dropping the inbox of user ${readerId}; it expires in ACTIVE_DAYS`,
    );
  }

  /** Runs a Redis write now, and again every second while it fails (REPAIR_ATTEMPTS times). */
  private repairWhenPossible(write: () => Promise<void>, gaveUp: string, attempt = 0): void {
    write().catch(() => {
      if (this.stopped) return;
      if (attempt < REPAIR_ATTEMPTS)
        setTimeout(() => this.repairWhenPossible(write, gaveUp, attempt + 1), 1000).unref();
      else this.warn(gaveUp);
    });
  }

  // ---------------------------------------------------------------------------------------
  // Inbox lifecycle

  /**
   * A new user's inbox: valid and empty (their feed is empty), so fan-out reaches it. Skipped
   * where pages do not read inboxes (the pull model, no Redis), and with Redis down or not yet
   * trusted: like any missing inbox, it is built on the first feed read (feed.keeping.read.ts).
   */
  async openInbox(userId: number): Promise<void> {
    await this.keeping.openInbox(userId, this.trustedEpoch());
  }

  /**
   * A signed-in user is active: their inbox lives ACTIVE_DAYS from now, at most once per
   * ACTIVITY_WRITE_INTERVAL_MS per process. Activity is kept nowhere else: an inbox's expiry is
   * what makes fan-out skip an inactive follower (it writes only to inboxes that exist), so a
   * MySQL column of it would be written on every request and read by nothing.
   */
  async recordActivity(userId: number): Promise<void> {
    if (!this.keeping.available()) return;
    const now = Date.now();
    const last = this.activityWrittenAt.get(userId);
    if (last !== undefined && Math.abs(now - last) < ACTIVITY_WRITE_INTERVAL_MS) return;
    if (this.activityWrittenAt.size > 100_000) this.activityWrittenAt.clear();
    this.activityWrittenAt.set(userId, now);
    await this.keeping.redis().inbox.touch(userId);
  }

  /** How deep a rebuild reads (FeedSettings.rebuildItems). */
  private rebuildItems(): number {
    return Math.min(this.settings.rebuildItems ?? this.settings.maxItems, this.settings.maxItems);
  }

  /**
   * Whether the reader's rebuild, started now or running already, ended within rebuildWaitMs;
   * false at once when none can start (rebuildsInFlight running). Ended is not succeeded:
   * the caller reads the inbox again to know.
   */
  private async rebuiltInTime(readerId: number): Promise<boolean> {
    this.rebuildInBackground(readerId);
    const work = this.rebuilding.get(readerId);
    if (!work) return false;
    let timer: NodeJS.Timeout | undefined;
    const waitMs = this.settings.rebuildWaitMs ?? DEFAULT_FEED_REBUILD_WAIT_MS;
    const waited = new Promise<false>((resolve) => (timer = setTimeout(resolve, waitMs, false)));
    try {
      return await Promise.race([work.then(() => true), waited]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Rebuilds a missing inbox from MySQL, once at a time per reader and rebuildsInFlight per process, without blocking the request. */
  private rebuildInBackground(readerId: number): void {
    const inFlight = this.settings.rebuildsInFlight ?? DEFAULT_FEED_REBUILDS_IN_FLIGHT;
    if (this.rebuilding.has(readerId) || this.rebuilding.size >= inFlight) return;
    const work = this.rebuild(readerId)
      .catch((error: unknown) => this.warn(`rebuilding the inbox of user ${readerId} failed`, error))
      .finally(() => this.rebuilding.delete(readerId));
    this.rebuilding.set(readerId, work);
  }

  /** Builds a reader's inbox now, if it is missing (seed script, benchmarks, tests). */
  async rebuildInbox(readerId: number): Promise<void> {
    await this.rebuild(readerId);
  }

  /** Inbox rebuilds running in this process now (feed_inbox_rebuilds_in_flight). */
  rebuildsInFlight(): number {
    return this.rebuilding.size;
  }

  /** Resolves when the rebuilds, syncs and catch-ups started so far are done (tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.rebuilding.values(), ...this.chores, this.keeping.idle(), this.catchingUp]);
  }

  /** begin -> snapshot -> finish (see Rebuild in inbox.ts), again when a follow change raced it. */
  private async rebuild(readerId: number): Promise<void> {
    const { inbox, generation } = this.keeping.redis();
    const epoch = await generation.confirmed();
    for (let attempt = 0; attempt < REBUILD_ATTEMPTS; attempt += 1) {
      buildCounter += 1;
      const token = `${this.owner}:${buildCounter}`;
      if (!(await inbox.beginBuild(readerId, token, epoch))) return; // valid, or another rebuild runs
      try {
        const snapshot = await this.store.snapshot(readerId, this.rebuildItems());
        const lowest = snapshot.entries[snapshot.entries.length - 1];
        const installed = {
          version: snapshot.version,
          followeeIds: snapshot.followeeIds,
          mutedIds: snapshot.mutedIds,
          entries: snapshot.entries.filter((blog) => this.inInboxes(blog)),
          floor: snapshot.complete || !lowest ? 0 : lowest.score + 1,
        };
        if ((await inbox.finishBuild(readerId, token, installed)) !== 'raced') return;
      } catch (error) {
        this.dropWhenPossible(inbox, readerId);
        throw error;
      }
    }
    this.warn(`the inbox of user ${readerId} was not rebuilt: follow changes kept racing it; pages come from MySQL`);
  }
}

/**
 * What this process does with inboxes (feed.keeping.ts), from whether it has Redis and its
 * model: none without Redis; kept with it; and read by pages unless the model is pull.
 */
function inboxKeeping(deps: FeedServiceDeps & { now: () => Date }): InboxKeeping {
  const { inbox, generation, settings } = deps;
  if (!inbox) return new NoInboxes();
  if (!generation) throw new Error('inboxes need a Redis generation (feed/generation.ts)');
  const kept = {
    inbox,
    generation,
    inFlight: deps.inFlight ?? null,
    watermarkSettleMs: settings.watermarkSettleMs,
    outbox: deps.store,
    warn: deps.warn,
    now: deps.now,
  };
  return settings.model === 'pull' ? new KeptInboxes(kept) : new ReadInboxes(kept);
}

/** A publish about to commit later than PUBLISH_DEADLINE_MS after its created_at: rolled back and run again. */
class PublishTooSlow extends Error {
  constructor(
    readonly ageMs: number,
    /** Its deliver task, which entered the watermark before the rollback (null: not fanned out). */
    readonly task: Pick<TaskInFlight, 'taskId' | 'authorId'> | null,
  ) {
    super(`the publish took ${ageMs} ms before its commit`);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
