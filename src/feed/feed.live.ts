/**
 * The live feed: each blog as it enters a viewer's follow feed, for `subscription
 * { followFeedAdded }`. The transport is the live bus (live/live.bus.ts); this file decides what
 * goes on it and what a subscriber is shown.
 *
 * Where an event comes from, per feed model:
 * - A fanned-out blog (push, and hybrid below BIG_V_FOLLOWERS) enters a reader's feed when its
 *   fan-out chunk reaches that reader's inbox: the chunk publishes it to the readers of the chunk
 *   that are live (FeedService.deliver). Readers who are not connected cost one EXISTS each.
 * - A blog nobody fans out (the pull model, and a big author's in hybrid) enters every
 *   follower's feed at its commit. Walking a big author's followers for the few who are live
 *   would cost in proportion to the offline ones, so such a blog is published once, on its
 *   author's channel (the author bus), and a process listens on the channels of the authors its
 *   live viewers follow (in pull and hybrid). A follow or unfollow tells the viewer's channel
 *   (`follows`, naming the author), so their subscriptions, in whichever process, re-read whether
 *   they follow that author.
 *
 * What a subscription holds: one queue (live/live.queue.ts, at most LIVE_BUFFER_EVENTS unread
 * events) that every channel it listens on feeds, the blogs it has shown (at most SHOWN_MEMORY),
 * and its channels, one per followee: nothing that grows with the events it has shown or with its
 * viewer's follow changes. Re-reading which authors to listen to (a relist) runs one at a time
 * per subscription, and a relist asked for while one runs is served by a single run after it
 * (the latest follow state wins); closing waits for the relist in flight, so no channel is opened
 * after the close and none is left open.
 *
 * What a subscription costs at MAX_FOLLOWING (5,000 followees): opening it reads the followee
 * list once and opens the channels LIVE_OPEN_BATCH at a time (a channel another subscription of
 * this process holds costs nothing); all 5,000 at once made Redis's replies to everyone else wait
 * past REDIS_COMMAND_TIMEOUT_MS, and failed subscriptions. A follow change re-reads only whether
 * the viewer follows the author it names (one row), not the 5,000: the subscriptions of a viewer
 * who toggles follows all day cost a lookup per change. A relist that failed halfway makes the
 * next one read every followee again, so a channel it could not open is retried.
 *
 * What a subscriber is shown: an event is a hint, the feed's rules decide. Before an `added`
 * event becomes an edge, the blog must be live and the viewer must follow its author now (an
 * unfollow takes effect at once, a delete too): checked for every subscription of this process
 * that got the same blog in the same tick in one statement (a chunk reaches many live readers at
 * once). A blog already shown on this subscription is not shown again (a chunk run twice, a
 * blog on both channels).
 *
 * Resuming (`followFeedAdded(after:)`): the subscription listens first (its queue keeps what
 * arrives), then reads every feed blog newer than `after` from the truth (FeedStore.feedNewer,
 * at most MAX_RESUME_BLOGS, else it fails with RESUME_GAP_TOO_LARGE: the client refetches the
 * first page), sends them oldest first (each newer than the one before, so a client prepends
 * each edge as it comes), then drains the queue, skipping what the replay sent and what is not
 * newer than `after`. A blog committed before the read is in the replay; one committed after it
 * comes on the channels, which were open before the read: none is missed at the switch, none
 * repeated.
 *
 * Removals (`followFeedRemoved`): a delete is published on its author's channel (every process
 * with a watching follower listens there), an unfollow (and whatever ends a follow through
 * FeedService.changeFollow) on the reader's channel with the author's newest blogs, at most
 * MAX_REMOVED_PER_EVENT. A removal subscription listens on its viewer's channel and their
 * followees' in every model, and tells the client of each blog of an event that the viewer
 * does not see now (one statement per event): a re-follow that overtook its unfollow tells
 * nothing.
 */
import DataLoader from 'dataloader';
import type { FeedModel } from '../kernel/config';
import { resumeGapTooLarge } from '../kernel/errors';
import { compareCanonical, ScoredId } from '../kernel/pagination/cursor';
import type { LiveBus, LiveChannel, LiveEvent, LiveWarn } from '../live/live.bus';
import { MAX_REMOVED_PER_EVENT } from '../live/live.bus';
import { LiveQueue } from '../live/live.queue';
import type { FeedStore } from './feed.store';

/** Blog ids a subscription remembers having shown, to show none twice: far more than a client renders between reconnects. */
const SHOWN_MEMORY = 1000;

/**
 * Most blogs a resumed followFeedAdded replays: a client that missed more is better served by
 * refetching the first page of its feed (one request of up to 100 edges) than by a stream of
 * edges; past it the subscription fails with RESUME_GAP_TOO_LARGE. It also bounds what one
 * subscribe reads (one bounded range per followee).
 */
export const MAX_RESUME_BLOGS = 100;

/** Removed blog ids a removal subscription remembers having told, to tell none twice (a delete heard on two channels). */
const REMOVED_MEMORY = 1000;

/**
 * Author channels a subscription opens at a time (each a SUBSCRIBE and a mark script in Redis).
 * One batch is a couple of milliseconds of Redis's time, so a viewer at MAX_FOLLOWING opens in
 * about 20 short turns that other clients' commands interleave with, not in one burst of 10,000
 * commands ahead of them.
 */
export const LIVE_OPEN_BATCH = 250;

/** A blog that left the viewer's feed, for followFeedRemoved. */
export interface LiveRemoval {
  blogId: number;
}

/** The two buses: one channel per live reader, one per author whose blogs nobody fans out. */
export interface LiveBuses {
  readers: LiveBus;
  authors: LiveBus;
}

/** A blog as it enters the feed, with what the fan-out knows of it. */
export interface LiveBlog extends ScoredId {
  authorId: number;
}

export interface LiveFeedDeps {
  buses: LiveBuses;
  /** What a subscription reads: followees, who sees a blog, and the blogs a resume replays. */
  store: Pick<FeedStore, 'viewersSeeing' | 'followeeIds' | 'followeesAmong' | 'feedNewer' | 'visibleAmong'>;
  model: FeedModel;
  warn?: LiveWarn;
}

export class LiveFeed {
  /** This process's open subscriptions of pull and hybrid viewers, by viewer: each re-lists its author channels on a follow change. */
  private readonly subscriptions = new Map<number, Set<FeedSubscription>>();
  /** "Does viewer V see blog B now?", batched per tick: one statement per blog, for all the viewers asking. */
  private readonly visible: DataLoader<{ viewerId: number; blogId: number }, boolean, string>;

  private readonly buses: LiveBuses;
  private readonly store: LiveFeedDeps['store'];
  private readonly model: FeedModel;
  private readonly warn: LiveWarn;

  constructor(deps: LiveFeedDeps) {
    this.buses = deps.buses;
    this.store = deps.store;
    this.model = deps.model;
    this.warn = deps.warn ?? (() => {});
    this.visible = new DataLoader(async (asks) => this.seeing(asks), {
      // A follow or a delete may change the answer at any moment: nothing is remembered.
      cache: false,
    });
  }

  /** A fanned-out blog reached the inboxes of these live readers (the delivery read their marks): tell them. */
  async delivered(liveReaderIds: readonly number[], blog: LiveBlog): Promise<void> {
    await this.buses.readers.publishToLive(liveReaderIds, {
      kind: 'added',
      blogId: blog.id,
      score: blog.score,
      authorId: blog.authorId,
    });
  }

  /** A blog that no fan-out delivers was committed: tell the processes that listen on its author. */
  async published(blog: LiveBlog): Promise<void> {
    await this.buses.authors.publish([blog.authorId], {
      kind: 'added',
      blogId: blog.id,
      score: blog.score,
      authorId: blog.authorId,
    });
  }

  /**
   * The viewer followed, unfollowed, muted or unmuted these authors (every followee may have
   * changed when `authorIds` is not given). Their subscriptions in this process listen to the
   * right authors before this resolves (the mutation's next request finds them listening); those
   * in other processes hear it on the viewer's channel. Nothing to do in the push model, where
   * every blog comes through the viewer's own channel.
   */
  async followsChanged(viewerId: number, authorIds?: readonly number[]): Promise<void> {
    await Promise.all(
      [...(this.subscriptions.get(viewerId) ?? [])].map((subscription) => subscription.relistOrKeep(authorIds)),
    );
    // Removal subscriptions listen to followees in every model, here or in another process.
    await this.buses.readers.publish([viewerId], authorIds ? { kind: 'follows', authorIds } : { kind: 'follows' });
  }

  /** A blog was deleted (committed): tell the processes that listen on its author. */
  async deleted(blog: { id: number; authorId: number }): Promise<void> {
    await this.buses.authors.publish([blog.authorId], { kind: 'removed', blogIds: [blog.id] });
  }

  /** Whether the viewer has a live subscription open in some process (one lookup). */
  async watching(viewerId: number): Promise<boolean> {
    return (await this.buses.readers.liveAmong([viewerId])).length > 0;
  }

  /** These blogs left the viewer's feed (an unfollow): tell their subscriptions, in whichever process. */
  async retracted(viewerId: number, blogIds: readonly number[]): Promise<void> {
    if (blogIds.length === 0) return;
    await this.buses.readers.publish([viewerId], { kind: 'removed', blogIds: blogIds.slice(0, MAX_REMOVED_PER_EVENT) });
  }

  /**
   * The viewer's live entries: an async iterator of the blogs that enter their feed from now on
   * (a graphql-js subscription source; return() ends it and frees its channels).
   */
  async subscribe(viewerId: number, after: ScoredId | null = null): Promise<AsyncIterableIterator<ScoredId>> {
    const listensTo = this.model === 'push' ? 'reader' : 'reader and followees';
    const subscription = new FeedSubscription({
      viewerId,
      buses: this.buses,
      store: this.store,
      listensTo,
      warn: this.warn,
    });
    await subscription.open();
    if (this.model !== 'push') this.track(viewerId, subscription);
    if (after === null) return this.checked(viewerId, subscription, null, []);
    // Listening already: what commits from here on comes on the channels (see Resuming above).
    let replay: ScoredId[];
    try {
      replay = await this.store.feedNewer(viewerId, after, MAX_RESUME_BLOGS + 1, true);
    } catch (error) {
      await subscription.close();
      throw error;
    }
    if (replay.length > MAX_RESUME_BLOGS) {
      await subscription.close();
      throw resumeGapTooLarge(
        `more than ${MAX_RESUME_BLOGS} blogs are newer than after: refetch the first page of followFeed, then subscribe with after set to its newest edge's cursor`,
        'after',
        MAX_RESUME_BLOGS,
      );
    }
    return this.checked(viewerId, subscription, after, replay);
  }

  /**
   * The viewer's removals: an async iterator of the blogs that leave their feed from now on
   * (deleted, or their author unfollowed), each told once; return() ends it.
   */
  async subscribeRemovals(viewerId: number): Promise<AsyncIterableIterator<LiveRemoval>> {
    const subscription = new FeedSubscription({
      viewerId,
      buses: this.buses,
      store: this.store,
      listensTo: 'reader and followees',
      warn: this.warn,
    });
    await subscription.open();
    this.track(viewerId, subscription);
    const told = new Set<number>();
    const pending: number[] = [];
    const next = async (): Promise<IteratorResult<LiveRemoval>> => {
      for (;;) {
        const blogId = pending.shift();
        if (blogId !== undefined) {
          if (told.has(blogId)) continue;
          told.add(blogId);
          if (told.size > REMOVED_MEMORY) told.delete(told.values().next().value!);
          return { done: false, value: { blogId } };
        }
        const result = await subscription.events.next();
        if (result.done) return { done: true, value: undefined };
        const event: LiveEvent = result.value;
        if (event.kind === 'follows') void subscription.relistOrKeep(event.authorIds);
        if (event.kind !== 'removed') continue;
        const fresh = event.blogIds.filter((id) => !told.has(id));
        if (fresh.length === 0) continue;
        // The feed's rules decide: only what the viewer does not see now has left.
        const visible = await this.store.visibleAmong(viewerId, fresh);
        pending.push(...fresh.filter((id) => !visible.has(id)));
      }
    };
    return iteratorOf(next, () => subscription.close());
  }

  /** Keeps the subscription in the viewer's set while it is open, for followsChanged. */
  private track(viewerId: number, subscription: FeedSubscription): void {
    const mine = this.subscriptions.get(viewerId) ?? new Set<FeedSubscription>();
    mine.add(subscription);
    this.subscriptions.set(viewerId, mine);
    subscription.onClose(() => {
      mine.delete(subscription);
      if (mine.size === 0 && this.subscriptions.get(viewerId) === mine) this.subscriptions.delete(viewerId);
    });
  }

  /**
   * The events of the subscription that the feed's rules let the viewer see, each blog once; a
   * `follows` event re-lists its author channels. With `after` (resuming), `replay` comes first,
   * then the events of blogs newer than `after` that the replay did not hold.
   */
  private checked(
    viewerId: number,
    subscription: FeedSubscription,
    after: ScoredId | null,
    replay: ScoredId[],
  ): AsyncIterableIterator<ScoredId> {
    const shown = new Set<number>();
    const replayed = new Set(replay.map((blog) => blog.id));
    const next = async (): Promise<IteratorResult<ScoredId>> => {
      const replayedBlog = replay.shift();
      if (replayedBlog) return { done: false, value: replayedBlog };
      for (;;) {
        const result = await subscription.events.next();
        if (result.done) return { done: true, value: undefined };
        const event = result.value;
        if (event.kind === 'follows') {
          // Not waited for: the events already queued are checked against the follows of now anyway.
          void subscription.relistOrKeep(event.authorIds);
          continue;
        }
        if (event.kind !== 'added') continue;
        if (shown.has(event.blogId) || replayed.has(event.blogId)) continue;
        const blog = { id: event.blogId, score: event.score };
        // Resuming: the client holds `after` and everything older.
        if (after !== null && compareCanonical(blog, after) >= 0) continue;
        if (!(await this.visible.load({ viewerId, blogId: event.blogId }))) continue;
        shown.add(event.blogId);
        if (shown.size > SHOWN_MEMORY) shown.delete(shown.values().next().value!);
        return { done: false, value: blog };
      }
    };
    return iteratorOf(next, () => subscription.close());
  }

  /** The answers of one tick's visibility checks: one statement per distinct blog. */
  private async seeing(asks: readonly { viewerId: number; blogId: number }[]): Promise<boolean[]> {
    const viewersOf = new Map<number, number[]>();
    for (const { viewerId, blogId } of asks) viewersOf.set(blogId, [...(viewersOf.get(blogId) ?? []), viewerId]);
    const seeing = new Map(
      await Promise.all(
        [...viewersOf].map(
          async ([blogId, viewerIds]) => [blogId, await this.store.viewersSeeing(blogId, viewerIds)] as const,
        ),
      ),
    );
    return asks.map(({ viewerId, blogId }) => seeing.get(blogId)!.has(viewerId));
  }
}

/** A graphql-js subscription source from `next`; return() (the client stopped) runs `close`. */
function iteratorOf<T>(next: () => Promise<IteratorResult<T>>, close: () => Promise<void>): AsyncIterableIterator<T> {
  const iterator: AsyncIterableIterator<T> = {
    next,
    return: async () => {
      await close();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

/** What a relist re-reads: every followee, or whether the viewer follows these authors. */
type RelistScope = 'all' | Set<number>;

/** The scope that serves both `scope` and a request for `authorIds` (every followee when not given). */
function widened(scope: RelistScope, authorIds: readonly number[] | undefined): RelistScope {
  if (scope === 'all' || authorIds === undefined) return 'all';
  for (const authorId of authorIds) scope.add(authorId);
  return scope;
}

interface FeedSubscriptionDeps {
  viewerId: number;
  buses: LiveBuses;
  store: Pick<FeedStore, 'followeeIds' | 'followeesAmong'>;
  /** push: the reader's own channel only; pull and hybrid: the followees' channels too. */
  listensTo: 'reader' | 'reader and followees';
  warn: LiveWarn;
}

/**
 * One subscription's channels and the one queue they all feed: the viewer's own channel, and in
 * pull and hybrid one per followee. Relists run one at a time, and a close waits for the one in
 * flight before it closes every channel, so that the channels it holds are exactly those closed.
 */
class FeedSubscription {
  readonly events: LiveQueue;
  private reader: LiveChannel | null = null;
  private readonly authors = new Map<number, LiveChannel>();
  private ended = false;
  /** The relist running or queued last; the next one starts after it. */
  private lastRelist: Promise<void> = Promise.resolve();
  /** A relist that has not started yet, and what it will re-read: whoever asks now is served by it. */
  private queuedRelist: { scope: RelistScope; run: Promise<void> } | null = null;
  /** A relist failed halfway: the next one re-reads every followee, so that what it missed is retried. */
  private incomplete = false;
  private readonly closeHooks: Array<() => void> = [];

  private readonly viewerId: number;
  private readonly buses: LiveBuses;
  private readonly store: Pick<FeedStore, 'followeeIds' | 'followeesAmong'>;
  private readonly listensTo: FeedSubscriptionDeps['listensTo'];
  private readonly warn: LiveWarn;

  constructor(deps: FeedSubscriptionDeps) {
    this.viewerId = deps.viewerId;
    this.buses = deps.buses;
    this.store = deps.store;
    this.listensTo = deps.listensTo;
    this.warn = deps.warn;
    this.events = new LiveQueue({ readerId: deps.viewerId, warn: deps.warn, onClose: () => this.closeChannels() });
  }

  /** Listens on the viewer's channel, then on their followees'. Throws (having closed what it opened) when a channel cannot be opened. */
  async open(): Promise<void> {
    try {
      this.reader = await this.buses.readers.listen(this.viewerId, this.events);
      if (this.listensTo === 'reader and followees') await this.relist();
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /**
   * Re-reads whether the viewer follows these authors (every followee when not given) and opens
   * and closes author channels to match. Runs after the relist before it; callers that ask while
   * one is queued share it, and it re-reads what each of them asked for. Rejects when a channel
   * could not be opened (the others are kept, and the next relist re-reads every followee).
   */
  relist(authorIds?: readonly number[]): Promise<void> {
    if (this.queuedRelist) {
      this.queuedRelist.scope = widened(this.queuedRelist.scope, authorIds);
      return this.queuedRelist.run;
    }
    const queued: { scope: RelistScope; run: Promise<void> } = {
      scope: widened(new Set(), authorIds),
      run: this.lastRelist
        .catch(() => {})
        .then(() => {
          this.queuedRelist = null;
          return this.listenToAuthors(queued.scope);
        }),
    };
    this.queuedRelist = queued;
    this.lastRelist = queued.run;
    return queued.run;
  }

  /** A relist whose failure leaves the channels as they are until the next follow change (with a warning). */
  relistOrKeep(authorIds?: readonly number[]): Promise<void> {
    return this.relist(authorIds).catch((error: unknown) =>
      this.warn(
        `live feed: could not listen on the followees of viewer ${this.viewerId}; the channels open still deliver (${error instanceof Error ? error.message : String(error)})`,
        error,
      ),
    );
  }

  /** Runs `hook` when the subscription ends (at once if it has). */
  onClose(hook: () => void): void {
    if (this.ended) hook();
    else this.closeHooks.push(hook);
  }

  /** Ends the iteration and closes every channel, once the relist in flight is done. */
  close(): Promise<void> {
    return this.events.close();
  }

  /**
   * Opens the author channels of the viewer's followees and closes those of former ones, among the
   * authors of `scope` (every followee for 'all'). Every followee, not only today's big ones: an
   * author who crosses BIG_V_FOLLOWERS stops being fanned out at their next blog, and that blog
   * must not find nobody listening.
   */
  private async listenToAuthors(scope: RelistScope): Promise<void> {
    if (this.ended || this.listensTo === 'reader') return;
    const everyone = scope === 'all' || this.incomplete;
    const asked = everyone ? [] : [...scope];
    const followees = new Set(
      everyone ? await this.store.followeeIds(this.viewerId) : await this.store.followeesAmong(this.viewerId, asked),
    );
    if (this.ended) return;
    const considered = everyone ? [...this.authors.keys()] : asked.filter((authorId) => this.authors.has(authorId));
    const gone = considered.filter((authorId) => !followees.has(authorId));
    const closing = gone.map((authorId) => this.authors.get(authorId)!);
    for (const authorId of gone) this.authors.delete(authorId);
    await Promise.all(closing.map((channel) => channel.close()));
    this.incomplete = true;
    await this.openAuthors([...followees].filter((authorId) => !this.authors.has(authorId)));
    this.incomplete = false;
  }

  /** Opens these authors' channels, LIVE_OPEN_BATCH at a time; stops at the first batch with a failure, and throws it. */
  private async openAuthors(authorIds: readonly number[]): Promise<void> {
    for (let start = 0; start < authorIds.length && !this.ended; start += LIVE_OPEN_BATCH) {
      const batch = authorIds.slice(start, start + LIVE_OPEN_BATCH);
      const opened = await Promise.allSettled(
        batch.map((authorId) => this.buses.authors.listen(authorId, this.events)),
      );
      let failure: Error | null = null;
      for (const [i, outcome] of opened.entries()) {
        if (outcome.status === 'fulfilled') this.authors.set(batch[i], outcome.value);
        else failure ??= outcome.reason instanceof Error ? outcome.reason : new Error(String(outcome.reason));
      }
      if (failure !== null) throw failure;
    }
  }

  /** The queue's end: no relist opens anything from here on, the one in flight finishes, then every channel closes. */
  private async closeChannels(): Promise<void> {
    this.ended = true;
    for (const hook of this.closeHooks.splice(0)) hook();
    await this.lastRelist.catch(() => {});
    const channels = [...(this.reader ? [this.reader] : []), ...this.authors.values()];
    this.reader = null;
    this.authors.clear();
    await Promise.all(channels.map((channel) => channel.close()));
  }
}
