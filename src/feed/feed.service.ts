/**
 * The follow feed: every rule of what enters an inbox, when an inbox is trusted and down to
 * where, and how a page is read, in one place (the shape of Mastodon's FeedManager). The inbox
 * itself, its invariant and the mechanisms that keep it (floor, versions, watermark) are
 * described in inbox.ts; this file applies them.
 *
 * followFeed(V) = every live blog whose author V follows now, in canonical order
 * (created_at DESC, id DESC). Whatever the model, a page is the same list cut after the same
 * position, so push, pull and hybrid return identical pages:
 *
 * - pull: one MySQL (or embedded SQLite) query over V's followees (FeedStore.feedPage). No
 *   inboxes, no Redis.
 * - push: V's inbox, trusted at or above its floor and, for blogs whose fan-out is still in
 *   flight, merged with MySQL above the fan-out watermark. Past the floor the page continues
 *   from MySQL after its last item: the cold path. A missing inbox (Redis lost it, it expired
 *   while V was inactive) is served from MySQL at once and rebuilt in the background.
 * - hybrid: push, plus the blogs of big authors that were not fanned out, merged in at read
 *   time.
 *
 * Round trips of a page: one to Redis (the inbox, the watermark and the big-author generation
 * together: one script on a single server), the big followees' blogs (hybrid; the list of big
 * followees itself only when the reader's kept list is out of date, see big-followees.ts), the
 * span above the watermark only while a fan-out is in flight, the cold path only past the
 * floor, then one statement for the page's data (BlogStore.forViewer). None depends on `first`.
 */
import { hostname } from 'node:os';
import type { FeedModel } from '../kernel/config';
import type { Sql } from '../db/database';
import type { Metrics } from '../kernel/observability';
import { FeedPosition, ScoredId } from '../kernel/pagination/cursor';
import type { LiveFeed } from './feed.live';
import { FeedStore } from './feed.store';
import { BigFolloweeLists } from './big-followees';
import { buildToken, Delivery, FollowChange, Inbox, InboxView, PENDING_STALE_MS } from './inbox';
import { certainMerge, certainToTheEnd, keysetAfter, SourceReading, sourceRead } from './merge';
import { fetchSize, Page, PageRequest, slicePage } from '../kernel/pagination/page';

export interface FeedSettings {
  model: FeedModel;
  /** FEED_MAX_ITEMS: the most entries an inbox keeps. */
  maxItems: number;
  /** FOLLOW_BACKFILL_ITEMS: how many of a new followee's newest blogs enter the inbox at once. */
  backfillItems: number;
  /** BIG_V_FOLLOWERS: in the hybrid model, an author with this many followers is not fanned out. */
  bigAuthorFollowers: number;
  /**
   * WATERMARK_SETTLE_MS: a watermark sync reads the unfinished tasks twice, this far apart,
   * before it says the set is complete: a publish adds its task just before its transaction
   * commits, so a commit that the first read missed lands within this time.
   */
  watermarkSettleMs: number;
}

/** The reads of the truth the rules need (FeedStore on MySQL; an in-memory one in the model test). */
export type FeedTruth = Pick<
  FeedStore,
  | 'feedPage'
  | 'snapshot'
  | 'now'
  | 'pulledFollowees'
  | 'pulledBlogs'
  | 'hasFewerFollowers'
  | 'markHasPulledBlogs'
  | 'newestOfAuthor'
  | 'idsOfAuthorAmong'
  | 'followersAmong'
  | 'followStates'
  | 'deletedAmong'
>;

/** The fan-out's bookkeeping, as far as the watermark needs it (FanoutStore). */
export interface InFlightSource {
  /** Deliver tasks not finished, with their blogs' scores. */
  unfinishedDeliveries(): Promise<Array<{ taskId: number; score: number }>>;
  /** Of these task ids, those that are finished, and those that do not exist (yet, or rolled back). */
  finishedAmong(taskIds: readonly number[]): Promise<{ done: number[]; missing: number[] }>;
}

/**
 * A user's activity pushes their inbox's expiry back at most this often per process (not on
 * every request): enough for ACTIVE_DAYS, which counts in days.
 */
export const ACTIVITY_WRITE_INTERVAL_MS = 5 * 60 * 1000;

/**
 * Attempts (one a second) of a Redis write that must happen once Redis answers again: dropping an
 * inbox that a failed write left in an unknown state, replacing the big-author generation.
 */
const REPAIR_ATTEMPTS = 600;

/** Rebuilds tried in a row when a follow change keeps racing them (then MySQL serves). */
const REBUILD_ATTEMPTS = 3;

/** A task in the watermark that MySQL does not know (its publish rolled back) is dropped after this. */
const WATERMARK_ORPHAN_MS = 60_000;

let buildCounter = 0;

export class FeedService {
  private readonly rebuilding = new Map<number, Promise<void>>();
  private readonly bigFollowees = new BigFolloweeLists();
  private readonly activityWrittenAt = new Map<number, number>();
  private syncing: Promise<void> | null = null;
  /** Watermark members that MySQL did not know, with when that was first seen. */
  private readonly orphansSeenAt = new Map<number, number>();
  private readonly owner = `${hostname()}:${process.pid}`;
  /** A publish of this process could not add its task to the watermark (Redis was away). */
  private watermarkMissedTask = false;

  constructor(
    private readonly store: FeedTruth,
    /** The inboxes; null in the pull model, which keeps none. */
    private readonly inbox: Inbox | null,
    private readonly settings: FeedSettings,
    private readonly warn: (message: string, error?: unknown) => void,
    private readonly metrics?: Pick<Metrics, 'pageRead'>,
    private readonly inFlight?: InFlightSource,
    /** Tells live subscribers which blogs reached their inboxes (feed.live.ts). */
    private readonly live?: Pick<LiveFeed, 'delivered'>,
  ) {
    if ((settings.model === 'pull') !== (inbox === null)) {
      throw new Error(`FEED_MODEL=${settings.model} ${inbox ? 'keeps no inboxes' : 'needs inboxes (Redis)'}`);
    }
    inbox?.onReconnect?.(() => this.repairWatermark());
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

  /** The first `n` feed entries of the viewer after `from`, in canonical order. */
  async entries(viewerId: number, from: FeedPosition, n: number): Promise<ScoredId[]> {
    const { inbox } = this;
    if (!inbox) return this.pullPage(viewerId, from, n); // the pull model
    if (!inbox.available()) return this.pullPage(viewerId, from, n); // Redis is down: degraded, not broken
    try {
      return await this.entriesFromInbox(inbox, viewerId, from, n);
    } catch (error) {
      this.warn(`reading the inbox of user ${viewerId} failed; serving the page from MySQL`, error);
      return this.pullPage(viewerId, from, n);
    }
  }

  private pullPage(viewerId: number, from: FeedPosition, n: number): Promise<ScoredId[]> {
    this.metrics?.pageRead('pull');
    return this.store.feedPage(viewerId, from, n);
  }

  private async entriesFromInbox(inbox: Inbox, viewerId: number, from: FeedPosition, n: number): Promise<ScoredId[]> {
    const read = sourceRead(from, n);
    const { view, watermark, bigAuthors: generation } = await inbox.read(viewerId, read.from, read.limit);
    if (view.state === 'missing') this.rebuildInBackground(inbox, viewerId);
    if (view.state === 'pending' && Date.now() - view.since > PENDING_STALE_MS) {
      // The change's process died between its commit and its apply: start again from MySQL.
      this.warn(`the inbox of user ${viewerId} waited on a follow change for over ${PENDING_STALE_MS} ms; it is rebuilt`);
      this.dropWhenPossible(inbox, viewerId);
    }
    // Redis lost the watermark: no inbox can be trusted until it is rebuilt from the outbox.
    if (!watermark.synced) this.syncInBackground();
    if (view.state !== 'valid' || !watermark.synced) return this.pullPage(viewerId, from, n);
    const sources: Array<SourceReading<ScoredId>> = [{ items: view.entries, limit: read.limit, floor: view.floor }];
    const bigAuthors = this.settings.model === 'hybrid' ? await this.bigFolloweesOf(inbox, viewerId, view, generation) : [];
    if (bigAuthors.length > 0) sources.push({ items: await this.store.pulledBlogs(bigAuthors, read.from, read.limit), limit: read.limit, floor: null });
    const inFlight = watermark.oldest;
    if (inFlight !== null && (read.from.maxScore === null || inFlight <= read.from.maxScore)) {
      // Blogs at or above the watermark may still be on their way to this inbox: MySQL has them.
      sources.push({ items: await this.store.feedPage(viewerId, read.from, read.limit, inFlight), limit: read.limit, floor: null });
    }
    const certain = certainMerge(sources);
    const covered = certain.slice(read.skip, read.skip + n);
    if (covered.length === n || certainToTheEnd(sources)) {
      this.metrics?.pageRead('inbox');
      return covered;
    }
    // Below what the sources are sure of (the inbox's floor above 0), MySQL continues: the cold path.
    this.metrics?.pageRead('cold');
    const consumed = certain.slice(0, read.skip + covered.length);
    const next = consumed.length === 0 || certain.length < read.skip ? from : keysetAfter(consumed[consumed.length - 1]);
    return covered.concat(await this.store.feedPage(viewerId, next, n - covered.length));
  }

  /** The reader's big followees (hybrid): the kept list while it is right, else read again. */
  private async bigFolloweesOf(
    inbox: Inbox,
    viewerId: number,
    view: Extract<InboxView, { state: 'valid' }>,
    generation: string | null,
  ): Promise<readonly number[]> {
    const kept = this.bigFollowees.get(viewerId, view.version, generation);
    if (kept) return kept;
    // Redis has no generation (new, or lost): set one, so that the next pages can keep lists.
    if (generation === null) inbox.renewBigAuthors('missing').catch((error: unknown) => this.warn('setting the big-author generation failed', error));
    const { version, authorIds } = await this.store.pulledFollowees(viewerId);
    this.bigFollowees.set(viewerId, version, generation, authorIds);
    return authorIds;
  }

  // ---------------------------------------------------------------------------------------
  // Publishing and fan-out

  /**
   * Whether a new blog of this author goes into inboxes: all (push), none (pull), or those of
   * authors with fewer than BIG_V_FOLLOWERS followers (hybrid). Decided per blog inside the
   * publishing transaction and stored with it (tb_blog.pushed), so an author crossing the
   * threshold either way loses nothing: readers merge in exactly the blogs that were not fanned
   * out. `becameBig`: this is the author's first blog that is not (see bigAuthorChange).
   */
  async decidePush(sql: Sql, authorId: number): Promise<{ pushed: boolean; becameBig: boolean }> {
    if (this.settings.model !== 'hybrid') return { pushed: this.settings.model === 'push', becameBig: false };
    if (await this.store.hasFewerFollowers(sql, authorId, this.settings.bigAuthorFollowers)) return { pushed: true, becameBig: false };
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
  async bigAuthorChange(step: 'changing' | 'changed'): Promise<void> {
    const { inbox } = this;
    if (!inbox) return;
    await inbox.renewBigAuthors(step).catch((error: unknown) => {
      this.bigFollowees.clear();
      this.warn(`replacing the big-author generation (${step}) failed; retrying every second`, error);
      this.repairWhenPossible(
        () => inbox.renewBigAuthors('changed'),
        'gave up replacing the big-author generation: kept lists of big followees may miss an author until their readers follow or unfollow',
      );
    });
  }

  /**
   * Whether inboxes hold this blog: in the hybrid model only the fanned-out ones (readers pull
   * the others, and a delete of those walks no followers); in the push model every one, also
   * those published under another model; in the pull model none.
   */
  inInboxes(blog: { pushed: boolean }): boolean {
    return this.settings.model === 'push' || (this.settings.model === 'hybrid' && blog.pushed);
  }

  /**
   * A deliver task is about to commit: readers stop trusting inboxes at its score until it is
   * delivered. Never fails the publish: with Redis away, the watermark is rebuilt from the
   * outbox when Redis is back (and until then pages come from MySQL).
   */
  async deliveryStarted(taskId: number, score: number): Promise<void> {
    if (!this.inbox) return;
    if (!this.inbox.available()) {
      this.watermarkMissedTask = true;
      this.warn(`fan-out task ${taskId} is not in the fan-out watermark: Redis is away; the watermark is rebuilt when it is back`);
      return;
    }
    await this.inbox.markInFlight(taskId, score).catch((error: unknown) => {
      this.watermarkMissedTask = true;
      this.warn(`fan-out task ${taskId} is not in the fan-out watermark; it is rebuilt`, error);
      this.repairWatermark();
    });
  }

  /**
   * After a publish left its task out of the watermark: mark the watermark incomplete (every
   * process then reads pages from MySQL) and rebuild it from the outbox. Runs when Redis is
   * reachable again.
   */
  private repairWatermark(): void {
    const { inbox } = this;
    if (!inbox || !this.watermarkMissedTask) return;
    inbox
      .unsyncWatermark()
      .then(() => {
        this.watermarkMissedTask = false;
        this.syncInBackground();
      })
      .catch(() => {
        // Still unreachable: the next reconnect tries again.
      });
  }

  /** Every chunk of these deliver tasks is written. */
  async deliveryFinished(taskIds: readonly number[]): Promise<void> {
    await this.inbox?.clearInFlight(taskIds);
  }

  /**
   * Writes a chunk of a blog's fan-out, then asks MySQL who of these readers still follows the
   * author and takes the blog back from the others: the chunk was made from the follow graph
   * as it was a moment ago (see Deliveries in inbox.ts).
   */
  async deliver(readerIds: readonly number[], delivery: Delivery): Promise<void> {
    const inbox = this.requireInbox();
    await inbox.deliver(readerIds, delivery);
    const following = await this.store.followersAmong(delivery.authorId, readerIds);
    // The blog entered the feeds of the readers who still follow its author: the live ones hear of it.
    await this.live?.delivered(
      readerIds.filter((id) => following.has(id)),
      { ...delivery.entry, authorId: delivery.authorId },
    );
    const gone = readerIds.filter((id) => !following.has(id));
    if (gone.length === 0) return;
    // One script call per reader, sent together (the client pipelines them), not awaited in turn.
    const unfollowed = (await this.store.followStates(delivery.authorId, gone)).filter((state) => !state.follows);
    await Promise.all(
      unfollowed.map((state) =>
        inbox.retractUnfollowed(state.readerId, delivery.entry.id, { version: state.version, authorId: delivery.authorId }, delivery.readAt),
      ),
    );
  }

  /** Takes a deleted blog out of these readers' inboxes. */
  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    await this.requireInbox().retract(readerIds, blogId);
  }

  /** The database's clock (ms): a fan-out chunk records it right after reading its followers. */
  databaseNow(): Promise<number> {
    return this.store.now();
  }

  // ---------------------------------------------------------------------------------------
  // Follows

  /**
   * A follow or unfollow of `authorId` by `readerId`: `commit` commits it in MySQL and returns
   * its version (null when it changed nothing). The inbox is marked pending before the commit
   * and cleared after the change is applied, so that no reader trusts an inbox that misses a
   * committed change (see inbox.ts).
   */
  async changeFollow(readerId: number, authorId: number, follow: boolean, commit: () => Promise<number | null>): Promise<void> {
    const { inbox } = this;
    if (!inbox) {
      await commit();
      return;
    }
    if (!inbox.available()) {
      // Redis is down or hangs: the inbox cannot follow the change, so it goes (when Redis is
      // back) and is rebuilt from MySQL; the follow itself does not wait on Redis.
      if ((await commit()) !== null) this.dropWhenPossible(inbox, readerId);
      return;
    }
    const marked = await inbox.markPending(readerId, Date.now()).then(
      () => true,
      (error: unknown) => {
        this.warn(`marking a follow change of user ${readerId} failed; the inbox follows it as usual`, error);
        return false;
      },
    );
    try {
      const version = await commit();
      if (version === null) return;
      const change = { version, authorId };
      await (follow ? this.followed(readerId, change) : this.unfollowed(readerId, change));
    } finally {
      if (marked) await this.updateInbox(inbox, readerId, () => inbox.clearPending(readerId));
    }
  }

  /** A follow (committed with `change.version`): the followee's newest blogs enter the inbox at once. */
  async followed(readerId: number, change: FollowChange): Promise<void> {
    const { inbox } = this;
    if (!inbox) return;
    await this.updateInbox(inbox, readerId, async () => {
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
      const applied = await inbox.applyFollow(readerId, change, copied, firstLeft === undefined ? null : firstLeft.score + 1, stale);
      // A blog deleted since it was read may have had its retract pass this inbox before the
      // copy landed: asked after the write, MySQL says which to take back (a later delete's
      // retract comes after this write anyway).
      if (!applied || copied.length === 0) return;
      const deleted = await this.store.deletedAmong(copied.map((blog) => blog.id));
      if (deleted.length > 0) await Promise.all(deleted.map((id) => inbox.retract([readerId], id)));
    });
  }

  /** An unfollow (committed with `change.version`): the followee's blogs leave the inbox at once. */
  async unfollowed(readerId: number, change: FollowChange): Promise<void> {
    const { inbox } = this;
    if (!inbox) return;
    await this.updateInbox(inbox, readerId, async () => {
      const inInbox = await inbox.markUnfollow(readerId, change);
      if (inInbox === null) return; // stale (a newer change of the pair came first), or no inbox
      await inbox.removeUnfollowed(readerId, change, await this.store.idsOfAuthorAmong(change.authorId, inInbox));
    });
  }

  /**
   * Applies a follow's change to an inbox. The follow itself is committed in MySQL; if the inbox
   * cannot follow (Redis down), it would be valid but wrong, so it is dropped instead, now or,
   * while Redis is away, as soon as it is back; the next read rebuilds it from MySQL.
   */
  private async updateInbox(inbox: Inbox, readerId: number, change: () => Promise<void>): Promise<void> {
    try {
      await change();
    } catch (error) {
      this.warn(`updating the inbox of user ${readerId} failed; it will be dropped and rebuilt`, error);
      this.dropWhenPossible(inbox, readerId);
    }
  }

  private dropWhenPossible(inbox: Inbox, readerId: number): void {
    this.repairWhenPossible(() => inbox.drop(readerId), `gave up dropping the inbox of user ${readerId}; it expires in ACTIVE_DAYS`);
  }

  /** Runs a Redis write now, and again every second while it fails (REPAIR_ATTEMPTS times). */
  private repairWhenPossible(write: () => Promise<void>, gaveUp: string, attempt = 0): void {
    write().catch(() => {
      if (attempt < REPAIR_ATTEMPTS) setTimeout(() => this.repairWhenPossible(write, gaveUp, attempt + 1), 1000).unref();
      else this.warn(gaveUp);
    });
  }

  // ---------------------------------------------------------------------------------------
  // Inbox lifecycle

  /**
   * A new user's inbox: valid and empty (their feed is empty), so fan-out reaches it. With Redis
   * down or hanging it is skipped: like any missing inbox, it is built on the first feed read.
   */
  async openInbox(userId: number): Promise<void> {
    const { inbox } = this;
    if (!inbox) return;
    if (!inbox.available()) {
      this.warn(`Redis is unavailable: the inbox of new user ${userId} is built on their first feed read`);
      return;
    }
    await inbox.create(userId, 0);
  }

  /**
   * A signed-in user is active: their inbox lives ACTIVE_DAYS from now, at most once per
   * ACTIVITY_WRITE_INTERVAL_MS per process. Activity is kept nowhere else: an inbox's expiry is
   * what makes fan-out skip an inactive follower (it writes only to inboxes that exist), so a
   * MySQL column of it would be written on every request and read by nothing.
   */
  async recordActivity(userId: number): Promise<void> {
    const { inbox } = this;
    if (!inbox?.available()) return;
    const now = Date.now();
    const last = this.activityWrittenAt.get(userId);
    if (last !== undefined && now - last < ACTIVITY_WRITE_INTERVAL_MS) return;
    if (this.activityWrittenAt.size > 100_000) this.activityWrittenAt.clear();
    this.activityWrittenAt.set(userId, now);
    await inbox.touch(userId);
  }

  /** Rebuilds a missing inbox from MySQL, once at a time per reader, without blocking the request. */
  private rebuildInBackground(inbox: Inbox, readerId: number): void {
    if (this.rebuilding.has(readerId)) return;
    const work = this.rebuild(inbox, readerId)
      .catch((error: unknown) => this.warn(`rebuilding the inbox of user ${readerId} failed`, error))
      .finally(() => this.rebuilding.delete(readerId));
    this.rebuilding.set(readerId, work);
  }

  /** Builds a reader's inbox now, if it is missing (seed script, benchmarks, tests). */
  async rebuildInbox(readerId: number): Promise<void> {
    await this.rebuild(this.requireInbox(), readerId);
  }

  /** Inbox rebuilds running in this process now (feed_inbox_rebuilds_in_flight). */
  rebuildsInFlight(): number {
    return this.rebuilding.size;
  }

  /** Resolves when the rebuilds and syncs started so far are done (tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.rebuilding.values(), this.syncing]);
  }

  /** begin -> snapshot -> finish (see Rebuild in inbox.ts), again when a follow change raced it. */
  private async rebuild(inbox: Inbox, readerId: number): Promise<void> {
    for (let attempt = 0; attempt < REBUILD_ATTEMPTS; attempt += 1) {
      buildCounter += 1;
      const token = buildToken(`${this.owner}:${buildCounter}`, Date.now());
      // MySQL's time before the snapshot: chunks made before it are in the snapshot already.
      const since = await this.store.now();
      if (!(await inbox.beginBuild(readerId, token, since))) return; // valid, or another rebuild runs
      try {
        const snapshot = await this.store.snapshot(readerId, this.settings.maxItems);
        const lowest = snapshot.entries[snapshot.entries.length - 1];
        const installed = {
          version: snapshot.version,
          followeeIds: snapshot.followeeIds,
          entries: snapshot.entries.filter((blog) => this.inInboxes(blog)),
          floor: snapshot.complete || !lowest ? 0 : lowest.score + 1,
        };
        if ((await inbox.finishBuild(readerId, token, installed)) !== 'raced') return;
      } catch (error) {
        await inbox.drop(readerId).catch(() => {});
        throw error;
      }
    }
    this.warn(`the inbox of user ${readerId} was not rebuilt: follow changes kept racing it; pages come from MySQL`);
  }

  // ---------------------------------------------------------------------------------------
  // The fan-out watermark

  /** Syncs the watermark in the background if Redis lost it (at start, and when a read finds it so). */
  syncInBackground(): void {
    if (this.syncing || !this.inFlight) return;
    this.syncing = this.syncWatermark()
      .catch((error: unknown) => this.warn('rebuilding the fan-out watermark failed', error))
      .finally(() => {
        this.syncing = null;
      });
  }

  /** Rebuilds a lost watermark from the unfinished tasks in MySQL, then says it is complete. */
  async syncWatermark(): Promise<void> {
    const { inbox, inFlight } = this;
    if (!inbox || !inFlight || (await inbox.inFlight()).synced) return;
    await inbox.syncInFlight(await inFlight.unfinishedDeliveries(), false);
    if (this.settings.watermarkSettleMs > 0) await new Promise((resolve) => setTimeout(resolve, this.settings.watermarkSettleMs));
    await inbox.syncInFlight(await inFlight.unfinishedDeliveries(), true);
  }

  /**
   * The relay's pass over the watermark: sync it if it was lost, and drop tasks that finished
   * without clearing themselves (a Redis error at that moment) or whose publish rolled back.
   */
  async maintainWatermark(): Promise<void> {
    const { inbox, inFlight } = this;
    if (!inbox || !inFlight) return;
    const { synced, tasks } = await inbox.inFlight();
    if (!synced) return this.syncWatermark();
    // A publish that could not add its task (a Redis error at that moment) is added now.
    await inbox.syncInFlight(await inFlight.unfinishedDeliveries(), false);
    if (tasks.length === 0) return;
    const { done, missing } = await inFlight.finishedAmong(tasks.map((task) => task.taskId));
    const now = Date.now();
    const orphans = missing.filter((id) => {
      const seen = this.orphansSeenAt.get(id) ?? now;
      this.orphansSeenAt.set(id, seen);
      return now - seen >= WATERMARK_ORPHAN_MS;
    });
    for (const id of [...done, ...orphans]) this.orphansSeenAt.delete(id);
    await inbox.clearInFlight([...done, ...orphans]);
  }

  private requireInbox(): Inbox {
    if (!this.inbox) throw new Error(`FEED_MODEL=${this.settings.model} keeps no inboxes`);
    return this.inbox;
  }
}
