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
 * - batching: writes to many inboxes go in pipelines of `PIPELINE_CHUNK` inboxes, one round trip
 *   each; the seed awaited one ZADD per follower.
 */
import { Redis } from 'ioredis';
import { blogIdOfMember, inboxMember, RedisKeys } from '../redis/keys';
import { FeedPosition, ScoredId } from './cursor';

/**
 * Inboxes written per pipeline. Large enough that round trips stop mattering (a round trip per
 * 1000 inboxes), small enough that one pipeline's reply stays a few tens of kilobytes.
 */
export const PIPELINE_CHUNK = 1000;

export class Inbox {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly maxItems: number,
  ) {}

  /** Puts one blog into the inboxes of many readers, pipelined, trimming each. */
  async deliver(readerIds: readonly number[], entry: ScoredId): Promise<void> {
    const member = inboxMember(entry.id);
    for (let start = 0; start < readerIds.length; start += PIPELINE_CHUNK) {
      const pipeline = this.redis.pipeline();
      for (const readerId of readerIds.slice(start, start + PIPELINE_CHUNK)) {
        const key = this.keys.feed(readerId);
        pipeline.zadd(key, entry.score, member);
        pipeline.zremrangebyrank(key, 0, -(this.maxItems + 1));
      }
      await execOrThrow(pipeline);
    }
  }

  /** Takes one blog out of the inboxes of many readers, pipelined. */
  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    const member = inboxMember(blogId);
    for (let start = 0; start < readerIds.length; start += PIPELINE_CHUNK) {
      const pipeline = this.redis.pipeline();
      for (const readerId of readerIds.slice(start, start + PIPELINE_CHUNK)) {
        pipeline.zrem(this.keys.feed(readerId), member);
      }
      await execOrThrow(pipeline);
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
