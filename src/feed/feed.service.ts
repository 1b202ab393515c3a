/**
 * The follow feed: reading a page in each feed model, and keeping inboxes right when follows
 * change or readers come back.
 *
 * followFeed(V) = every live blog whose author V follows now, in canonical order
 * (created_at DESC, id DESC). Whatever the model, a page is the same list sliced at the same
 * (maxScore, offset) position, so push, pull and hybrid return identical pages:
 *
 * - pull: one MySQL (or embedded SQLite) query over V's followees (FeedStore.feedPage). No
 *   inboxes, no Redis.
 * - push: V's inbox. An inbox is complete above its lowest entry (see inbox.ts), so when a page
 *   runs past the bottom of the inbox (it was trimmed to FEED_MAX_ITEMS, or a backfill was cut)
 *   the rest of the page comes from MySQL, continuing at the position after the last inbox
 *   entry: the cold path. A missing inbox (Redis lost it, it expired while V was inactive) is
 *   served from MySQL at once and rebuilt in the background.
 * - hybrid: push, plus the blogs of big authors that were not fanned out, merged in at read
 *   time. Merging needs each source read from the top of the position's tie group (the offset
 *   counts items of the merged list), so both are read with offset 0 and `offset + n` items,
 *   merged, and the offset skipped after.
 *
 * Every path costs a constant number of round trips whatever `first` is: at most one Redis
 * round trip, one query for the big followees, one for their blogs, one cold-path query, and
 * the four loader statements of the hydration.
 */
import { Blog } from '../blog/blog.types';
import type { FeedModel } from '../config';
import { Connection, toConnection } from '../graphql/connection';
import { cursorsForPage, FeedPosition, ScoredId, START } from './cursor';
import type { Metrics } from '../observability';
import { FeedStore } from './feed.store';
import { Inbox } from './inbox';
import { atOrAbove, mergeCanonical } from './merge';
import { fetchSize, PageRequest, slicePage } from './page';

/** What a feed page needs from the request's loaders (src/graphql/loaders.ts). */
export interface FeedLookups {
  blog: { loadMany(ids: readonly number[]): Promise<Array<Blog | null | Error>> };
  followedByViewer: { loadMany(userIds: readonly number[]): Promise<Array<boolean | Error>> };
}

export interface FeedSettings {
  model: FeedModel;
  /** FEED_MAX_ITEMS: what a rebuild puts into an inbox. */
  maxItems: number;
  /** FOLLOW_BACKFILL_ITEMS: how many of a new followee's newest blogs enter the inbox at once. */
  backfillItems: number;
}

/**
 * A user's activity is written at most this often per process (not on every request): enough
 * for ACTIVE_DAYS, which counts in days.
 */
export const ACTIVITY_WRITE_INTERVAL_MS = 5 * 60 * 1000;

/**
 * A rebuild copies a snapshot of the feed; blogs committed around the snapshot may have missed
 * both it and their fan-out (the inbox did not exist yet). The rebuild then adds every blog
 * created this long before the snapshot or later, which covers any transaction in flight.
 */
const REBUILD_CATCH_UP_MS = 60_000;

/** Attempts (one a second) to drop an inbox that a failed write left in an unknown state. */
const DROP_ATTEMPTS = 600;

export class FeedService {
  private readonly rebuilding = new Map<number, Promise<void>>();
  private readonly activityWrittenAt = new Map<number, number>();

  constructor(
    private readonly store: FeedStore,
    /** The inboxes in Redis; null in the pull model, which keeps none. */
    private readonly inbox: Inbox | null,
    private readonly settings: FeedSettings,
    private readonly now: () => Date,
    private readonly warn: (message: string, error?: unknown) => void,
    private readonly metrics?: Pick<Metrics, 'pageRead'>,
  ) {
    if ((settings.model === 'pull') !== (inbox === null)) {
      throw new Error(`FEED_MODEL=${settings.model} ${inbox ? 'keeps no inboxes' : 'needs inboxes (Redis)'}`);
    }
  }

  async followFeed(viewerId: number, request: PageRequest, lookups: FeedLookups): Promise<Connection<Blog>> {
    const page = slicePage(request, await this.entries(viewerId, request.from, fetchSize(request)));
    const blogs = await lookups.blog.loadMany(page.items.map((item) => item.id));
    const live = new Map<number, Blog>();
    for (const blog of blogs) if (blog instanceof Blog) live.set(blog.dbId, blog);
    const authorIds = [...new Set([...live.values()].map((blog) => blog.authorId))];
    const followed = await lookups.followedByViewer.loadMany(authorIds);
    const followedAuthors = new Set(authorIds.filter((_, i) => followed[i] === true));
    // An entry can outlive its reason to be there for a moment (a delete or an unfollow whose
    // inbox cleanup is still in flight, a chunk delivered just after an unfollow): such an
    // entry is hidden, never shown. It still counts for the position, so cursors stay stable.
    return toConnection(page, (item) => {
      const blog = live.get(item.id);
      return blog && followedAuthors.has(blog.authorId) ? blog : null;
    });
  }

  /** The first `n` feed entries of the viewer at `from`, in canonical order. */
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
    const bigAuthors = this.settings.model === 'hybrid' ? await this.store.pulledFolloweeIds(viewerId) : [];
    const merging = bigAuthors.length > 0;
    const want = merging ? from.offset + n : n;
    const [inboxEntries, pulled] = await Promise.all([
      inbox.read(viewerId, merging ? { maxScore: from.maxScore, offset: 0 } : from, want),
      this.store.pulledBlogs(bigAuthors, from.maxScore, want),
    ]);
    if (inboxEntries === null) {
      this.rebuildInBackground(inbox, viewerId);
      return this.pullPage(viewerId, from, n);
    }
    const candidates = merging ? mergeCanonical([inboxEntries, pulled]).slice(from.offset) : inboxEntries;
    const lowest = inboxEntries[inboxEntries.length - 1];
    if (inboxEntries.length === want) {
      // The inbox goes on below what was read: only what lies above its last read entry is sure.
      this.metrics?.pageRead('inbox');
      return atOrAbove(candidates, lowest).slice(0, n);
    }
    // The inbox ends here. Above its lowest entry it is complete; below, MySQL continues.
    const covered = lowest ? atOrAbove(candidates, lowest).slice(0, n) : [];
    this.metrics?.pageRead(covered.length === n ? 'inbox' : 'cold');
    if (covered.length === n) return covered;
    const next = covered.length === 0 ? from : cursorsForPage(from, covered)[covered.length - 1];
    return covered.concat(await this.store.feedPage(viewerId, next, n - covered.length));
  }

  /** A new user's inbox: valid and empty (their feed is empty), so fan-out reaches it. */
  async openInbox(userId: number): Promise<void> {
    await this.inbox?.rebuild(userId, []);
  }

  /**
   * Records that a signed-in user is active, at most once per ACTIVITY_WRITE_INTERVAL_MS per
   * process: fan-out skips followers inactive for ACTIVE_DAYS, and their inbox expires then.
   */
  async recordActivity(userId: number): Promise<void> {
    const now = this.now();
    const last = this.activityWrittenAt.get(userId);
    if (last !== undefined && now.getTime() - last < ACTIVITY_WRITE_INTERVAL_MS) return;
    if (this.activityWrittenAt.size > 100_000) this.activityWrittenAt.clear();
    this.activityWrittenAt.set(userId, now.getTime());
    await this.store.markActive(userId, now);
    if (this.inbox?.available()) await this.inbox.touch(userId);
  }

  /** A new follow: the followee's newest blogs enter the follower's inbox at once. */
  async backfill(readerId: number, authorId: number): Promise<void> {
    const { inbox } = this;
    if (!inbox) return;
    const newest = await this.store.newestOfAuthor(authorId, this.settings.backfillItems + 1);
    const copied = newest.slice(0, this.settings.backfillItems);
    // If the followee has older blogs than those copied, they are missing from the inbox below
    // the last copied one: cut the inbox there, and the cold path serves what lies below.
    const cutBelow = newest.length > copied.length ? (copied[copied.length - 1] ?? newest[0]) : undefined;
    await this.updateInbox(inbox, readerId, () => inbox.addEntries(readerId, copied, cutBelow));
  }

  /** An unfollow: the followee's blogs leave the follower's inbox at once. */
  async removeAuthor(readerId: number, authorId: number): Promise<void> {
    const { inbox } = this;
    if (!inbox) return;
    await this.updateInbox(inbox, readerId, async () => {
      const inInbox = await inbox.blogIds(readerId);
      await inbox.removeEntries(readerId, await this.store.idsOfAuthorAmong(authorId, inInbox));
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

  private dropWhenPossible(inbox: Inbox, readerId: number, attempt = 0): void {
    inbox.drop(readerId).catch(() => {
      if (attempt < DROP_ATTEMPTS) setTimeout(() => this.dropWhenPossible(inbox, readerId, attempt + 1), 1000).unref();
      else this.warn(`gave up dropping the inbox of user ${readerId}; it expires in ACTIVE_DAYS`);
    });
  }

  /** Rebuilds a missing inbox from MySQL, once at a time per reader, without blocking the request. */
  private rebuildInBackground(inbox: Inbox, readerId: number): void {
    if (this.rebuilding.has(readerId)) return;
    const work = this.rebuild(inbox, readerId)
      .catch((error: unknown) => this.warn(`rebuilding the inbox of user ${readerId} failed`, error))
      .finally(() => this.rebuilding.delete(readerId));
    this.rebuilding.set(readerId, work);
  }

  /** Resolves when the rebuilds started so far are done (tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.rebuilding.values()]);
  }

  private async rebuild(inbox: Inbox, readerId: number): Promise<void> {
    const snapshotAt = this.now();
    // Active first: fan-out must reach the inbox from the moment it exists.
    await this.store.markActive(readerId, snapshotAt);
    this.activityWrittenAt.set(readerId, snapshotAt.getTime());
    await inbox.rebuild(readerId, await this.store.feedPage(readerId, START, this.settings.maxItems));
    const since = new Date(snapshotAt.getTime() - REBUILD_CATCH_UP_MS);
    await inbox.addEntries(readerId, await this.store.feedSince(readerId, since, this.settings.maxItems));
  }
}
