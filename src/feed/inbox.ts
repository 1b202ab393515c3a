/**
 * The inboxes: one Redis sorted set per reader (`feed:{userId}`, see src/redis/keys.ts).
 *
 * This module owns every read and write of inboxes and the trimming rule, the way Mastodon's
 * FeedManager owns its timelines: nothing else touches a feed key.
 *
 * - member: the blog id, zero-padded (inboxMember) so that Redis's same-score lexicographic
 *   order is the numeric order: ZRANGE ... REV then gives the canonical (score DESC, id DESC).
 * - score: the blog's created_at in epoch ms, from the database row. Never the time of the
 *   fan-out (the seed used the fan-out time, so one blog had different scores in different
 *   inboxes, and a late fan-out jumped to the top).
 * - trimming: after every write the inbox keeps its newest `maxItems` entries
 *   (ZREMRANGEBYRANK 0 -(maxItems+1)); the seed never trimmed, so inboxes grew forever.
 * - idempotence: ZADD of the same member with the same score changes nothing, so a delivery
 *   that is repeated (a retried chunk) is harmless.
 * - batching: a write to many inboxes is one Lua script call per `SCRIPT_BATCH` inboxes, which
 *   adds and trims every one of them inside Redis. The seed awaited one ZADD per follower (about
 *   17,000 a second here); a pipeline of ZADD + ZREMRANGEBYRANK pairs reaches about 80,000 a
 *   second, bound by the client encoding two commands per inbox; the script reaches about
 *   500,000 a second (bench/fanout.bench.ts measures all three).
 */
import { Redis } from 'ioredis';
import { blogIdOfMember, inboxMember, RedisKeys } from '../redis/keys';
import { FeedPosition, ScoredId } from './cursor';

/**
 * Inboxes written per script call. Large enough that the per-call cost disappears, small enough
 * that one call keeps Redis busy for only about a millisecond (other clients wait meanwhile).
 */
export const SCRIPT_BATCH = 1000;

/**
 * KEYS = inboxes, ARGV = score, member, maxItems: add the member to every inbox, and trim an
 * inbox only when it has grown past maxItems (ZCARD is O(1); the trim is then a single removal).
 */
const DELIVER_SCRIPT = `
local score, member, max = ARGV[1], ARGV[2], tonumber(ARGV[3])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], score, member)
  if redis.call('ZCARD', KEYS[i]) > max then
    redis.call('ZREMRANGEBYRANK', KEYS[i], 0, -(max + 1))
  end
end
return #KEYS`;

/** KEYS = inboxes, ARGV = member: remove the member from every inbox. */
const RETRACT_SCRIPT = `
for i = 1, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
return #KEYS`;

type ScriptedRedis = Redis & {
  feedDeliver(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  feedRetract(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
};

/** Registers the inbox scripts on a client (ioredis sends EVALSHA, and EVAL when Redis lost them). */
function withInboxScripts(redis: Redis): ScriptedRedis {
  const scripted = redis as ScriptedRedis;
  if (typeof scripted.feedDeliver !== 'function') {
    redis.defineCommand('feedDeliver', { lua: DELIVER_SCRIPT });
    redis.defineCommand('feedRetract', { lua: RETRACT_SCRIPT });
  }
  return scripted;
}

export class Inbox {
  private readonly redis: ScriptedRedis;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
    private readonly maxItems: number,
  ) {
    this.redis = withInboxScripts(redis);
  }

  /** Puts one blog into the inboxes of many readers, trimming each: one script call per batch. */
  async deliver(readerIds: readonly number[], entry: ScoredId): Promise<void> {
    const member = inboxMember(entry.id);
    for (let start = 0; start < readerIds.length; start += SCRIPT_BATCH) {
      const keys = readerIds.slice(start, start + SCRIPT_BATCH).map((id) => this.keys.feed(id));
      await this.redis.feedDeliver(keys.length, ...keys, entry.score, member, this.maxItems);
    }
  }

  /** Takes one blog out of the inboxes of many readers: one script call per batch. */
  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    const member = inboxMember(blogId);
    for (let start = 0; start < readerIds.length; start += SCRIPT_BATCH) {
      const keys = readerIds.slice(start, start + SCRIPT_BATCH).map((id) => this.keys.feed(id));
      await this.redis.feedRetract(keys.length, ...keys, member);
    }
  }

  /** Adds several blogs to one reader's inbox in one round trip (a follow's backfill). */
  async addEntries(readerId: number, entries: readonly ScoredId[]): Promise<void> {
    if (entries.length === 0) return;
    const key = this.keys.feed(readerId);
    const scoreMembers = entries.flatMap((entry) => [String(entry.score), inboxMember(entry.id)]);
    await execOrThrow(
      this.redis
        .pipeline()
        .zadd(key, ...scoreMembers)
        .zremrangebyrank(key, 0, -(this.maxItems + 1)),
    );
  }

  /** Removes some blogs from one reader's inbox (an unfollow). */
  async removeEntries(readerId: number, blogIds: readonly number[]): Promise<void> {
    if (blogIds.length === 0) return;
    await this.redis.zrem(this.keys.feed(readerId), ...blogIds.map(inboxMember));
  }

  /** Every blog id in a reader's inbox (at most maxItems). */
  async blogIds(readerId: number): Promise<number[]> {
    const members = await this.redis.zrange(this.keys.feed(readerId), 0, '-1');
    return members.map(blogIdOfMember);
  }

  /** The first `limit` entries at `from`, in canonical order: one ZRANGE. */
  async read(readerId: number, from: FeedPosition, limit: number): Promise<ScoredId[]> {
    if (limit === 0) return [];
    const reply = await this.redis.zrange(
      this.keys.feed(readerId),
      from.maxScore === null ? '+inf' : from.maxScore,
      '-inf',
      'BYSCORE',
      'REV',
      'LIMIT',
      from.offset,
      limit,
      'WITHSCORES',
    );
    const entries: ScoredId[] = [];
    for (let i = 0; i < reply.length; i += 2) {
      entries.push({ id: blogIdOfMember(reply[i]), score: Number(reply[i + 1]) });
    }
    return entries;
  }
}

/** ioredis reports a failed command inside a pipeline as a result, not a rejection. */
async function execOrThrow(pipeline: ReturnType<Redis['pipeline']>): Promise<void> {
  const results = (await pipeline.exec()) ?? [];
  const failed = results.find(([error]) => error);
  if (failed) throw failed[0];
}
