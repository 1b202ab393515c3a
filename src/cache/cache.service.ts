/**
 * The hydration cache: what a feed page shows of its blogs and their authors, kept in Redis so
 * that a page in the steady state runs no SQL statement (README, "The hydration cache").
 *
 * What it holds (redis/keys.ts): per blog its row as JSON and its likers (a sorted set, like the
 * seeds' blog:liked:{id}), from which the like count (ZCARD) and the viewer's like (ZSCORE) are
 * exact; per user the nickName and icon (follower counts are read from MySQL when asked for: they
 * change with every follow). The follow checks of a page come from the viewer's inbox
 * (FeedService.followedAmong).
 *
 * The rules that keep it exact, across every process sharing Redis and MySQL:
 * - A reader that misses gets a lease (a token in the entry), reads MySQL's primary and stores
 *   the row only if its lease is still there (a compare-and-set in Lua). Every write takes the
 *   lease away before it commits, so a reader that read the row before a write never stores it
 *   after the write (the "stale set after delete" race).
 * - A write of a cached row (an edit, a delete, a profile change) locks the entry inside its
 *   transaction, after its row lock: the copy is dropped and readers go to MySQL until the lock is
 *   released after the commit (or the rollback). A like or unlike applies itself to a filled
 *   like set under the blog row's lock (so in commit order) and marks itself in flight until its
 *   commit; a mark that Redis lost meanwhile drops the entry.
 * - A lock or mark whose process died is stale after WRITE_STALE_MS (longer than any
 *   transaction): the next reader drops the entry and fills it again.
 * - Redis unreachable at a write: the write commits anyway, with a debt row (tb_cache_debt) in its
 *   own transaction. A process trusts the cache only after it has settled the debts (dropped
 *   those entries, deleted the rows): at its first page, whenever Redis answers again after
 *   being away, and every SETTLE_EVERY_MS (for a process that could reach Redis while the writer
 *   could not).
 * - Redis lost (FLUSHALL, a restart): the entries are gone, leases with them, so no fill in
 *   flight can store anything; pages refill from MySQL.
 * - Generations. Redis restored from an older dump (or failed over to a replica that missed
 *   writes) holds entries consistent with the dump and older than MySQL, and does not know it;
 *   the inboxes' rule covers the cache too (feed/generation.ts): each entry is stamped with the
 *   Redis generation its fill read in (the lease token carries it), a read trusts only entries of
 *   the generation this process has confirmed, and drops the others. While no generation is
 *   confirmed (after every reconnect, until the server's identity is checked) the cache is not
 *   used, and a read whose generation changed before its answer came back is not trusted either
 *   (a command sent before a restart can run on the restored server).
 * Nothing here is needed for correctness of the data: any failure of Redis sends the page to
 * MySQL (BlogService.forViewer).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Sql } from '../db/database';
import { breakerOf, redisAvailable } from '../redis/breaker';
import { inboxMember, RedisKeys } from '../redis/keys';
import { LuaScript, loadScripts } from '../redis/lua';
import { isCluster, RedisClient } from '../redis/redis.client';
import { Blog, BlogRow } from '../blog/blog.types';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import { User } from '../user/user.types';
import { CacheStore, DEBTS_PER_READ, DebtKind } from './cache.store';

/** A lock or a like mark this old belonged to a process that died: longer than any transaction (statements time out well before). */
export const WRITE_STALE_MS = 60_000;
/** A reader's lease lasts this long: a fill reads two statements on the primary. */
export const LEASE_MS = 10_000;
/** Cached rows expire after a day without being filled again: memory for the active blogs and users only. */
export const ENTRY_TTL_MS = 24 * 3600 * 1000;
/** A blog with more likes keeps no like set (its likes and count are read from MySQL): a fill stays a bounded read. */
export const LIKE_SET_MAX = 10_000;
/** How often a process settles the debts other processes may have written while it could reach Redis. */
export const SETTLE_EVERY_MS = 5_000;

const SCRIPTS = loadScripts(join(__dirname, 'scripts'), [
  'blog-read',
  'blog-fill',
  'lock',
  'like-mark',
  'like-done',
  'user-read',
  'user-fill',
  'likers-read',
] as const);

export type BlogRead =
  | { kind: 'hit'; blog: Blog; liked: boolean }
  /** Deleted. */
  | { kind: 'gone' }
  /** A write in flight (or too many likes to keep): read MySQL, fill nothing. */
  | { kind: 'busy' }
  /** Not cached: read MySQL's primary, then fill under this lease. */
  | { kind: 'miss'; lease: string };

export type UserRead = { kind: 'hit'; user: User } | { kind: 'busy' } | { kind: 'miss'; lease: string };

/** A like as the like set keeps it. */
export interface CachedLike {
  userId: number;
  at: Date;
}

/** What the services that write cached rows tell the cache (CacheWrites of the embedded mode does nothing). */
export interface CacheWrites {
  /** Inside the write's transaction, after its row lock: readers stop trusting the entry (or a debt row, if Redis is away). */
  changing(sql: Sql, kind: DebtKind, id: number): Promise<void>;
  /** After the commit or the rollback of a write that called changing(). */
  changed(kind: DebtKind, id: number): Promise<void>;
  /** Inside a like's transaction, after the blog row's lock; a token for likeChanged (null: a debt was written instead). */
  likeChanging(sql: Sql, blogId: number, userId: number, liked: boolean, at: Date): Promise<string | null>;
  /** After the like's commit (committed) or rollback. */
  likeChanged(blogId: number, token: string | null, committed: boolean): Promise<void>;
}

/** The embedded mode (no Redis): nothing is cached. */
export const NO_CACHE: CacheWrites = {
  changing: () => Promise.resolve(),
  changed: () => Promise.resolve(),
  likeChanging: () => Promise.resolve(null),
  likeChanged: () => Promise.resolve(),
};

type Warn = (message: string, error?: unknown) => void;

/** A row's immutable and editable fields as the entry keeps them (not the count: the like set has it). */
interface StoredBlog {
  u: number;
  t: string;
  c: string;
  i: string;
  a: number;
  p: 0 | 1;
  e: number | null;
}

export interface HydrationCacheDeps {
  redis: RedisClient;
  keys: RedisKeys;
  /** The Redis generation this process has confirmed (FeedService.redisGeneration); null: none yet. */
  generation: () => number | null;
  /** The debts (entries a write could not invalidate in Redis), settled when Redis answers again. */
  store: CacheStore;
  warn: Warn;
}

export class HydrationCache implements CacheWrites {
  private trusted = false;
  private settling: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  /** The SQL statements settles have run (tests tell them from a page's). */
  settleStatements = 0;
  /** Whether a settle runs now (tests wait for it before they count statements). */
  get settlingNow(): boolean {
    return this.settling !== null;
  }
  private readonly cluster: boolean;

  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly generation: () => number | null;
  private readonly store: CacheStore;
  private readonly warn: Warn;

  constructor(deps: HydrationCacheDeps) {
    this.redis = deps.redis;
    this.keys = deps.keys;
    this.generation = deps.generation;
    this.store = deps.store;
    this.warn = deps.warn;
    this.cluster = isCluster(deps.redis);
    breakerOf(deps.redis)?.onClose(() => {
      this.trusted = false;
    });
  }

  /**
   * Whether pages may read the cache now: Redis answers, this process has confirmed its
   * generation, and it has settled the debts since it last could not reach it. The first call
   * starts the periodic settle.
   */
  usable(): boolean {
    if (this.generation() === null) return false;
    if (!redisAvailable(this.redis)) {
      this.trusted = false;
      return false;
    }
    if (!this.timer) {
      this.timer = setInterval(() => void this.settle(), SETTLE_EVERY_MS);
      this.timer.unref();
    }
    if (!this.trusted) void this.settle();
    return this.trusted;
  }

  /** Drops the entries of every debt, then deletes the debts; trusted afterwards (unless Redis failed meanwhile). */
  settle(): Promise<void> {
    this.settling ??= this.settleDebts()
      .catch((error: unknown) => this.warn('settling the cache debts failed; pages keep reading MySQL', error))
      .finally(() => {
        this.settling = null;
      });
    return this.settling;
  }

  private async settleDebts(): Promise<void> {
    for (;;) {
      const debts = await this.store.debts();
      this.settleStatements += 1;
      if (debts.length > 0) {
        await Promise.all(debts.map((debt) => this.redis.del(...this.keysOf(debt.kind, debt.refId))));
        await this.store.settled(debts.map((debt) => debt.id));
        this.settleStatements += 1;
      }
      if (debts.length < DEBTS_PER_READ) break;
    }
    if (redisAvailable(this.redis)) this.trusted = true;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private keysOf(kind: DebtKind, id: number): string[] {
    return kind === 'b' ? [this.keys.cachedBlog(id), this.keys.cachedLikes(id)] : [this.keys.cachedUser(id)];
  }

  // ---------------------------------------------------------------------------------------
  // Reading and filling

  /** The cached state of each blog, one script per blog (pipelined: one round trip). */
  async readBlogs(viewerId: number | null, ids: readonly number[]): Promise<Map<number, BlogRead>> {
    const generation = this.generation();
    const viewer = viewerId === null ? '' : inboxMember(viewerId);
    const replies = await this.perSlot<[string, string?, number?, number?]>(SCRIPTS['blog-read'], ids, 'b', [
      viewer,
      lease(generation),
      WRITE_STALE_MS,
      LEASE_MS,
    ]);
    if (!this.stillIn(generation)) return new Map(ids.map((id) => [id, { kind: 'busy' }]));
    const reads = new Map<number, BlogRead>();
    ids.forEach((id, i) => {
      const [kind, data, count, liked] = replies[i];
      if (kind === 'hit')
        reads.set(id, {
          kind,
          blog: blogOf(id, JSON.parse(data!) as StoredBlog, Number(count)),
          liked: Number(liked) === 1,
        });
      else if (kind === 'miss') reads.set(id, { kind, lease: data! });
      else reads.set(id, { kind: kind as 'gone' | 'busy' });
    });
    return reads;
  }

  /**
   * Whether a read sent in `generation` may be trusted now its answer is back: the generation is
   * still the one this process has confirmed (see Generations above).
   */
  private stillIn(generation: number | null): boolean {
    return generation !== null && this.generation() === generation;
  }

  /**
   * A read script over the entries of `ids`: one call on a single server (one command for the
   * page), one per entry on a cluster, whose scripts keep to one slot (pipelined: one round trip).
   */
  private async perSlot<Reply>(
    script: LuaScript,
    ids: readonly number[],
    kind: DebtKind,
    args: Array<string | number>,
  ): Promise<Reply[]> {
    if (ids.length === 0) return [];
    if (!this.cluster)
      return script.run<Reply[]>(
        this.redis,
        ids.flatMap((id) => this.keysOf(kind, id)),
        args,
      );
    return (await Promise.all(ids.map((id) => script.run<Reply[]>(this.redis, this.keysOf(kind, id), args)))).map(
      (replies) => replies[0],
    );
  }

  /**
   * Stores a blog read from the primary under `lease`: its row (null: deleted) and its likers
   * (null: more than LIKE_SET_MAX, nothing is kept). Whether it was stored.
   */
  async fillBlog(
    id: number,
    leaseToken: string,
    row: BlogRow | null,
    likers: readonly CachedLike[] | null,
  ): Promise<boolean> {
    const data = row === null ? '' : JSON.stringify(storedOf(row));
    const pairs = (likers ?? []).flatMap((like) => [String(like.at.getTime()), inboxMember(like.userId)]);
    const stored = await SCRIPTS['blog-fill'].run<0 | 1>(this.redis, this.keysOf('b', id), [
      leaseToken,
      data,
      ENTRY_TTL_MS,
      likers === null ? '1' : '0',
      ...pairs,
    ]);
    return stored === 1;
  }

  /**
   * A new blog's entry is stored at its publish, not at the first page that shows it (which
   * would read it back from MySQL's primary: two statements per blog, paid by the pages of a mix
   * with publishes). The publish takes the entry's lease inside its transaction, after its
   * INSERT (newBlogLease), and stores the row it inserted, without likes, after the commit
   * (storeNewBlog). Any write after the commit (a like, an edit, a delete) takes the lease away
   * before it commits, so, as with a reader's fill, nothing older than a write is stored after
   * it. null: no lease (Redis away, debts not settled yet, or the read failed): a page fills it.
   */
  async newBlogLease(blogId: number): Promise<string | null> {
    if (!this.usable()) return null;
    try {
      const read = (await this.readBlogs(null, [blogId])).get(blogId);
      return read?.kind === 'miss' ? read.lease : null;
    } catch (error) {
      this.warn(`taking the cache lease of new blog ${blogId} failed; its first page will fill it`, error);
      return null;
    }
  }

  /** After the publish's commit: the new blog stored under the lease newBlogLease gave, unless a write came since. */
  async storeNewBlog(row: BlogRow, leaseToken: string): Promise<void> {
    await this.fillBlog(Number(row.id), leaseToken, row, []).catch((error: unknown) =>
      this.warn(`storing new blog ${row.id} in the cache failed; its first page will fill it`, error),
    );
  }

  /**
   * The first `limit` likers of a blog from its like set (Blog.likers' first page), earliest
   * first, as keyset positions; null when the set is not filled or a write is in flight.
   */
  async firstLikers(blogId: number, limit: number): Promise<KeysetPosition[] | null> {
    const generation = this.generation();
    if (generation === null) return null;
    const flat = await SCRIPTS['likers-read'].run<string[] | 0>(this.redis, this.keysOf('b', blogId), [
      Math.max(limit, 1),
      generation,
    ]);
    if (!Array.isArray(flat) || !this.stillIn(generation)) return null;
    const likers: KeysetPosition[] = [];
    for (let i = 0; i < flat.length; i += 2) likers.push({ id: Number(flat[i]), time: Number(flat[i + 1]) });
    return limit === 0 ? [] : likers;
  }

  /** The cached nickName and icon of each user (one round trip). */
  async readUsers(ids: readonly number[]): Promise<Map<number, UserRead>> {
    const generation = this.generation();
    const replies = await this.perSlot<[string, string?]>(SCRIPTS['user-read'], ids, 'u', [
      lease(generation),
      WRITE_STALE_MS,
      LEASE_MS,
    ]);
    if (!this.stillIn(generation)) return new Map(ids.map((id) => [id, { kind: 'busy' }]));
    const reads = new Map<number, UserRead>();
    ids.forEach((id, i) => {
      const [kind, data] = replies[i];
      if (kind === 'hit') {
        const stored = JSON.parse(data!) as { n: string; i: string | null };
        reads.set(id, { kind, user: User.partial(id, stored.n, stored.i) });
      } else if (kind === 'miss') reads.set(id, { kind, lease: data! });
      else reads.set(id, { kind: 'busy' });
    });
    return reads;
  }

  async fillUser(user: User, leaseToken: string): Promise<boolean> {
    const data = JSON.stringify({ n: user.nickName, i: user.icon });
    return (
      (await SCRIPTS['user-fill'].run<0 | 1>(this.redis, this.keysOf('u', user.dbId), [
        leaseToken,
        data,
        ENTRY_TTL_MS,
      ])) === 1
    );
  }

  // ---------------------------------------------------------------------------------------
  // Writes

  async changing(sql: Sql, kind: DebtKind, id: number): Promise<void> {
    if (redisAvailable(this.redis)) {
      try {
        await SCRIPTS.lock.run(this.redis, this.keysOf(kind, id), [WRITE_STALE_MS]);
        return;
      } catch (error) {
        this.warn(`locking the cached copy of ${kind === 'b' ? 'blog' : 'user'} ${id} failed; recording a debt`, error);
      }
    }
    this.trusted = false;
    await this.store.addDebt(sql, kind, id);
  }

  async changed(kind: DebtKind, id: number): Promise<void> {
    // A lock that stays (Redis away now) keeps readers on MySQL until it is stale: never wrong.
    if (!redisAvailable(this.redis)) return;
    await this.redis
      .del(...this.keysOf(kind, id))
      .catch((error: unknown) => this.warn(`unlocking the cached copy of ${kind} ${id} failed`, error));
  }

  async likeChanging(sql: Sql, blogId: number, userId: number, liked: boolean, at: Date): Promise<string | null> {
    if (redisAvailable(this.redis)) {
      const token = uniqueToken();
      try {
        await SCRIPTS['like-mark'].run(this.redis, this.keysOf('b', blogId), [
          token,
          inboxMember(userId),
          at.getTime(),
          liked ? '1' : '0',
          WRITE_STALE_MS,
        ]);
        return token;
      } catch (error) {
        this.warn(`marking a like of blog ${blogId} in the cache failed; recording a debt`, error);
      }
    }
    this.trusted = false;
    await this.store.addDebt(sql, 'b', blogId);
    return null;
  }

  async likeChanged(blogId: number, token: string | null, committed: boolean): Promise<void> {
    if (token === null) return;
    await SCRIPTS['like-done']
      .run(this.redis, this.keysOf('b', blogId), [token, committed ? '1' : '0'])
      .catch((error: unknown) => this.warn(`clearing the like mark of blog ${blogId} failed`, error));
  }
}

/**
 * A token that names one fill or one like mark: unique, not secret (only this service's scripts
 * compare it with the one an entry holds). A random part per process and a counter: a
 * `randomBytes` per read, a synchronous call into OpenSSL, was 3% of a hydrated feed page's CPU
 * (a profile of bench:feed's GraphQL page).
 */
const TOKEN_PREFIX = `${randomBytes(9).toString('base64url')}.`;
let tokensGiven = 0;

function uniqueToken(): string {
  tokensGiven += 1;
  return TOKEN_PREFIX + tokensGiven.toString(36);
}

/**
 * A lease token: the generation its reader reads in, then a unique token (scripts/includes/cache).
 * Without a generation (none confirmed: the read is not trusted anyway) it names none, and what
 * its fill stores no read trusts.
 */
function lease(generation: number | null): string {
  return `${generation ?? 'none'}.${uniqueToken()}`;
}

function storedOf(row: BlogRow): StoredBlog {
  return {
    u: Number(row.user_id),
    t: row.title,
    c: row.content,
    i: row.images,
    a: row.created_at.getTime(),
    p: row.pushed ? 1 : 0,
    e: row.edited_at ? row.edited_at.getTime() : null,
  };
}

function blogOf(id: number, stored: StoredBlog, likeCount: number): Blog {
  return Blog.fromRow({
    id,
    user_id: stored.u,
    title: stored.t,
    content: stored.c,
    images: stored.i,
    liked: likeCount,
    created_at: new Date(stored.a),
    pushed: stored.p,
    edited_at: stored.e === null ? null : new Date(stored.e),
  });
}
