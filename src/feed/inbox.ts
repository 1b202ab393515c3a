/**
 * The inboxes: one Redis sorted set per reader (`feed:{userId}`, see src/redis/keys.ts).
 *
 * This module owns every read and write of inboxes and their rules, the way Mastodon's
 * FeedManager owns its timelines: nothing else touches a feed key.
 *
 * - member: the blog id, zero-padded (inboxMember) so that Redis's same-score lexicographic
 *   order is the numeric order: ZRANGE ... REV then gives the canonical (score DESC, id DESC).
 * - score: the blog's created_at in epoch ms, from the database row. Never the time of the
 *   fan-out (the seed used the fan-out time, so one blog had different scores in different
 *   inboxes, and a late fan-out jumped to the top).
 * - validity: an inbox is a cache of the top of the reader's feed, and the feed service trusts
 *   it only while it is *complete above its lowest entry*: every fanned-out blog that belongs
 *   above that entry is in it. An inbox that exists always holds the sentinel member
 *   (INBOX_SENTINEL, score -1, below every blog; reads start at score 0 so never see it). Writes
 *   only ever go to an inbox that exists: a delivery to a missing inbox (Redis lost it, it
 *   expired, the reader was inactive and skipped by fan-out) would create a partial one that
 *   looks valid. A missing inbox is served from MySQL and rebuilt (FeedService).
 * - trimming: an inbox keeps its newest `maxItems` entries (removing the lowest keeps it
 *   complete above its new lowest entry); the seed never trimmed, so inboxes grew forever.
 * - expiry: an inbox expires ACTIVE_DAYS after its reader was last active (`touch`). Since
 *   deliveries go only to inboxes that exist, that is how fan-out skips inactive followers:
 *   inside the script, with no lookup of each follower's activity in MySQL.
 * - idempotence: ZADD of the same member with the same score changes nothing, so a delivery
 *   that is repeated (a retried chunk) is harmless.
 * - batching: a write to many inboxes is one Lua script call per `SCRIPT_BATCH` inboxes, which
 *   adds and trims every one of them inside Redis. The seed awaited one ZADD per follower (about
 *   17,000 a second here); a pipeline of ZADD + ZREMRANGEBYRANK pairs reaches about 60,000 a
 *   second, bound by the client encoding two commands per inbox; the script reaches about
 *   500,000 a second in isolation (bench/fanout.bench.ts measures the end-to-end figures).
 */
import { redisAvailable } from '../redis/breaker';
import { isCluster, RedisClient } from '../redis/redis.client';
import { blogIdOfMember, inboxMember, RedisKeys } from '../redis/keys';
import { FeedPosition, ScoredId } from './cursor';

/**
 * Inboxes written per script call. Large enough that the per-call cost disappears, small enough
 * that one call keeps Redis busy for only a couple of milliseconds (other clients wait meanwhile).
 */
export const SCRIPT_BATCH = 1000;

/** The member that marks an inbox as valid; its score (-1) is below every blog's. */
export const INBOX_SENTINEL = '~';

// Shared by the scripts: keep the sentinel (rank 0) and the newest `max` entries.
const TRIM = `
local function trim(key, max)
  if redis.call('ZCARD', key) > max + 1 then
    redis.call('ZREMRANGEBYRANK', key, 1, -(max + 1))
  end
end
`;

/** KEYS = inboxes; ARGV = score, member, maxItems. Adds to every inbox that exists, trimming. */
const DELIVER_SCRIPT = `${TRIM}
local score, member, max = ARGV[1], ARGV[2], tonumber(ARGV[3])
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('ZADD', KEYS[i], score, member)
    trim(KEYS[i], max)
  end
end
return #KEYS`;

/** KEYS = inboxes; ARGV = member. Removes the member from every inbox. */
const RETRACT_SCRIPT = `
for i = 1, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
return #KEYS`;

/**
 * KEYS = [inbox]; ARGV = maxItems, cutScore, cutMember, then score/member pairs. When the inbox
 * exists, adds the pairs; with a cut, drops every entry below (cutScore, cutMember) in canonical
 * order, since entries are missing there (a followee's older blogs that were not copied in).
 */
const ADD_SCRIPT = `${TRIM}
local key, max, cutScore, cutMember = KEYS[1], tonumber(ARGV[1]), ARGV[2], ARGV[3]
if redis.call('EXISTS', key) == 0 then return 0 end
for i = 4, #ARGV, 2 do
  redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
end
if cutScore ~= '' then
  redis.call('ZREMRANGEBYSCORE', key, 0, '(' .. cutScore)
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', key, cutScore, cutScore)) do
    if member < cutMember then redis.call('ZREM', key, member) end
  end
end
trim(key, max)
return 1`;

/**
 * KEYS = [inbox]; ARGV = maxItems, ttlSeconds, then score/member pairs. Makes the inbox valid
 * with these entries, keeping any it already holds (deliveries that raced the rebuild).
 */
const REBUILD_SCRIPT = `${TRIM}
local key, max, ttl = KEYS[1], tonumber(ARGV[1]), ARGV[2]
redis.call('ZADD', key, -1, '${INBOX_SENTINEL}')
for i = 3, #ARGV, 2 do
  redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
end
trim(key, max)
redis.call('EXPIRE', key, ttl)
return 1`;

type Args = Array<string | number>;
type ScriptedRedis = RedisClient & {
  /** Over any number of inboxes: numberOfKeys first. */
  feedDeliver(numberOfKeys: number, ...args: Args): Promise<number>;
  feedRetract(numberOfKeys: number, ...args: Args): Promise<number>;
  /**
   * Over one inbox: the key first. Declared with one key so that ioredis knows which argument
   * is the key: on a cluster it routes (and auto-pipelines) each call to the inbox's node.
   */
  feedDeliverOne(key: string, ...args: Args): Promise<number>;
  feedRetractOne(key: string, ...args: Args): Promise<number>;
  feedAdd(key: string, ...args: Args): Promise<number>;
  feedRebuild(key: string, ...args: Args): Promise<number>;
};

/** Registers the inbox scripts on a client (ioredis sends EVALSHA, and EVAL when Redis lost them). */
function withInboxScripts(redis: RedisClient): ScriptedRedis {
  const scripted = redis as ScriptedRedis;
  if (typeof scripted.feedDeliver !== 'function') {
    redis.defineCommand('feedDeliver', { lua: DELIVER_SCRIPT });
    redis.defineCommand('feedRetract', { lua: RETRACT_SCRIPT });
    redis.defineCommand('feedDeliverOne', { lua: DELIVER_SCRIPT, numberOfKeys: 1 });
    redis.defineCommand('feedRetractOne', { lua: RETRACT_SCRIPT, numberOfKeys: 1 });
    redis.defineCommand('feedAdd', { lua: ADD_SCRIPT, numberOfKeys: 1 });
    redis.defineCommand('feedRebuild', { lua: REBUILD_SCRIPT, numberOfKeys: 1 });
  }
  return scripted;
}

function scoreMemberPairs(entries: readonly ScoredId[]): string[] {
  return entries.flatMap((entry) => [String(entry.score), inboxMember(entry.id)]);
}

export class Inbox {
  private readonly redis: ScriptedRedis;
  /** On a cluster a script may only touch keys of one slot: one call per inbox then. */
  private readonly perInbox: boolean;

  constructor(
    redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly maxItems: number,
    /** ACTIVE_DAYS in seconds: an inbox outlives its reader's last activity by this long. */
    private readonly ttlSeconds: number,
  ) {
    this.redis = withInboxScripts(redis);
    this.perInbox = isCluster(redis);
  }

  /** Runs a script over `keys`: in batches of keys, or one inbox per call on a cluster. */
  private async forInboxes(
    keys: string[],
    many: (keys: string[]) => Promise<number>,
    one: (key: string) => Promise<number>,
  ): Promise<void> {
    if (this.perInbox) {
      await Promise.all(keys.map(one));
      return;
    }
    for (let start = 0; start < keys.length; start += SCRIPT_BATCH) await many(keys.slice(start, start + SCRIPT_BATCH));
  }

  /** Puts one blog into the existing inboxes of many readers, trimming each: one call per batch. */
  async deliver(readerIds: readonly number[], entry: ScoredId): Promise<void> {
    const member = inboxMember(entry.id);
    await this.forInboxes(
      readerIds.map((id) => this.keys.feed(id)),
      (keys) => this.redis.feedDeliver(keys.length, ...keys, entry.score, member, this.maxItems),
      (key) => this.redis.feedDeliverOne(key, entry.score, member, this.maxItems),
    );
  }

  /** Takes one blog out of the inboxes of many readers: one script call per batch. */
  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    const member = inboxMember(blogId);
    await this.forInboxes(
      readerIds.map((id) => this.keys.feed(id)),
      (keys) => this.redis.feedRetract(keys.length, ...keys, member),
      (key) => this.redis.feedRetractOne(key, member),
    );
  }

  /**
   * Adds blogs to one reader's inbox if it exists (a follow's backfill). `cutBelow`: the caller
   * knows blogs are missing below this entry (it copied only the newest N of an author), so the
   * inbox drops everything below it to stay complete above its lowest entry.
   */
  async addEntries(readerId: number, entries: readonly ScoredId[], cutBelow?: ScoredId): Promise<void> {
    if (entries.length === 0 && !cutBelow) return;
    await this.redis.feedAdd(
      this.keys.feed(readerId),
      this.maxItems,
      cutBelow ? String(cutBelow.score) : '',
      cutBelow ? inboxMember(cutBelow.id) : '',
      ...scoreMemberPairs(entries),
    );
  }

  /** Creates (or completes) a valid inbox holding `entries`: a new user's, or a rebuild. */
  async rebuild(readerId: number, entries: readonly ScoredId[]): Promise<void> {
    await this.redis.feedRebuild(this.keys.feed(readerId), this.maxItems, this.ttlSeconds, ...scoreMemberPairs(entries));
  }

  /** False while the Redis connection is down: callers go to MySQL at once instead of waiting. */
  available(): boolean {
    return redisAvailable(this.redis);
  }

  /** Forgets an inbox whose state is unknown (a write to it failed); the next read rebuilds it. */
  async drop(readerId: number): Promise<void> {
    await this.redis.del(this.keys.feed(readerId));
  }

  /** The reader is active: the inbox lives ACTIVE_DAYS from now. */
  async touch(readerId: number): Promise<void> {
    await this.redis.expire(this.keys.feed(readerId), this.ttlSeconds);
  }

  /** Removes some blogs from one reader's inbox (an unfollow). */
  async removeEntries(readerId: number, blogIds: readonly number[]): Promise<void> {
    if (blogIds.length === 0) return;
    await this.redis.zrem(this.keys.feed(readerId), ...blogIds.map(inboxMember));
  }

  /** Every blog id in a reader's inbox (at most maxItems). */
  async blogIds(readerId: number): Promise<number[]> {
    const members = await this.redis.zrangebyscore(this.keys.feed(readerId), 0, '+inf');
    return members.map(blogIdOfMember);
  }

  /**
   * The first `limit` entries at `from`, in canonical order, or null when the inbox does not
   * exist (and so cannot be trusted): one round trip (EXISTS + ZRANGE in a pipeline).
   */
  async read(readerId: number, from: FeedPosition, limit: number): Promise<ScoredId[] | null> {
    const key = this.keys.feed(readerId);
    const max = from.maxScore === null ? '+inf' : String(from.maxScore);
    const results = await this.redis
      .pipeline()
      .exists(key)
      .zrange(key, max, '0', 'BYSCORE', 'REV', 'LIMIT', from.offset, Math.max(limit, 1), 'WITHSCORES')
      .exec();
    const [[existsError, exists], [rangeError, reply]] = results as Array<[Error | null, unknown]>;
    if (existsError || rangeError) throw existsError ?? rangeError;
    if (exists !== 1) return null;
    const flat = reply as string[];
    const entries: ScoredId[] = [];
    for (let i = 0; i < flat.length && entries.length < limit; i += 2) {
      entries.push({ id: blogIdOfMember(flat[i]), score: Number(flat[i + 1]) });
    }
    return entries;
  }
}
