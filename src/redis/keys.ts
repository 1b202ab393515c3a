/**
 * Every Redis key the service uses, in one place.
 *
 * A reader who wants to know what lives in Redis reads this file. Keys are built from a prefix
 * (REDIS_KEY_PREFIX) so several deployments, or several test files, can share one server.
 *
 * | key                 | type       | holds                                                      |
 * |---------------------|------------|------------------------------------------------------------|
 * | feed:{userId}       | sorted set | the user's inbox: member = blog id (inboxMember), score = |
 * |                     |            | the blog's created_at in epoch ms; newest FEED_MAX_ITEMS,  |
 * |                     |            | plus the sentinel "~" (score -1) that marks it valid       |
 * | rl:{limit}:{key}    | string     | a rate-limit counter (graphql/rate-limits.ts)              |
 * | bull:fanout:*       | various    | the fan-out queue (BullMQ's own keys)                      |
 */

/**
 * Width of an inbox member. Redis orders members of equal score lexicographically, so ids are
 * zero-padded to a fixed width to make that order numeric: the seed stored plain ids, and
 * "10833" sorted before "1673" inside one millisecond. 20 digits hold any unsigned BIGINT.
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

  /** The inbox of a user's follow feed. */
  feed(userId: number): string {
    return `${this.prefix}feed:${userId}`;
  }

  /** The counters of one rate limit (rate-limiter-flexible appends the limited key). */
  rateLimit(name: string): string {
    return `${this.prefix}rl:${name}`;
  }

  /** A pattern matching every key of this prefix (for tests and maintenance scripts). */
  all(): string {
    return `${this.prefix}*`;
  }
}
