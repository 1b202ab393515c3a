/**
 * The inbox in Redis: the semantics of inbox.ts (specified, operation by operation, by
 * inbox.memory.ts) as Lua scripts, so that each operation is atomic however many API processes
 * and fan-out workers write at once.
 *
 * Per reader two keys in one cluster slot (the hash tag is the user id, see redis/keys.ts):
 * - `feed:{id}`, a sorted set: member = the blog id zero-padded to 20 digits, so that Redis's
 *   same-score order (lexicographic) is the numeric order and ZRANGE ... REV gives the canonical
 *   (score DESC, id DESC); score = the blog's created_at in epoch ms;
 * - `feedmeta:{id}`, a hash: floor, base, maxver, since, exp (when both keys expire, epoch ms),
 *   building, a:<authorId> (signed version
 *   of the pair's last change), and while building d:<member> (delivered, its author) and
 *   r:<member> (retracted). The hash's existence is what makes an inbox exist.
 * Both expire ACTIVE_DAYS after the reader was last active; every script that creates the
 * sorted set gives it the hash's remaining time, so the two always go together. Expiry is how
 * fan-out skips inactive followers: deliveries go only to inboxes that exist.
 *
 * Plus `fanout:inflight`, a sorted set of the deliver tasks in flight (member = task id, score =
 * the blog's score) and the member "~synced" at -inf that says the set is complete, and
 * `bigauthors`, the big-author generation (a random token).
 *
 * Batching: a delivery to many inboxes is one script call per SCRIPT_BATCH inboxes (Redis spends
 * about 5 us per inbox that has to be created, less on one that holds entries: 150,000-200,000
 * inboxes a second; one awaited ZADD per follower manages about 17,000).
 * On a cluster a script may only touch keys of one slot, so there each inbox gets its own call,
 * which ioredis pipelines per node.
 */
import { randomBytes } from 'node:crypto';
import { redisAvailable } from '../redis/breaker';
import { isCluster, RedisClient } from '../redis/redis.client';
import { blogIdOfMember, inboxMember, RedisKeys } from '../redis/keys';
import { FeedPosition, ScoredId } from '../kernel/pagination/cursor';
import {
  BIG_AUTHOR_CHANGE_MS,
  BUILD_STALE_MS,
  buildStartedAt,
  BuildOutcome,
  Delivery,
  FeedSnapshot,
  FollowChange,
  Inbox,
  InboxRead,
  InboxView,
  UNSETTLED,
  Watermark,
} from './inbox';

/**
 * Inboxes written per script call. Large enough that the per-call cost disappears, small enough
 * that one call keeps Redis busy for only about a millisecond: other clients wait meanwhile, and
 * so does a small fan-out's call queued behind a big one's on the workers' connection (a chunk
 * sends its calls one after the other, so at most FANOUT_CONCURRENCY of them are queued there).
 * Measured with bench:fanout at a million followers: 250 delivered as fast as 1000 (6.6-7.9 s
 * against 6.9-8.4 s), and a 10-follower post published meanwhile reached its inboxes in 100-120 ms
 * instead of 180-220 ms.
 */
export const SCRIPT_BATCH = 250;

/** The watermark's marker member: present when the set holds every task in flight. */
const SYNCED_MARKER = '~synced';

// Helpers shared by the scripts. Numbers are formatted with %d: Lua's default tostring would
// write a 16-digit score in exponent notation.
const HELPERS = `
local function fmt(n) return string.format('%d', n) end
-- When an inbox given ttlMs to live from now expires (epoch ms, Redis's clock). The hash records
-- it as 'exp': the fan-out gives a sorted set it creates the same expiry from there (PEXPIREAT),
-- without asking the hash's time to live.
local function expiryIn(ttlMs)
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + ttlMs
end
-- Gives the inbox's hash, and its sorted set when there is one, ttlMs to live from now.
local function expireIn(inbox, meta, ttlMs)
  local at = expiryIn(ttlMs)
  redis.call('HSET', meta, 'exp', fmt(at))
  redis.call('PEXPIREAT', meta, at)
  redis.call('PEXPIREAT', inbox, at)
end
local function syncTtl(inbox, meta)
  local ttl = redis.call('PTTL', meta)
  if ttl > 0 and redis.call('PTTL', inbox) == -1 then redis.call('PEXPIRE', inbox, ttl) end
end
local function raiseFloor(inbox, meta, to)
  if to > tonumber(redis.call('HGET', meta, 'floor')) then
    redis.call('HSET', meta, 'floor', fmt(to))
    redis.call('ZREMRANGEBYSCORE', inbox, '-inf', '(' .. fmt(to))
  end
end
-- After adding to an inbox: one over maxItems is trimmed, its floor raised above what is cut.
local function trim(inbox, meta, max, card)
  local extra = (card or redis.call('ZCARD', inbox)) - max
  if extra > 0 then
    local cut = redis.call('ZRANGE', inbox, extra - 1, extra - 1, 'WITHSCORES')
    raiseFloor(inbox, meta, tonumber(cut[2]) + 1)
  end
end
local function admit(meta, author, version, sign)
  local m = redis.call('HMGET', meta, 'floor', 'base', 'a:' .. author, 'maxver')
  if not m[1] then return false end
  if version <= tonumber(m[2]) then return false end
  if m[3] and math.abs(tonumber(m[3])) >= version then return false end
  redis.call('HSET', meta, 'a:' .. author, fmt(sign * version))
  if version > tonumber(m[4]) then redis.call('HSET', meta, 'maxver', fmt(version)) end
  return true
end
`;

/**
 * KEYS = [inbox, meta]; ARGV = maxScore, offset, afterMember ('' = legacy position), limit.
 * A valid inbox replies {1, floor, entries, base, maxver}: its follow version is the higher.
 */
const READ = `
local inbox, meta = KEYS[1], KEYS[2]
local m = redis.call('HMGET', meta, 'floor', 'building', 'pending', 'pendingAt', 'base', 'maxver')
if not m[1] then return {0} end
if m[2] then return {2} end
if m[3] and tonumber(m[3]) > 0 then return {3, m[4]} end
local floor, maxScore, offset, after, limit = m[1], ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local start = offset
if after ~= '' then
  -- Fast path: the offset still points at the cursor's own blog. Else the tie group changed
  -- (a removal, a late arrival): count the members at or before the cursor's blog.
  start = math.max(offset - 1, 0)
  local at = redis.call('ZRANGE', inbox, maxScore, floor, 'BYSCORE', 'REV', 'LIMIT', start, 1, 'WITHSCORES')
  if at[1] == after and tonumber(at[2]) == tonumber(maxScore) then
    start = start + 1
  else
    start = 0
    for _, member in ipairs(redis.call('ZRANGE', inbox, maxScore, maxScore, 'BYSCORE', 'REV')) do
      if member >= after then start = start + 1 else break end
    end
  end
end
return {1, floor, redis.call('ZRANGE', inbox, maxScore, floor, 'BYSCORE', 'REV', 'LIMIT', start, limit, 'WITHSCORES'), m[5], m[6]}`;

/**
 * READ, the fan-out watermark's two lowest members and the big-author generation in one call:
 * KEYS = [inbox, meta, watermark, big-author generation], ARGV as READ's. On a single server a
 * page's Redis work is this one command; a cluster keeps the watermark and the generation in
 * other slots than the inbox, where READ, a ZRANGE and a GET go out together instead (one round
 * trip, three commands).
 */
const READ_WITH_WATERMARK = `local function read()${READ}
end
return {read(), redis.call('ZRANGE', KEYS[3], 0, 1, 'WITHSCORES'), redis.call('GET', KEYS[4])}`;

/**
 * KEYS = inbox, meta pairs; ARGV = score, member, authorId, readAt, maxItems.
 *
 * The fan-out's hot path, and what bounds its speed: Redis runs it once per inbox, and each
 * redis.call costs about 0.5 us beyond the command itself. So it makes only the calls the
 * inbox needs: a member that was there already (a chunk run again) changes neither the count
 * nor the time to live; a set that holds one member after adding one was created by this ZADD
 * (Redis deletes empty sets), so it has no time to live of its own and needs no PTTL to say so,
 * and it gets the hash's expiry from the hash's own 'exp' field (read with the rest), not from a
 * PTTL; only a set that grew past maxItems is trimmed. An existing inbox costs 3 calls, a new
 * one 4.
 */
const DELIVER = `${HELPERS}
local score, member, author, readAt, max = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local delivered = 'd:' .. member
for i = 1, #KEYS, 2 do
  local inbox, meta = KEYS[i], KEYS[i + 1]
  local m = redis.call('HMGET', meta, 'floor', 'since', 'building', 'exp')
  if m[1] and score >= tonumber(m[1]) and tonumber(m[2]) <= readAt then
    local added = redis.call('ZADD', inbox, score, member)
    if m[3] then redis.call('HSET', meta, delivered, author) end
    if added == 1 then
      local card = redis.call('ZCARD', inbox)
      if card == 1 then
        if m[4] then
          redis.call('PEXPIREAT', inbox, m[4])
        else
          -- A hash written before it recorded 'exp'.
          local ttl = redis.call('PTTL', meta)
          if ttl > 0 then redis.call('PEXPIRE', inbox, ttl) end
        end
      else
        trim(inbox, meta, max, card)
      end
    end
  end
end
return #KEYS / 2`;

/** KEYS = inbox, meta pairs; ARGV = member. */
const RETRACT = `
for i = 1, #KEYS, 2 do
  redis.call('ZREM', KEYS[i], ARGV[1])
  if redis.call('HEXISTS', KEYS[i + 1], 'building') == 1 then
    redis.call('HSET', KEYS[i + 1], 'r:' .. ARGV[1], '1')
    redis.call('HDEL', KEYS[i + 1], 'd:' .. ARGV[1])
  end
end
return #KEYS / 2`;

/** KEYS = [inbox, meta]; ARGV = member, authorId, version, readAt. */
const RETRACT_UNFOLLOWED = `
local m = redis.call('HMGET', KEYS[2], 'floor', 'since', 'a:' .. ARGV[2])
if not m[1] or tonumber(m[2]) > tonumber(ARGV[4]) then return 0 end
if m[3] and tonumber(m[3]) > tonumber(ARGV[3]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], 'd:' .. ARGV[1])
return 1`;

/** KEYS = [inbox, meta]. */
const BLOG_IDS = `
if redis.call('EXISTS', KEYS[2]) == 0 then return {0} end
return {1, redis.call('ZRANGE', KEYS[1], 0, -1)}`;

/**
 * KEYS = [inbox, meta]; ARGV = version, authorId, floor ('' = none), maxItems, count of stale
 * members, the stale members, then score/member pairs.
 */
const FOLLOW = `${HELPERS}
local inbox, meta = KEYS[1], KEYS[2]
if not admit(meta, ARGV[2], tonumber(ARGV[1]), 1) then return 0 end
if redis.call('HEXISTS', meta, 'building') == 1 then return 1 end
local stale = tonumber(ARGV[5])
for i = 6, 5 + stale do redis.call('ZREM', inbox, ARGV[i]) end
local floor = tonumber(redis.call('HGET', meta, 'floor'))
for i = 6 + stale, #ARGV, 2 do
  if tonumber(ARGV[i]) >= floor then redis.call('ZADD', inbox, ARGV[i], ARGV[i + 1]) end
end
if ARGV[3] ~= '' then raiseFloor(inbox, meta, tonumber(ARGV[3])) end
syncTtl(inbox, meta)
trim(inbox, meta, tonumber(ARGV[4]))
return 1`;

/** KEYS = [inbox, meta]; ARGV = version, authorId. */
const MARK_UNFOLLOW = `${HELPERS}
if not admit(KEYS[2], ARGV[2], tonumber(ARGV[1]), -1) then return {0} end
return {1, redis.call('ZRANGE', KEYS[1], 0, -1)}`;

/** KEYS = [inbox, meta]; ARGV = version, authorId, then members. */
const REMOVE_UNFOLLOWED = `
if redis.call('HGET', KEYS[2], 'a:' .. ARGV[2]) ~= string.format('%d', -tonumber(ARGV[1])) then return 0 end
for i = 3, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], 'd:' .. ARGV[i])
end
return 1`;

/** KEYS = [inbox, meta]; ARGV = atMs. */
const MARK_PENDING = `
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[2], 'pending', 1)
redis.call('HSET', KEYS[2], 'pendingAt', ARGV[1])
return 1`;

/** KEYS = [inbox, meta]. */
const CLEAR_PENDING = `
local pending = tonumber(redis.call('HGET', KEYS[2], 'pending') or '0')
if pending > 0 then redis.call('HINCRBY', KEYS[2], 'pending', -1) end
return pending`;

/** KEYS = [inbox, meta]; ARGV = ttlMs. The reader is active: their inbox lives ttlMs from now. */
const TOUCH = `${HELPERS}
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
expireIn(KEYS[1], KEYS[2], tonumber(ARGV[1]))
return 1`;

/** KEYS = [inbox, meta]; ARGV = version, ttlMs. */
const CREATE = `${HELPERS}
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('DEL', KEYS[1])
local at = expiryIn(tonumber(ARGV[2]))
redis.call('HSET', KEYS[2], 'floor', '0', 'base', ARGV[1], 'maxver', ARGV[1], 'since', '0', 'exp', fmt(at))
redis.call('PEXPIREAT', KEYS[2], at)
return 1`;

/** KEYS = [inbox, meta]; ARGV = token, startedAt, staleMs, since, ttlMs. */
const BEGIN_BUILD = `${HELPERS}
local m = redis.call('HMGET', KEYS[2], 'floor', 'building', 'pending', 'pendingAt')
if m[1] and not m[2] then return 0 end
if m[2] then
  local started = tonumber(string.match(m[2], ':(%d+)$'))
  if started and tonumber(ARGV[2]) - started < tonumber(ARGV[3]) then return 0 end
end
redis.call('DEL', KEYS[1], KEYS[2])
local at = expiryIn(tonumber(ARGV[5]))
redis.call('HSET', KEYS[2], 'floor', '0', 'base', '0', 'maxver', '0', 'since', ARGV[4], 'building', ARGV[1], 'exp', fmt(at))
-- Changes still pending stay so: the rebuild does not apply them.
if m[3] and tonumber(m[3]) > 0 then redis.call('HSET', KEYS[2], 'pending', m[3], 'pendingAt', m[4]) end
redis.call('PEXPIREAT', KEYS[2], at)
return 1`;

/**
 * KEYS = [inbox, meta]; ARGV = token, version, floor, maxItems, ttlMs, followee count, followee
 * ids, then score/member pairs.
 */
const FINISH_BUILD = `${HELPERS}
local inbox, meta = KEYS[1], KEYS[2]
if redis.call('HGET', meta, 'building') ~= ARGV[1] then return 0 end
if tonumber(redis.call('HGET', meta, 'maxver')) > tonumber(ARGV[2]) then
  redis.call('DEL', inbox, meta)
  return -1
end
local followees = tonumber(ARGV[6])
local followed = {}
for i = 7, 6 + followees do followed[ARGV[i]] = true end
local retracted = {}
local fields = redis.call('HGETALL', meta)
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  local kind, rest = string.sub(field, 1, 2), string.sub(field, 3)
  if kind == 'd:' then
    if not followed[value] then redis.call('ZREM', inbox, rest) end
    redis.call('HDEL', meta, field)
  elseif kind == 'r:' then
    retracted[rest] = true
    redis.call('HDEL', meta, field)
  elseif kind == 'a:' then
    redis.call('HDEL', meta, field)
  end
end
local floor = tonumber(redis.call('HGET', meta, 'floor'))
for i = 7 + followees, #ARGV, 2 do
  if not retracted[ARGV[i + 1]] and tonumber(ARGV[i]) >= floor then redis.call('ZADD', inbox, ARGV[i], ARGV[i + 1]) end
end
redis.call('HSET', meta, 'base', ARGV[2])
redis.call('HDEL', meta, 'building')
raiseFloor(inbox, meta, tonumber(ARGV[3]))
expireIn(inbox, meta, tonumber(ARGV[5]))
trim(inbox, meta, tonumber(ARGV[4]))
return 1`;

type Args = Array<string | number>;
type ScriptedRedis = RedisClient & {
  feedRead(inbox: string, meta: string, ...args: Args): Promise<unknown[]>;
  feedReadWatermark(inbox: string, meta: string, watermark: string, bigAuthors: string, ...args: Args): Promise<[unknown[], string[], string | null]>;
  feedDeliver(numberOfKeys: number, ...args: Args): Promise<number>;
  feedRetract(numberOfKeys: number, ...args: Args): Promise<number>;
  feedDeliverPair(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedRetractPair(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedRetractUnfollowed(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedFollow(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedBlogIds(inbox: string, meta: string): Promise<[number, string[]?]>;
  feedMarkUnfollow(inbox: string, meta: string, ...args: Args): Promise<[number, string[]?]>;
  feedRemoveUnfollowed(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedCreate(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedTouch(inbox: string, meta: string, ttlMs: number): Promise<number>;
  feedMarkPending(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedClearPending(inbox: string, meta: string): Promise<number>;
  feedBeginBuild(inbox: string, meta: string, ...args: Args): Promise<number>;
  feedFinishBuild(inbox: string, meta: string, ...args: Args): Promise<number>;
};

/** Registers the scripts on a client (ioredis sends EVALSHA, and EVAL when Redis lost them). */
function withInboxScripts(redis: RedisClient): ScriptedRedis {
  const scripted = redis as ScriptedRedis;
  if (typeof scripted.feedRead !== 'function') {
    // Declared with their key count, so that ioredis knows which arguments are keys: on a
    // cluster it routes (and auto-pipelines) each call to the inbox's node.
    const perInbox = {
      feedRead: READ,
      feedBlogIds: BLOG_IDS,
      feedRetractUnfollowed: RETRACT_UNFOLLOWED,
      feedFollow: FOLLOW,
      feedMarkUnfollow: MARK_UNFOLLOW,
      feedRemoveUnfollowed: REMOVE_UNFOLLOWED,
      feedMarkPending: MARK_PENDING,
      feedClearPending: CLEAR_PENDING,
      feedCreate: CREATE,
      feedTouch: TOUCH,
      feedBeginBuild: BEGIN_BUILD,
      feedFinishBuild: FINISH_BUILD,
    };
    for (const [name, lua] of Object.entries(perInbox)) redis.defineCommand(name, { lua, numberOfKeys: 2 });
    redis.defineCommand('feedReadWatermark', { lua: READ_WITH_WATERMARK, numberOfKeys: 4 });
    redis.defineCommand('feedDeliverPair', { lua: DELIVER, numberOfKeys: 2 });
    redis.defineCommand('feedRetractPair', { lua: RETRACT, numberOfKeys: 2 });
    // Over any number of inboxes (a single server): the key count comes first.
    redis.defineCommand('feedDeliver', { lua: DELIVER });
    redis.defineCommand('feedRetract', { lua: RETRACT });
  }
  return scripted;
}

function scoreMemberPairs(entries: readonly ScoredId[]): string[] {
  return entries.flatMap((entry) => [String(entry.score), inboxMember(entry.id)]);
}

/** ZRANGE ... WITHSCORES replies as entries. */
function entriesOf(flat: readonly string[]): ScoredId[] {
  const entries: ScoredId[] = [];
  for (let i = 0; i < flat.length; i += 2) entries.push({ id: blogIdOfMember(flat[i]), score: Number(flat[i + 1]) });
  return entries;
}

export class RedisInbox implements Inbox {
  private readonly redis: ScriptedRedis;
  /** On a cluster a script may only touch keys of one slot: one call per inbox then. */
  private readonly perInbox: boolean;
  private readonly ttlMs: number;

  constructor(
    redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly maxItems: number,
    /** ACTIVE_DAYS in seconds: an inbox outlives its reader's last activity by this long. */
    ttlSeconds: number,
  ) {
    this.redis = withInboxScripts(redis);
    this.perInbox = isCluster(redis);
    this.ttlMs = ttlSeconds * 1000;
  }

  private pair(readerId: number): [string, string] {
    return [this.keys.feed(readerId), this.keys.feedMeta(readerId)];
  }

  async read(readerId: number, from: FeedPosition, limit: number): Promise<InboxRead> {
    const [inbox, meta] = this.pair(readerId);
    const args = [
      from.maxScore === null ? '+inf' : String(from.maxScore),
      from.offset,
      from.afterId === null ? '' : inboxMember(from.afterId),
      Math.max(limit, 1),
    ];
    const watermarkKey = this.keys.fanoutInFlight();
    const bigAuthorsKey = this.keys.bigAuthors();
    let reply: unknown[];
    let lowest: string[];
    let bigAuthors: string | null;
    if (this.perInbox) {
      // Different slots: three commands sent together (auto-pipelined per node), one round trip.
      [reply, lowest, bigAuthors] = await Promise.all([
        this.redis.feedRead(inbox, meta, ...args),
        this.redis.zrange(watermarkKey, '0', '1', 'WITHSCORES'),
        this.redis.get(bigAuthorsKey),
      ]);
    } else {
      [reply, lowest, bigAuthors] = await this.redis.feedReadWatermark(inbox, meta, watermarkKey, bigAuthorsKey, ...args);
    }
    return { view: viewOf(reply, limit), watermark: watermarkOf(lowest), bigAuthors };
  }

  async renewBigAuthors(reason: 'changing' | 'changed' | 'missing'): Promise<void> {
    const key = this.keys.bigAuthors();
    const token = randomBytes(12).toString('base64url');
    if (reason === 'changing') await this.redis.set(key, UNSETTLED + token, 'PX', BIG_AUTHOR_CHANGE_MS);
    else if (reason === 'changed') await this.redis.set(key, token);
    else await this.redis.set(key, token, 'NX');
  }

  private async forInboxes(
    readerIds: readonly number[],
    many: (keys: string[]) => Promise<number>,
    one: (inbox: string, meta: string) => Promise<number>,
  ): Promise<void> {
    if (this.perInbox) {
      await Promise.all(readerIds.map((id) => one(...this.pair(id))));
      return;
    }
    for (let start = 0; start < readerIds.length; start += SCRIPT_BATCH) {
      await many(readerIds.slice(start, start + SCRIPT_BATCH).flatMap((id) => this.pair(id)));
    }
  }

  async deliver(readerIds: readonly number[], delivery: Delivery): Promise<void> {
    const args = [delivery.entry.score, inboxMember(delivery.entry.id), delivery.authorId, delivery.readAt, this.maxItems];
    await this.forInboxes(
      readerIds,
      (keys) => this.redis.feedDeliver(keys.length, ...keys, ...args),
      (inbox, meta) => this.redis.feedDeliverPair(inbox, meta, ...args),
    );
  }

  async retractUnfollowed(readerId: number, blogId: number, change: FollowChange, readAt: number): Promise<void> {
    await this.redis.feedRetractUnfollowed(...this.pair(readerId), inboxMember(blogId), change.authorId, change.version, readAt);
  }

  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    const member = inboxMember(blogId);
    await this.forInboxes(
      readerIds,
      (keys) => this.redis.feedRetract(keys.length, ...keys, member),
      (inbox, meta) => this.redis.feedRetractPair(inbox, meta, member),
    );
  }

  async blogIds(readerId: number): Promise<number[] | null> {
    const [exists, members] = await this.redis.feedBlogIds(...this.pair(readerId));
    return exists === 1 ? (members ?? []).map(blogIdOfMember) : null;
  }

  async applyFollow(
    readerId: number,
    change: FollowChange,
    entries: readonly ScoredId[],
    floor: number | null,
    stale: readonly number[] = [],
  ): Promise<boolean> {
    const applied = await this.redis.feedFollow(
      ...this.pair(readerId),
      change.version,
      change.authorId,
      floor === null ? '' : String(floor),
      this.maxItems,
      stale.length,
      ...stale.map(inboxMember),
      ...scoreMemberPairs(entries),
    );
    return applied === 1;
  }

  async markUnfollow(readerId: number, change: FollowChange): Promise<number[] | null> {
    const [admitted, members] = await this.redis.feedMarkUnfollow(...this.pair(readerId), change.version, change.authorId);
    return admitted === 1 ? (members ?? []).map(blogIdOfMember) : null;
  }

  async removeUnfollowed(readerId: number, change: FollowChange, blogIds: readonly number[]): Promise<void> {
    if (blogIds.length === 0) return;
    await this.redis.feedRemoveUnfollowed(...this.pair(readerId), change.version, change.authorId, ...blogIds.map(inboxMember));
  }

  async markPending(readerId: number, atMs: number): Promise<void> {
    await this.redis.feedMarkPending(...this.pair(readerId), atMs);
  }

  async clearPending(readerId: number): Promise<void> {
    await this.redis.feedClearPending(...this.pair(readerId));
  }

  async create(readerId: number, version: number): Promise<void> {
    await this.redis.feedCreate(...this.pair(readerId), version, this.ttlMs);
  }

  async beginBuild(readerId: number, token: string, since: number): Promise<boolean> {
    return (await this.redis.feedBeginBuild(...this.pair(readerId), token, buildStartedAt(token), BUILD_STALE_MS, since, this.ttlMs)) === 1;
  }

  async finishBuild(readerId: number, token: string, snapshot: FeedSnapshot): Promise<BuildOutcome> {
    const outcome = await this.redis.feedFinishBuild(
      ...this.pair(readerId),
      token,
      snapshot.version,
      snapshot.floor,
      this.maxItems,
      this.ttlMs,
      snapshot.followeeIds.length,
      ...snapshot.followeeIds,
      ...scoreMemberPairs(snapshot.entries),
    );
    return outcome === 1 ? 'done' : outcome === -1 ? 'raced' : 'lost';
  }

  async drop(readerId: number): Promise<void> {
    await this.redis.del(...this.pair(readerId));
  }

  async touch(readerId: number): Promise<void> {
    await this.redis.feedTouch(...this.pair(readerId), this.ttlMs);
  }

  /** False while Redis is down or hangs (the breaker, redis/breaker.ts): callers go to MySQL at once. */
  available(): boolean {
    return redisAvailable(this.redis);
  }

  async markInFlight(taskId: number, score: number): Promise<void> {
    await this.redis.zadd(this.keys.fanoutInFlight(), score, String(taskId));
  }

  async clearInFlight(taskIds: readonly number[]): Promise<void> {
    if (taskIds.length > 0) await this.redis.zrem(this.keys.fanoutInFlight(), ...taskIds.map(String));
  }

  async inFlight(): Promise<{ synced: boolean; tasks: Array<{ taskId: number; score: number }> }> {
    const flat = await this.redis.zrange(this.keys.fanoutInFlight(), '0', '-1', 'WITHSCORES');
    const tasks: Array<{ taskId: number; score: number }> = [];
    let synced = false;
    for (let i = 0; i < flat.length; i += 2) {
      if (flat[i] === SYNCED_MARKER) synced = true;
      else tasks.push({ taskId: Number(flat[i]), score: Number(flat[i + 1]) });
    }
    return { synced, tasks };
  }

  async unsyncWatermark(): Promise<void> {
    await this.redis.zrem(this.keys.fanoutInFlight(), SYNCED_MARKER);
  }

  onReconnect(listener: () => void): void {
    this.redis.on('ready', listener);
  }

  async syncInFlight(tasks: ReadonlyArray<{ taskId: number; score: number }>, complete: boolean): Promise<void> {
    const pairs = tasks.flatMap((task) => [task.score, String(task.taskId)]);
    if (complete) pairs.push('-inf', SYNCED_MARKER);
    if (pairs.length > 0) await this.redis.zadd(this.keys.fanoutInFlight(), ...pairs);
  }
}

function viewOf(reply: unknown[], limit: number): InboxView {
  if (reply[0] === 0) return { state: 'missing' };
  if (reply[0] === 2) return { state: 'building' };
  if (reply[0] === 3) return { state: 'pending', since: Number(reply[1]) };
  const version = Math.max(Number(reply[3] ?? 0), Number(reply[4] ?? 0));
  return { state: 'valid', floor: Number(reply[1]), entries: entriesOf(reply[2] as string[]).slice(0, limit), version };
}

/** The two lowest members of the watermark set: the marker (at -inf) when synced, then the oldest task. */
function watermarkOf(lowest: readonly string[]): Watermark {
  if (lowest[0] !== SYNCED_MARKER) return { synced: false, oldest: null };
  return { synced: true, oldest: lowest.length >= 4 ? Number(lowest[3]) : null };
}
