/**
 * Every Redis key the service uses, in one place.
 *
 * A reader who wants to know what lives in Redis reads this file. Keys are built from a prefix
 * (REDIS_KEY_PREFIX) so several deployments, or several test files, can share one server. The
 * braces of an inbox's keys are a Redis Cluster hash tag: both keys of one reader live in one
 * slot, so one script can update them together (the prefix must not contain braces).
 *
 * | key                 | type       | holds                                                      |
 * |---------------------|------------|------------------------------------------------------------|
 * | feed:{userId}       | sorted set | the user's inbox: member = blog id (inboxMember), score = |
 * |                     |            | the blog's created_at in epoch ms; newest FEED_MAX_ITEMS   |
 * |                     |            | and the sentinel "~" at +inf (the set exists with the inbox)|
 * | feedmeta:{userId}   | hash       | the inbox's floor, generation, versions, build state and   |
 * |                     |            | pending follow changes (feed/inbox.redis.ts)               |
 * | feedfol:{userId}    | set        | whom the inbox's reader follows, and the sentinel "~"      |
 * | feedclock           | string     | the inboxes' clock: the highest Redis TIME (ms) it has     |
 * |                     |            | given, so that it never goes back (single server only;     |
 * |                     |            | feed/scripts/includes/inbox.lua, clockMs)                  |
 * | {wm}:tasks          | hash       | the fan-out watermark: deliver tasks in flight, task id -> |
 * |                     |            | author id                                                  |
 * | {wm}:authors        | sorted set | authors with a deliver task in flight, score = the lowest  |
 * |                     |            | blog score in flight; "~synced:<generation>" at -inf       |
 * | {wm}:author:<id>    | sorted set | one author's tasks in flight (member = task id, score)     |
 * | {wm}:bigauthors     | string     | the big-author generation: "<generation>:<random>",        |
 * |                     |            | replaced when an author's first not-fanned-out blog commits |
 * | pulled:<authorId>   | string     | one big author's pulled-blog token: "<generation>:<random>",|
 * |                     |            | replaced when a blog of theirs that was not fanned out     |
 * |                     |            | commits or is deleted (feed/pulled-blogs.ts)               |
 * | rl:{limit}:{key}    | string     | a rate-limit counter (graphql/rate-limits.ts)              |
 * | live:{userId}       | hash       | the user has a live-feed subscription open: field = a      |
 * |                     |            | process holding one, value = its last refresh (Redis ms);  |
 * |                     |            | expires LIVE_TTL_MS after the last refresh (live/)         |
 * | livech:{userId}     | channel    | (pub/sub, not a key) the user's live-feed events; sharded  |
 * |                     |            | pub/sub on a cluster, in the slot of live:{userId}         |
 * | sessions            | channel    | (pub/sub, not a key) "<process> <seq> <userId>": a user   |
 * |                     |            | whose sessions ended (logout), or a heartbeat (userId 0);  |
 * |                     |            | every API process forgets what it knew (auth/auth.bus.ts)  |
 * | rw:{userId}         | string     | "1" while the user's writes may not have reached the      |
 * |                     |            | replicas: their reads go to the primary (PX = REPLICA_MAX_ |
 * |                     |            | LAG_MS + the check interval; graphql/read-your-writes.ts) |
 * | bull:fanout:*       | various    | the fan-out queue (BullMQ's own keys)                      |
 * | cblog:{b<blogId>}   | hash       | the hydration cache's copy of a blog (cache/cache.service.ts):|
 * |                     |            | d = its row as JSON ('' = deleted), f = "1" once d and the  |
 * |                     |            | like set are filled, lease = a fill's token, lock = a write |
 * |                     |            | in flight (Redis ms), pend/pendAt/p:<token> = likes in flight|
 * | clikes:{b<blogId>}  | sorted set | the blog's likers while cblog has f: member = user id       |
 * |                     |            | zero-padded to 20 digits, score = the like's time in ms     |
 * | cuser:{u<userId>}   | hash       | the hydration cache's copy of a user's nickName and icon:   |
 * |                     |            | d (JSON), lease, lock as for blogs                          |
 */

/**
 * Width of an inbox member. Redis orders members of equal score lexicographically, so ids are
 * zero-padded to a fixed width to make that order numeric: plain ids would sort "10833" before
 * "1673" inside one millisecond. 20 digits hold any unsigned BIGINT.
 */
export const INBOX_MEMBER_WIDTH = 20;

export function inboxMember(blogId: number): string {
  return String(blogId).padStart(INBOX_MEMBER_WIDTH, '0');
}

export function blogIdOfMember(member: string): number {
  return Number(member);
}

export class RedisKeys {
  constructor(private readonly prefix: string) {}

  /** The inbox of a user's follow feed: its entries. */
  feed(userId: number): string {
    return `${this.prefix}feed:{${userId}}`;
  }

  /** The inbox of a user's follow feed: its floor, versions and build state. */
  feedMeta(userId: number): string {
    return `${this.prefix}feedmeta:{${userId}}`;
  }

  /** Whom the inbox's reader follows (feed/inbox.ts): how a page finds its followees among the authors in flight. */
  feedFollowees(userId: number): string {
    return `${this.prefix}feedfol:{${userId}}`;
  }

  /** The inboxes' clock (feed/scripts/clock.lua): no expiry, on a single server only. */
  inboxClock(): string {
    return `${this.prefix}feedclock`;
  }

  /**
   * The names of a delivery's four keys per reader (feed, feedMeta, feedFollowees, live) up to
   * the reader's id: the name is the head, the id, then "}". The fan-out's script is sent reader
   * ids and names their keys itself (feed/scripts/deliver.lua): building and sending four names
   * per inbox was most of what the fan-out cost the worker's CPU.
   */
  deliveryKeyHeads(): [feed: string, feedMeta: string, feedFollowees: string, live: string] {
    const heads = [this.feed(0), this.feedMeta(0), this.feedFollowees(0), this.live(0)].map((key) => key.slice(0, -2));
    return heads as [string, string, string, string];
  }

  /**
   * The fan-out watermark's keys share the hash tag {wm}: one cluster slot, so that its scripts
   * update them together (and apart from the queue's {fanout} slot, which the workers keep busy).
   */
  watermarkTasks(): string {
    return `${this.prefix}{wm}:tasks`;
  }

  /** Authors with a deliver task in flight, scored by the lowest blog score in flight. */
  watermarkAuthors(): string {
    return `${this.prefix}{wm}:authors`;
  }

  /** One author's deliver tasks in flight. */
  watermarkAuthor(authorId: number): string {
    return `${this.prefix}{wm}:author:${authorId}`;
  }

  /** The big-author generation (hybrid): a token that changes when someone becomes a big author. */
  bigAuthors(): string {
    return `${this.prefix}{wm}:bigauthors`;
  }

  /**
   * One big author's pulled-blog token (hybrid): changes when a not-fanned-out blog of theirs
   * commits or is deleted, so that lists of those blogs kept by API processes are read again.
   */
  pulledBlogs(authorId: number): string {
    return `${this.prefix}pulled:${authorId}`;
  }

  /** The counters of one rate limit (rate-limiter-flexible appends the limited key). */
  rateLimit(name: string): string {
    return `${this.prefix}rl:${name}`;
  }

  /** The mark of a reader with a live-feed subscription open (live/live.bus.ts). */
  live(readerId: number): string {
    return `${this.prefix}live:{${readerId}}`;
  }

  /**
   * The pub/sub channel of a reader's live-feed events. Channels ignore SELECT (one namespace per
   * server), so the prefix is what keeps deployments sharing a server apart; the hash tag puts the
   * channel in the slot of live(readerId), the shard a sharded PUBLISH stays in.
   */
  liveChannel(readerId: number): string {
    return `${this.prefix}livech:{${readerId}}`;
  }

  /**
   * The pub/sub channel of ended sessions (auth/auth.bus.ts). Channels ignore SELECT, so the
   * prefix keeps deployments sharing a server apart; a classic PUBLISH reaches every node of a
   * cluster, so it needs no hash tag.
   */
  sessions(): string {
    return `${this.prefix}sessions`;
  }

  /** Marks a recent writer, whose reads go to the primary (read-your-writes with replicas). */
  recentWriter(userId: number): string {
    return `${this.prefix}rw:{${userId}}`;
  }

  /** The hydration cache's copy of a blog (cache/cache.service.ts); its like set shares the hash tag. */
  cachedBlog(blogId: number): string {
    return `${this.prefix}cblog:{b${blogId}}`;
  }

  /** The likers of a cached blog, in the slot of cachedBlog(blogId). */
  cachedLikes(blogId: number): string {
    return `${this.prefix}clikes:{b${blogId}}`;
  }

  /** The hydration cache's copy of a user's nickName and icon. */
  cachedUser(userId: number): string {
    return `${this.prefix}cuser:{u${userId}}`;
  }

  /** A pattern matching every key of this prefix (for tests and maintenance scripts). */
  all(): string {
    return `${this.prefix}*`;
  }
}
