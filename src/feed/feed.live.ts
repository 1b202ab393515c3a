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
 *   (`follows`), so their subscriptions, in whichever process, re-read which authors those are.
 *
 * What a subscriber is shown: an event is a hint, the feed's rules decide. Before an `added`
 * event becomes an edge, the blog must be live and the viewer must follow its author now (an
 * unfollow takes effect at once, a delete too): checked for every subscription of this process
 * that got the same blog in the same tick in one statement (a chunk reaches many live readers at
 * once). A blog already shown on this subscription is not shown again (a chunk run twice, a
 * blog on both channels).
 */
import DataLoader from 'dataloader';
import type { FeedModel } from '../kernel/config';
import type { ScoredId } from '../kernel/pagination/cursor';
import type { LiveBus, LiveEvent, LiveSubscription } from '../live/live.bus';
import type { FeedStore } from './feed.store';

/** Blog ids a subscription remembers having shown, to show none twice: far more than a client renders between reconnects. */
const SHOWN_MEMORY = 1000;

/** The two buses: one channel per live reader, one per author whose blogs nobody fans out. */
export interface LiveBuses {
  readers: LiveBus;
  authors: LiveBus;
}

/** A blog as it enters the feed, with what the fan-out knows of it. */
export interface LiveBlog extends ScoredId {
  authorId: number;
}

export class LiveFeed {
  /** This process's open subscriptions of pull and hybrid viewers: how to re-list each one's author channels. */
  private readonly relisters = new Map<number, Set<() => Promise<void>>>();
  /** "Does viewer V see blog B now?", batched per tick: one statement per blog, for all the viewers asking. */
  private readonly visible: DataLoader<{ viewerId: number; blogId: number }, boolean, string>;

  constructor(
    private readonly buses: LiveBuses,
    private readonly store: Pick<FeedStore, 'viewersSeeing' | 'followeeIds'>,
    private readonly model: FeedModel,
  ) {
    this.visible = new DataLoader(async (asks) => this.seeing(asks), {
      // A follow or a delete may change the answer at any moment: nothing is remembered.
      cache: false,
    });
  }

  /** A fanned-out blog reached these readers' inboxes: tell those of them who are live. */
  async delivered(readerIds: readonly number[], blog: LiveBlog): Promise<void> {
    await this.buses.readers.publish(readerIds, { kind: 'added', blogId: blog.id, score: blog.score, authorId: blog.authorId });
  }

  /** A blog that no fan-out delivers was committed: tell the processes that listen on its author. */
  async published(blog: LiveBlog): Promise<void> {
    await this.buses.authors.publish([blog.authorId], { kind: 'added', blogId: blog.id, score: blog.score, authorId: blog.authorId });
  }

  /**
   * The viewer followed or unfollowed someone. Their subscriptions in this process listen to the
   * right authors before this resolves (the mutation's next request finds them listening); those
   * in other processes hear it on the viewer's channel. Nothing to do in the push model, where
   * every blog comes through the viewer's own channel.
   */
  async followsChanged(viewerId: number): Promise<void> {
    if (this.model === 'push') return;
    await Promise.all([...(this.relisters.get(viewerId) ?? [])].map((relist) => relist()));
    await this.buses.readers.publish([viewerId], { kind: 'follows' });
  }

  /**
   * The viewer's live entries: an async iterator of the blogs that enter their feed from now on
   * (a graphql-js subscription source; return() ends it and frees its channels).
   */
  async subscribe(viewerId: number): Promise<AsyncIterableIterator<LiveBlog>> {
    const events = new MergedSubscriptions();
    const relist = async () => {
      if (this.model === 'push') return;
      await this.listenToAuthors(viewerId, events).catch(() => {
        // Kept as it was until the next follow change: the channels already open still deliver.
      });
    };
    try {
      events.add('reader', await this.buses.readers.connect(viewerId));
      if (this.model !== 'push') await this.listenToAuthors(viewerId, events);
    } catch (error) {
      await events.return();
      throw error;
    }
    const mine = this.relisters.get(viewerId) ?? new Set<() => Promise<void>>();
    mine.add(relist);
    this.relisters.set(viewerId, mine);
    events.onEnd(() => {
      mine.delete(relist);
      if (mine.size === 0) this.relisters.delete(viewerId);
    });
    return this.checked(viewerId, events, relist);
  }

  /**
   * Opens the author channels of the viewer's followees and closes those of former ones. Every
   * followee, not only today's big ones: an author who crosses BIG_V_FOLLOWERS stops being
   * fanned out at their next blog, and that blog must not find nobody listening.
   */
  private async listenToAuthors(viewerId: number, events: MergedSubscriptions): Promise<void> {
    const followees = new Set((await this.store.followeeIds(viewerId)).map((id) => `author:${id}`));
    for (const key of events.keys()) if (key.startsWith('author:') && !followees.has(key)) await events.remove(key);
    for (const key of followees) {
      if (events.ended) return;
      if (!events.has(key)) events.add(key, await this.buses.authors.connect(Number(key.slice('author:'.length))));
    }
  }

  /** The events of `events` that the feed's rules let the viewer see, each blog once; a `follows` event re-lists the author channels. */
  private checked(viewerId: number, events: AsyncIterableIterator<LiveEvent>, relist: () => Promise<void>): AsyncIterableIterator<LiveBlog> {
    const shown = new Set<number>();
    const next = async (): Promise<IteratorResult<LiveBlog>> => {
      for (;;) {
        const result = await events.next();
        if (result.done) return { done: true, value: undefined };
        const event = result.value;
        if (event.kind === 'follows') {
          await relist();
          continue;
        }
        if (shown.has(event.blogId)) continue;
        if (!(await this.visible.load({ viewerId, blogId: event.blogId }))) continue;
        shown.add(event.blogId);
        if (shown.size > SHOWN_MEMORY) shown.delete(shown.values().next().value!);
        return { done: false, value: { id: event.blogId, score: event.score, authorId: event.authorId } };
      }
    };
    const iterator: AsyncIterableIterator<LiveBlog> = {
      next,
      return: async () => {
        await events.return?.();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** The answers of one tick's visibility checks: one statement per distinct blog. */
  private async seeing(asks: readonly { viewerId: number; blogId: number }[]): Promise<boolean[]> {
    const viewersOf = new Map<number, number[]>();
    for (const { viewerId, blogId } of asks) viewersOf.set(blogId, [...(viewersOf.get(blogId) ?? []), viewerId]);
    const seeing = new Map(
      await Promise.all([...viewersOf].map(async ([blogId, viewerIds]) => [blogId, await this.store.viewersSeeing(blogId, viewerIds)] as const)),
    );
    return asks.map(({ viewerId, blogId }) => seeing.get(blogId)!.has(viewerId));
  }
}

/**
 * One iterator over a changing set of subscriptions, in arrival order; return() closes them all.
 * graphql-js asks for one event at a time, so there is at most one next() waiting.
 */
class MergedSubscriptions implements AsyncIterableIterator<LiveEvent> {
  ended = false;
  private readonly subscriptions = new Map<string, LiveSubscription>();
  private readonly pending = new Map<string, Promise<{ key: string; result: IteratorResult<LiveEvent> }>>();
  private readonly endHooks: Array<() => void> = [];
  /** Wakes a waiting next() when the set changes. */
  private changed: (() => void) | null = null;

  keys(): string[] {
    return [...this.subscriptions.keys()];
  }

  has(key: string): boolean {
    return this.subscriptions.has(key);
  }

  add(key: string, subscription: LiveSubscription): void {
    if (this.ended) {
      void subscription.close();
      return;
    }
    this.subscriptions.set(key, subscription);
    this.pull(key);
    this.changed?.();
  }

  async remove(key: string): Promise<void> {
    const subscription = this.subscriptions.get(key);
    this.subscriptions.delete(key);
    this.pending.delete(key);
    this.changed?.();
    await subscription?.close();
  }

  onEnd(hook: () => void): void {
    this.endHooks.push(hook);
  }

  async next(): Promise<IteratorResult<LiveEvent>> {
    while (!this.ended) {
      const changed = new Promise<null>((resolve) => (this.changed = () => resolve(null)));
      const first = await Promise.race([changed, ...this.pending.values()]);
      this.changed = null;
      if (first === null || !this.pending.has(first.key)) continue;
      if (first.result.done) {
        this.pending.delete(first.key);
        continue;
      }
      this.pull(first.key);
      return first.result;
    }
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<LiveEvent>> {
    if (!this.ended) {
      this.ended = true;
      this.changed?.();
      for (const hook of this.endHooks) hook();
      const all = [...this.subscriptions.values()];
      this.subscriptions.clear();
      this.pending.clear();
      await Promise.allSettled(all.map((subscription) => subscription.close()));
    }
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<LiveEvent> {
    return this;
  }

  private pull(key: string): void {
    const subscription = this.subscriptions.get(key);
    if (subscription)
      this.pending.set(
        key,
        subscription.next().then((result) => ({ key, result })),
      );
  }
}
