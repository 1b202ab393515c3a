/**
 * The inbox in Redis: the semantics of inbox.ts (specified, operation by operation, by
 * inbox.memory.ts) as Lua scripts (scripts/*.lua), so that each operation is atomic however many
 * API processes and fan-out workers write at once.
 *
 * Per reader three keys in one cluster slot (the hash tag is the user id, see redis/keys.ts):
 * - `feed:{id}`, a sorted set: member = the blog id zero-padded to 20 digits, so that Redis's
 *   same-score order (lexicographic) is the numeric order and ZRANGE ... REV gives the canonical
 *   (score DESC, id DESC); score = the blog's created_at in epoch ms; plus the sentinel "~" at +inf;
 * - `feedmeta:{id}`, a hash: floor, ep (generation), base, maxver, building and buildAt while a
 *   rebuild runs, a:<authorId> (signed version of the pair's last change), d:<member> (delivered
 *   while building, its author), r:<member> (retracted while building), and the marks of pending
 *   follow changes (pending, pendingAt, p:<change id>). The field `floor` is what makes an inbox
 *   exist; a hash of marks alone is not one;
 * - `feedfol:{id}`, a set: the reader's followees, plus the sentinel "~".
 * All three expire ACTIVE_DAYS after the reader was last active, together. Expiry is how fan-out
 * skips inactive followers: deliveries go only to inboxes that exist.
 *
 * Plus the fan-out watermark in the {wm} slot (inbox.ts, "Fan-out watermark") and the
 * big-author generation beside it.
 *
 * Batching: a delivery to many inboxes is one script call per SCRIPT_BATCH inboxes. On a cluster
 * a script may only touch keys of one slot, so there each inbox gets its own call, which ioredis
 * pipelines per node; a page's read is then two commands in one round trip (the inbox's slot and
 * the watermark's), and a third round trip only when followees of the reader may be in flight.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { redisAvailable, breakerOf } from '../redis/breaker';
import { loadScripts } from '../redis/lua';
import { isCluster, RedisClient } from '../redis/redis.client';
import { blogIdOfMember, inboxMember, RedisKeys } from '../redis/keys';
import { FeedPosition, ScoredId } from '../kernel/pagination/cursor';
import {
  AuthorInFlight,
  BIG_AUTHOR_CHANGE_MS,
  BUILD_STALE_MS,
  BuildOutcome,
  Delivery,
  DeliveryOutcome,
  FeedSnapshot,
  FollowChange,
  FollowOutcome,
  Inbox,
  InboxRead,
  InboxView,
  TaskInFlight,
  UNSETTLED,
  Watermark,
} from './inbox';

/**
 * Inboxes written per script call. Large enough that the per-call cost disappears, small enough
 * that one call keeps Redis busy for only about a millisecond: other clients wait meanwhile, and
 * so does a small fan-out's call queued behind a big one's on the workers' connection (a chunk
 * sends its calls at once, so at most FANOUT_CONCURRENCY chunks' worth are queued there, up to
 * about 100 ms of Redis). Measured with bench:fanout at a million followers: 250 delivered as
 * fast as 1000, and a 10-follower post published meanwhile reached its inboxes in 100-120 ms
 * instead of 180-220 ms (a chunk's calls then went one after the other; sent at once, the lanes
 * case at 100,000 followers took 14-70 ms, against 9-108 ms one after the other).
 */
export const SCRIPT_BATCH = 250;

/**
 * Authors in flight a page on a cluster looks up among the reader's followees (SMISMEMBER, a
 * second round trip). With more in flight at once, the page reads the span above the oldest of
 * them for every followee instead, as if all were followed: still exact, a little more SQL.
 */
export const CLUSTER_IN_FLIGHT_LOOKUP = 1000;

/** The watermark's "synced" marker, before its generation (scripts/includes/watermark.lua). */
const WATERMARK_MARKER = '~synced:';

/** A delivery's code per inbox, bits as scripts/deliver.lua names them. */
enum DeliverCode {
  WRITTEN = 1,
  UNSURE = 2,
  LIVE = 4,
}

/** The replies of a read, as the scripts name them (scripts/includes/inbox.lua). */
enum ReadReply {
  MISSING = 0,
  VALID = 1,
  BUILDING = 2,
  PENDING = 3,
}

/** The sentinel member of an inbox's sorted set and followee set (scripts/includes/inbox.lua). */
export const INBOX_SENTINEL = '~';

const SCRIPTS = loadScripts(join(__dirname, 'scripts'), [
  'read',
  'read-page',
  'deliver',
  'retract',
  'retract-unfollowed',
  'blog-ids',
  'follow',
  'mark-unfollow',
  'remove-unfollowed',
  'mark-pending',
  'clear-pending',
  'pending-changes',
  'touch',
  'create',
  'begin-build',
  'finish-build',
  'drop',
  'watermark-mark',
  'watermark-clear',
  'watermark-sync',
  'watermark-list',
  'watermark-read',
  'big-authors-missing',
  'followed-among',
  'clock',
] as const);

type RawRead = [ReadReply, ...unknown[]];

function scoreMemberPairs(entries: readonly ScoredId[]): string[] {
  return entries.flatMap((entry) => [String(entry.score), inboxMember(entry.id)]);
}

/** ZRANGE ... WITHSCORES replies as entries. */
function entriesOf(flat: readonly string[]): ScoredId[] {
  const entries: ScoredId[] = [];
  for (let i = 0; i < flat.length; i += 2) entries.push({ id: blogIdOfMember(flat[i]), score: Number(flat[i + 1]) });
  return entries;
}

/** member/score pairs of authors (ZINTER, ZRANGE WITHSCORES) as authors in flight. */
function authorsOf(flat: readonly string[]): AuthorInFlight[] {
  const authors: AuthorInFlight[] = [];
  for (let i = 0; i < flat.length; i += 2) authors.push({ authorId: Number(flat[i]), score: Number(flat[i + 1]) });
  return authors;
}

export interface RedisInboxDeps {
  redis: RedisClient;
  keys: RedisKeys;
  /** FEED_MAX_ITEMS: the entries an inbox keeps. */
  maxItems: number;
  /** ACTIVE_DAYS in seconds: an inbox outlives its reader's last activity by this long. */
  ttlSeconds: number;
  /** BUILD_STALE_MS: a rebuild older than this (by Redis's clock) is taken over by the next one. */
  buildStaleMs?: number;
}

export class RedisInbox implements Inbox {
  /** On a cluster a script may only touch keys of one slot: one call per inbox then. */
  private readonly perInbox: boolean;
  private readonly ttlMs: number;

  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly maxItems: number;
  private readonly buildStaleMs: number;
  private readonly deliveryKeyHeads: readonly string[];

  constructor(deps: RedisInboxDeps) {
    this.redis = deps.redis;
    this.keys = deps.keys;
    this.maxItems = deps.maxItems;
    this.buildStaleMs = deps.buildStaleMs ?? BUILD_STALE_MS;
    this.perInbox = isCluster(deps.redis);
    this.ttlMs = deps.ttlSeconds * 1000;
    this.deliveryKeyHeads = deps.keys.deliveryKeyHeads();
  }

  private inboxKeys(readerId: number): [string, string, string] {
    return [this.keys.feed(readerId), this.keys.feedMeta(readerId), this.keys.feedFollowees(readerId)];
  }

  /** An inbox's keys and, on a single server, the inboxes' clock, for the scripts that install followees. */
  private installKeys(readerId: number): string[] {
    const keys: string[] = this.inboxKeys(readerId);
    return this.perInbox ? keys : [...keys, this.keys.inboxClock()];
  }

  private pair(readerId: number): [string, string] {
    return [this.keys.feed(readerId), this.keys.feedMeta(readerId)];
  }

  async read(
    readerId: number,
    from: FeedPosition,
    limit: number,
    epoch: number,
    pulledOf: readonly number[] = [],
  ): Promise<InboxRead> {
    const args = [
      String(epoch),
      from.maxScore === null ? '+inf' : String(from.maxScore),
      from.offset,
      from.afterId === null ? '' : inboxMember(from.afterId),
      Math.max(limit, 1),
    ];
    // On a cluster the tokens live in other slots: the page asks for them after this read.
    if (this.perInbox) return this.readOnCluster(readerId, args, limit, epoch);
    const pulledKeys = pulledOf.map((id) => this.keys.pulledBlogs(id));
    const [raw, synced, inFlight, bigAuthors, tokens] = await SCRIPTS['read-page'].run<
      [RawRead, 0 | 1, string[], string | null, Array<string | null>]
    >(
      this.redis,
      [...this.inboxKeys(readerId), this.keys.watermarkAuthors(), this.keys.bigAuthors(), ...pulledKeys],
      args,
    );
    const watermark: Watermark = synced === 1 ? { synced: true, followees: authorsOf(inFlight) } : { synced: false };
    return {
      view: viewOf(raw, limit),
      watermark,
      bigAuthors: ofEpoch(bigAuthors, epoch),
      ...(pulledOf.length > 0 ? { pulledTokens: tokens.map((token) => ofEpoch(token, epoch)) } : {}),
    };
  }

  async followedAmong(readerId: number, authorIds: readonly number[], epoch: number): Promise<Set<number> | null> {
    if (authorIds.length === 0) return new Set();
    const flags = await SCRIPTS['followed-among'].run<Array<0 | 1> | 0>(this.redis, this.inboxKeys(readerId), [
      String(epoch),
      ...authorIds.map(String),
    ]);
    if (!Array.isArray(flags)) return null;
    return new Set(authorIds.filter((_, i) => flags[i] === 1));
  }

  /**
   * The inbox and the watermark live in different slots: two commands sent together (one round
   * trip), then, when authors are in flight, which of them the reader follows.
   */
  private async readOnCluster(
    readerId: number,
    args: Array<string | number>,
    limit: number,
    epoch: number,
  ): Promise<InboxRead> {
    const [raw, [synced, inFlight, bigAuthors]] = await Promise.all([
      SCRIPTS.read.run<RawRead>(this.redis, this.inboxKeys(readerId), args),
      SCRIPTS['watermark-read'].run<[0 | 1, string[], string | null]>(
        this.redis,
        [this.keys.watermarkAuthors(), this.keys.bigAuthors()],
        [String(epoch), CLUSTER_IN_FLIGHT_LOOKUP],
      ),
    ]);
    const view = viewOf(raw, limit);
    const read = { view, bigAuthors: ofEpoch(bigAuthors, epoch) };
    if (synced !== 1) return { ...read, watermark: { synced: false } };
    const authors = authorsOf(inFlight);
    if (authors.length === 0 || view.state !== 'valid') return { ...read, watermark: { synced: true, followees: [] } };
    if (authors.length > CLUSTER_IN_FLIGHT_LOOKUP)
      return { ...read, watermark: { synced: true, oldest: Math.min(...authors.map((a) => a.score)) } };
    const followed = await this.redis.smismember(
      this.keys.feedFollowees(readerId),
      ...authors.map((author) => String(author.authorId)),
    );
    return { ...read, watermark: { synced: true, followees: authors.filter((_, i) => followed[i] === 1) } };
  }

  async renewBigAuthors(reason: 'changing' | 'changed' | 'missing', epoch: number): Promise<void> {
    await this.renewToken(this.keys.bigAuthors(), reason, epoch);
  }

  /** Replaces a generation token (the big-author generation, an author's pulled-blog token). */
  private async renewToken(key: string, reason: 'changing' | 'changed' | 'missing', epoch: number): Promise<void> {
    const token = randomBytes(12).toString('base64url');
    if (reason === 'changing') await this.redis.set(key, `${UNSETTLED}${epoch}:${token}`, 'PX', BIG_AUTHOR_CHANGE_MS);
    else if (reason === 'changed') await this.redis.set(key, `${epoch}:${token}`);
    else await SCRIPTS['big-authors-missing'].run(this.redis, [key], [String(epoch), token]);
  }

  async pulledBlogTokens(authorIds: readonly number[], epoch: number): Promise<Array<string | null>> {
    if (authorIds.length === 0) return [];
    const keys = authorIds.map((id) => this.keys.pulledBlogs(id));
    // Each author's key is in a slot of its own on a cluster: one GET each, sent together.
    const tokens = this.perInbox
      ? await Promise.all(keys.map((key) => this.redis.get(key)))
      : await this.redis.mget(...keys);
    return tokens.map((token) => ofEpoch(token, epoch));
  }

  async renewPulledBlogs(authorId: number, reason: 'changing' | 'changed' | 'missing', epoch: number): Promise<void> {
    await this.renewToken(this.keys.pulledBlogs(authorId), reason, epoch);
  }

  /**
   * A script over many inboxes, each given by `keysOf`: batches of SCRIPT_BATCH on a single
   * server, one call per inbox (pipelined) on a cluster.
   */
  private async forInboxes(
    readerIds: readonly number[],
    keysOf: (readerId: number) => string[],
    run: (keys: string[]) => Promise<unknown>,
  ): Promise<void> {
    if (this.perInbox) {
      await Promise.all(readerIds.map((id) => run(keysOf(id))));
      return;
    }
    for (let start = 0; start < readerIds.length; start += SCRIPT_BATCH) {
      await run(readerIds.slice(start, start + SCRIPT_BATCH).flatMap(keysOf));
    }
  }

  /** On a cluster 0: no inbox records its install there, and a delivery reads every inbox's followees. */
  async clock(): Promise<number> {
    if (this.perInbox) return 0;
    return SCRIPTS.clock.run<number>(this.redis, [this.keys.inboxClock()], []);
  }

  /**
   * The script is sent reader ids, not key names (scripts/deliver.lua): its one key, the first
   * reader's inbox, routes the call on a cluster.
   */
  async deliver(readerIds: readonly number[], delivery: Delivery): Promise<DeliveryOutcome> {
    const args = [
      delivery.entry.score,
      inboxMember(delivery.entry.id),
      delivery.authorId,
      this.maxItems,
      this.ttlMs,
      ...this.deliveryKeyHeads,
      delivery.listed?.at ?? 0,
      String(delivery.listed?.epoch ?? 0),
    ];
    const deliverTo = (ids: readonly number[]) =>
      SCRIPTS.deliver.run<number[]>(this.redis, [this.keys.feed(ids[0])], [...args, ...ids]);
    const outcome: DeliveryOutcome = { written: [], unsure: [], live: [] };
    const record = (ids: readonly number[], codes: readonly number[]) => {
      ids.forEach((id, i) => {
        const code = codes[i];
        if (code & DeliverCode.UNSURE) outcome.unsure.push(id);
        else if (code & DeliverCode.WRITTEN) outcome.written.push(id);
        if (code & DeliverCode.LIVE) outcome.live.push(id);
      });
    };
    if (this.perInbox) {
      await Promise.all(readerIds.map(async (id) => record([id], await deliverTo([id]))));
      return outcome;
    }
    // Every batch sent at once: Redis runs them in a row, so the chunks of a big fan-out finish
    // one after the other rather than all in the same moment (a timeline of bench:fanout showed
    // the 16 chunks in flight ending within a millisecond, then Redis idle 15-25 ms while they
    // finished and took their next jobs). On a 2-core machine the delivery's time did not move
    // measurably (0.99 s against 1.00 s, the median of 15 rounds each).
    const batches: number[][] = [];
    for (let start = 0; start < readerIds.length; start += SCRIPT_BATCH)
      batches.push(readerIds.slice(start, start + SCRIPT_BATCH));
    const replies = await Promise.all(batches.map(deliverTo));
    batches.forEach((batch, i) => record(batch, replies[i]));
    return outcome;
  }

  async retractUnfollowed(readerId: number, blogId: number, change: FollowChange): Promise<void> {
    await SCRIPTS['retract-unfollowed'].run(this.redis, this.pair(readerId), [
      inboxMember(blogId),
      change.authorId,
      change.version,
    ]);
  }

  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    const member = inboxMember(blogId);
    await this.forInboxes(
      readerIds,
      (id) => this.pair(id),
      (keys) => SCRIPTS.retract.run(this.redis, keys, [member]),
    );
  }

  async blogIds(readerId: number): Promise<number[] | null> {
    const [exists, members] = await SCRIPTS['blog-ids'].run<[0 | 1, string[]?]>(this.redis, this.pair(readerId));
    return exists === 1 ? (members ?? []).map(blogIdOfMember) : null;
  }

  async applyFollow(
    readerId: number,
    change: FollowChange,
    entries: readonly ScoredId[],
    floor: number | null,
    stale: readonly number[] = [],
  ): Promise<FollowOutcome> {
    const applied = await SCRIPTS.follow.run<number>(this.redis, this.inboxKeys(readerId), [
      change.version,
      change.authorId,
      floor === null ? '' : String(floor),
      this.maxItems,
      this.ttlMs,
      stale.length,
      ...stale.map(inboxMember),
      ...scoreMemberPairs(entries),
    ]);
    return applied === 1 ? 'applied' : applied === 2 ? 'reapplied' : 'stale';
  }

  async markUnfollow(readerId: number, change: FollowChange): Promise<number[] | null> {
    const [admitted, members] = await SCRIPTS['mark-unfollow'].run<[0 | 1, string[]?]>(
      this.redis,
      this.inboxKeys(readerId),
      [change.version, change.authorId, this.ttlMs],
    );
    return admitted === 1 ? (members ?? []).map(blogIdOfMember) : null;
  }

  async removeUnfollowed(readerId: number, change: FollowChange, blogIds: readonly number[]): Promise<void> {
    if (blogIds.length === 0) return;
    await SCRIPTS['remove-unfollowed'].run(this.redis, this.pair(readerId), [
      change.version,
      change.authorId,
      ...blogIds.map(inboxMember),
    ]);
  }

  async markPending(readerId: number, changeId: number): Promise<void> {
    await SCRIPTS['mark-pending'].run(this.redis, this.pair(readerId), [changeId, this.ttlMs]);
  }

  async clearPending(readerId: number, changeId: number): Promise<void> {
    await SCRIPTS['clear-pending'].run(this.redis, this.inboxKeys(readerId), [changeId]);
  }

  async pendingChanges(readerId: number): Promise<number[]> {
    return (await SCRIPTS['pending-changes'].run<string[]>(this.redis, [this.keys.feedMeta(readerId)])).map(Number);
  }

  async create(readerId: number, version: number, epoch: number): Promise<void> {
    await SCRIPTS.create.run(this.redis, this.installKeys(readerId), [version, String(epoch), this.ttlMs]);
  }

  async beginBuild(readerId: number, token: string, epoch: number): Promise<boolean> {
    return (
      (await SCRIPTS['begin-build'].run<number>(this.redis, this.inboxKeys(readerId), [
        token,
        String(epoch),
        this.buildStaleMs,
        this.ttlMs,
      ])) === 1
    );
  }

  async finishBuild(readerId: number, token: string, snapshot: FeedSnapshot): Promise<BuildOutcome> {
    const outcome = await SCRIPTS['finish-build'].run<number>(this.redis, this.installKeys(readerId), [
      token,
      snapshot.version,
      snapshot.floor,
      this.maxItems,
      this.ttlMs,
      snapshot.followeeIds.length,
      ...snapshot.followeeIds,
      snapshot.mutedIds.length,
      ...snapshot.mutedIds,
      ...scoreMemberPairs(snapshot.entries),
    ]);
    return outcome === 1 ? 'done' : outcome === -1 ? 'raced' : 'lost';
  }

  async drop(readerId: number): Promise<void> {
    await SCRIPTS.drop.run(this.redis, this.inboxKeys(readerId), [this.ttlMs]);
  }

  async touch(readerId: number): Promise<void> {
    await SCRIPTS.touch.run(this.redis, this.inboxKeys(readerId), [this.ttlMs]);
  }

  /** False while Redis is down or hangs (the breaker, redis/breaker.ts): callers go to MySQL at once. */
  available(): boolean {
    return redisAvailable(this.redis);
  }

  onAvailable(listener: () => void): void {
    this.redis.on('ready', listener);
    breakerOf(this.redis)?.onClose(listener);
  }

  async markInFlight(task: TaskInFlight): Promise<void> {
    await SCRIPTS['watermark-mark'].run(
      this.redis,
      [this.keys.watermarkTasks(), this.keys.watermarkAuthors(), this.keys.watermarkAuthor(task.authorId)],
      [task.taskId, task.authorId, task.score],
    );
  }

  async clearInFlight(tasks: ReadonlyArray<Pick<TaskInFlight, 'taskId' | 'authorId'>>): Promise<void> {
    if (tasks.length === 0) return;
    await SCRIPTS['watermark-clear'].run(
      this.redis,
      [
        this.keys.watermarkTasks(),
        this.keys.watermarkAuthors(),
        ...tasks.map((task) => this.keys.watermarkAuthor(task.authorId)),
      ],
      tasks.flatMap((task) => [task.taskId, task.authorId]),
    );
  }

  async isWatermarkSynced(epoch: number): Promise<boolean> {
    return (await this.redis.zscore(this.keys.watermarkAuthors(), `${WATERMARK_MARKER}${epoch}`)) !== null;
  }

  async inFlight(epoch: number): Promise<{ synced: boolean; tasks: TaskInFlight[] }> {
    const [synced, flat] = await SCRIPTS['watermark-list'].run<[0 | 1, string[]]>(
      this.redis,
      [this.keys.watermarkTasks(), this.keys.watermarkAuthors()],
      [String(epoch)],
    );
    const tasks: TaskInFlight[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const [authorId, score] = flat[i + 1].split(':').map(Number);
      tasks.push({ taskId: Number(flat[i]), authorId, score });
    }
    return { synced: synced === 1, tasks };
  }

  async syncInFlight(tasks: readonly TaskInFlight[], complete: boolean, epoch: number): Promise<void> {
    await SCRIPTS['watermark-sync'].run(
      this.redis,
      [
        this.keys.watermarkTasks(),
        this.keys.watermarkAuthors(),
        ...tasks.map((task) => this.keys.watermarkAuthor(task.authorId)),
      ],
      [complete ? '1' : '0', String(epoch), ...tasks.flatMap((task) => [task.taskId, task.authorId, task.score])],
    );
  }

  async unsyncWatermark(): Promise<void> {
    await this.redis.zremrangebyscore(this.keys.watermarkAuthors(), '-inf', '-inf');
  }
}

function viewOf(reply: RawRead, limit: number): InboxView {
  switch (reply[0]) {
    case ReadReply.MISSING:
      return { state: 'missing' };
    case ReadReply.BUILDING:
      return { state: 'building', ageMs: Number(reply[1]) };
    case ReadReply.PENDING:
      return { state: 'pending', ageMs: Number(reply[1]) };
    case ReadReply.VALID: {
      const [, floor, entries, base, maxver] = reply as [ReadReply, string, string[], string, string];
      return {
        state: 'valid',
        floor: Number(floor),
        entries: entriesOf(entries).slice(0, limit),
        version: Math.max(Number(base), Number(maxver)),
      };
    }
  }
}

/** A big-author generation of this epoch, settled; null otherwise (no list may be kept or trusted). */
function ofEpoch(token: string | null, epoch: number): string | null {
  return token !== null && token.startsWith(`${epoch}:`) ? token : null;
}
