/**
 * The live bus: how a blog reaches the readers who are watching their follow feed right now
 * (`subscription { followFeedAdded }` over graphql-ws), without costing anything for the many
 * who are not.
 *
 * Two implementations of one semantics, as with the inbox (feed/inbox.ts):
 * - RedisLiveBus (live.redis.ts): Redis pub/sub between processes, on one server or a cluster;
 * - MemoryLiveBus (live.memory.ts): the same inside one process, for the embedded mode (no
 *   Redis, one process by design). test/integration/live/live-bus.test.ts runs one suite over both.
 *
 * ## Publish only to live readers (Mastodon's streaming design)
 * The fan-out already walks every follower of an author in chunks of FANOUT_CHUNK_SIZE. Most
 * followers are not connected, and a message per follower would be a million PUBLISHes for a
 * million followers, almost all of them to channels nobody listens to. So a reader with an open
 * subscription is *marked*: a key `live:{readerId}` (redis/keys.ts). A chunk asks which of its
 * readers are marked (liveAmong: one round trip for the chunk, see live.redis.ts for what it
 * costs) and publishes one message per marked reader, on that reader's own channel. A reader
 * who is not connected costs one key lookup per blog and nothing else: no message, no memory,
 * no subscription. Mastodon's streaming server marks `subscribed:timeline:<id>` the same way,
 * for the same reason. (The hybrid model does not fan out big authors' blogs into inboxes; their
 * live events still need a pass over the followers in chunks, lookups only, which is for the
 * caller to make.)
 *
 * ## One channel per reader, not per author
 * A channel per author would need no lookups, but a reader follows hundreds of authors
 * (hundreds of subscriptions per reader, redone at every follow and unfollow), a big author's
 * channel would carry every blog to every process that holds any of their followers, and each
 * process would have to apply the feed's follow rules (feed/inbox.ts) again per reader. The
 * fan-out already knows each blog's readers with those rules applied; a channel per reader
 * carries exactly what it decided. The hash tag puts `live:{id}` and its
 * channel `livech:{id}` in the reader's slot, beside the reader's inbox.
 *
 * ## The mark: a hash of processes, with a time to live
 * A reader may be connected to several API processes at once (a phone and a laptop), so the
 * mark is a hash with one field per process that holds the reader (the field's value: when it
 * was last refreshed, by Redis's clock), and a time to live of LIVE_TTL_MS on the whole key.
 * Each process refreshes the fields of all its live readers every LIVE_REFRESH_MS (one timer
 * per process, not per reader) and deletes its field when its last subscription of the reader
 * closes: the hash is empty, and so gone, when no process holds the reader any more. A process
 * that dies deletes nothing: its fields are dropped by the next refresh of another process
 * once they are older than LIVE_TTL_MS, or the key expires with them. A stale mark costs only
 * a PUBLISH nobody receives, per blog, for at most LIVE_TTL_MS. A counter (INCR on connect,
 * DECR on close) would drift with every crash and every retried command; a field per process
 * is idempotent and can be refreshed back after Redis lost it.
 *
 * ## Order of operations: no event lost at the start, none sent to nobody at the end
 * connect subscribes to the channel first and marks the reader after the subscription is
 * confirmed, so any publisher that sees the mark finds someone listening. The last close of a
 * reader deletes the process's field first and unsubscribes after. A blog delivered between
 * the subscription and the reader's first page of followFeed may come both ways: the client
 * merges by blog id (the cursor of an edge is the same either way).
 *
 * ## One Redis subscription per reader per process
 * Several listeners of one reader in one process (tabs, a client that resubscribes before it
 * closes, every live follower of an author on the author bus) share one channel subscription,
 * reference-counted: the first opens it, the last closes it; each listener's sink gets every
 * event (the same object: events are read-only). Opening and closing one
 * reader's channel happen one after the other, so a close followed at once by a connect
 * unsubscribes and then subscribes again, never the other way round.
 *
 * ## Delivery: at most once, in order per reader, bounded
 * Pub/sub keeps nothing: an event published while a subscriber connection reconnects is lost
 * (the connection resubscribes by itself), and so is one published between a chunk's liveAmong
 * and a reader's connect. Events are hints, the feed query is the truth: the subscription
 * resolver turns an `added` event into an edge only after checking the blog still exists and
 * the viewer still follows its author, and a client that reconnects re-reads the top of its
 * feed. The bus never blocks the publisher on a slow consumer: each subscription has one queue
 * (live.queue.ts), fed by every channel it listens on, that keeps at most LIVE_BUFFER_EVENTS
 * unread events and drops the oldest beyond that, with one warning per episode, so a client that
 * stops reading cannot grow the process's memory without bound.
 *
 * ## Failures
 * publish and liveAmong never throw: live events are a courtesy of the fan-out, which must not
 * retry a chunk (or fail a publish) because Redis refused one. They warn and report nothing
 * live or nothing sent. connect does throw: the client asked for a subscription and should be
 * told it has none. close never throws and never waits longer than LIVE_STEP_TIMEOUT_MS.
 */

/** What the fan-out tells a live reader. */
export type LiveEvent =
  /** A blog entered the reader's feed (the resolver re-checks follow and delete state). */
  | { readonly kind: 'added'; readonly blogId: number; readonly score: number; readonly authorId: number }
  /**
   * The reader followed, unfollowed, muted or unmuted someone: their subscriptions, in whichever
   * process, re-read which authors' channels to listen on (feed/feed.live.ts). With `authorIds`,
   * only whether the reader follows these authors (one lookup); without (an older publisher, or
   * more authors than MAX_AUTHORS_PER_FOLLOWS_EVENT), every followee.
   */
  | { readonly kind: 'follows'; readonly authorIds?: readonly number[] }
  /**
   * These blogs left the reader's feed: deleted (on the author's channel, to every follower who
   * watches), or their author unfollowed (on the reader's channel). The subscription re-checks
   * each against the feed's rules before it tells the client (feed/feed.live.ts).
   */
  | { readonly kind: 'removed'; readonly blogIds: readonly number[] };

/** Where a channel's events go: a subscription's queue (live.queue.ts), which one channel or several fill. */
export interface LiveSink {
  /** An event for the listener. Must not block or throw: the bus calls it for every listener in turn. */
  push(event: LiveEvent): void;
  /** The bus closed the channel from its side (the bus itself is closing): nothing more will come. */
  end(): void;
}

/** One listener's hold on one reader's channel; close() lets go of it (the last one shuts the channel). */
export interface LiveChannel {
  readonly readerId: number;
  /** Stops the events to this listener; idempotent; never throws. */
  close(): Promise<void>;
}

/**
 * One open subscription of one reader: an async iterator of events (a graphql-js subscription
 * source; graphql-js calls return() when the client stops), which close() ends.
 */
export interface LiveSubscription extends AsyncIterableIterator<LiveEvent> {
  readonly readerId: number;
  /** Events dropped so far because this subscription was not read (see LIVE_BUFFER_EVENTS). */
  readonly dropped: number;
  /** Ends the iteration (a pending next() resolves done) and drops what was not read; idempotent. */
  close(): Promise<void>;
}

export interface LiveBus {
  /**
   * Sends the reader's events to `sink` from now on: subscribes this process to the reader's
   * channel (once, however many listeners of the reader it holds), then marks the reader live.
   * Resolves once events published from then on will arrive. Several channels may share one
   * sink: a live-feed subscription listens on its viewer's channel and its followees' with one
   * queue (feed/feed.live.ts).
   */
  listen(readerId: number, sink: LiveSink): Promise<LiveChannel>;
  /** A subscription with a queue of its own (of LIVE_BUFFER_EVENTS) on the reader's channel: listen() with a LiveQueue. */
  connect(readerId: number): Promise<LiveSubscription>;
  /** Which of these readers have a subscription open in some process (one round trip). Never throws. */
  liveAmong(readerIds: readonly number[]): Promise<number[]>;
  /**
   * Sends the event to each of these readers who is live (liveAmong, then one message per live
   * reader). Resolves with the number of messages sent. Never throws.
   */
  publish(readerIds: readonly number[], event: LiveEvent): Promise<number>;
  /**
   * Sends the event to readers already known to be live (the fan-out's delivery script reads
   * their marks with its write, feed/inbox.ts): one message each, no lookup. Never throws.
   */
  publishToLive(liveReaderIds: readonly number[], event: LiveEvent): Promise<number>;
  /** Readers whose channel this process holds open (at least one listener each). */
  held(): number[];
  /** Ends every listener of this process (each sink's end()) and releases the bus's connections (not the client it was given). */
  close(): Promise<void>;
}

/**
 * Unread events a subscription keeps. A client that is this far behind sees five pages (20 edges
 * each) of new blogs it has not rendered: past that it is better served by re-reading its feed,
 * which is exact, than by a backlog. It bounds a stuck client's cost to about 100 small objects
 * (a few tens of KB with their promises), however long it stays stuck.
 */
export const LIVE_BUFFER_EVENTS = 100;

/**
 * How often a process refreshes the marks of the readers it holds: one script call per reader
 * per period (100,000 connected readers: about 1,700 calls a second over all processes).
 */
export const LIVE_REFRESH_MS = 60_000;

/**
 * How long a mark lives without a refresh: three periods, so that one or two refreshes lost to
 * a Redis blip do not hide a connected reader; after a process died, its readers count as live
 * (a PUBLISH nobody receives per blog) for at most this long.
 */
export const LIVE_TTL_MS = 3 * LIVE_REFRESH_MS;

/**
 * The longest one step of a reader (subscribe and mark, unmark and unsubscribe, a refresh) may
 * take. A working Redis answers in milliseconds, and a single server's commands fail on their
 * own after REDIS_COMMAND_TIMEOUT_MS; but a Redis Cluster that is down keeps commands queued
 * until it is back, with no deadline. Past this a connect fails (the client retries later) and
 * a close stops waiting, so the reader's next connect can go ahead.
 */
export const LIVE_STEP_TIMEOUT_MS = 5_000;

/**
 * Most blog ids one `removed` event carries: an unfollow tells a watching reader of at most
 * this many of the author's newest blogs (FEED_MAX_ITEMS when smaller), far more than a
 * client renders; a message claiming more is not one of ours.
 */
export const MAX_REMOVED_PER_EVENT = 1000;

/**
 * Most author ids one `follows` event names: a follow change names one (a block, one per side).
 * A message naming more is read as "re-read every followee", which is always right.
 */
export const MAX_AUTHORS_PER_FOLLOWS_EVENT = 100;

/** Reports a problem the bus got over (a log line); `error` is the cause, when there is one. */
export type LiveWarn = (message: string, error?: unknown) => void;

/** An event as it travels on a channel. */
export function encodeLiveEvent(event: LiveEvent): string {
  return JSON.stringify(event);
}

/** An event from a channel; null when the message is not one (another writer, another version). */
export function decodeLiveEvent(message: string): LiveEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { kind, blogId, score, authorId, blogIds, authorIds } = value as Record<string, unknown>;
  if (kind === 'follows') {
    const named =
      Array.isArray(authorIds) &&
      authorIds.length <= MAX_AUTHORS_PER_FOLLOWS_EVENT &&
      authorIds.every((id) => Number.isSafeInteger(id));
    return named ? { kind, authorIds: authorIds as number[] } : { kind };
  }
  if (
    kind === 'removed' &&
    Array.isArray(blogIds) &&
    blogIds.length <= MAX_REMOVED_PER_EVENT &&
    blogIds.every((id) => Number.isSafeInteger(id))
  ) {
    return { kind, blogIds: blogIds as number[] };
  }
  if (
    kind === 'added' &&
    Number.isSafeInteger(blogId) &&
    Number.isSafeInteger(score) &&
    Number.isSafeInteger(authorId)
  ) {
    return { kind, blogId: blogId as number, score: score as number, authorId: authorId as number };
  }
  return null;
}
