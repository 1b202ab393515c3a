/**
 * The feed's reads of the database (MySQL, or the embedded SQLite), the truth that inboxes
 * cache. The feed's followees are the reader's follows that are not muted (tb_follow.muted = 0,
 * ix_follow_feed): every read of followees here takes only those, so a muted followee is not
 * followed as far as the feed is concerned, while counts and social lists keep the follow. Every page query answers in canonical order (created_at DESC, id DESC) after the same
 * positions as an inbox, so a page can come from either, or start in one and continue in the
 * other.
 */
import DataLoader from 'dataloader';
import type { Database, Sql } from '../db/database';
import { compareCanonical, FeedPosition, ScoredId, START } from '../kernel/pagination/cursor';
import { DeepenedRead } from '../kernel/pagination/deepened';
import type { AuthorInFlight } from './inbox';

type Row = { id: string; created_at: Date };
const entryOf = (row: Row): ScoredId => ({ id: Number(row.id), score: row.created_at.getTime() });

/** A blog that may go into an inbox, and whether it was fanned out (tb_blog.pushed). */
export interface FeedCandidate extends ScoredId {
  pushed: boolean;
}

type CandidateRow = Row & { pushed: number | boolean };
const candidateOf = (row: CandidateRow): FeedCandidate => ({ ...entryOf(row), pushed: Boolean(Number(row.pushed)) });

/** One consistent read of a reader's feed, for a rebuild (FeedService turns it into what the inbox gets). */
export interface TruthSnapshot {
  version: number;
  followeeIds: number[];
  /** Muted follows: not followees, but MySQL lists these readers among the authors' followers. */
  mutedIds: number[];
  /** The newest entries of the feed, at most FEED_MAX_ITEMS. */
  entries: FeedCandidate[];
  /** Whether `entries` is the whole feed. */
  complete: boolean;
}

/**
 * The SQL form of a position, for a table aliased `alias` with created_at and id: a keyset
 * condition when the position names its blog (no OFFSET: a delete or a late arrival cannot shift
 * it), else the legacy `created_at <= ?` with `skip` rows to pass over.
 */
export function positionSql(from: FeedPosition, alias = ''): { where: string; params: unknown[]; skip: number } {
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  if (from.maxScore === null) return { where: '', params: [], skip: from.offset };
  const at = new Date(from.maxScore);
  if (from.afterId !== null) {
    return {
      where: `AND (${column('created_at')} < ? OR (${column('created_at')} = ? AND ${column('id')} < ?))`,
      params: [at, at, from.afterId],
      skip: 0,
    };
  }
  return { where: `AND ${column('created_at')} <= ?`, params: [at], skip: from.offset };
}

/**
 * Followees up to which a pull page gives every followee a branch. Each branch is a statement
 * for MariaDB to parse and plan: about 3 ms for 100 branches, 25 ms for 500 (measured on the
 * 2-core test machine; the planning grows faster than the count), while picking the followees
 * that can reach the page (the heads statement) costs one index dive per followee, about 2 ms for
 * 600. Above this many followees the heads statement runs first.
 */
export const MANY_FOLLOWEES = 100;

/**
 * Most branches in one UNION ALL on SQLite, which refuses a compound SELECT of more than 500
 * terms (SQLITE_MAX_COMPOUND_SELECT): a page there that could need more (skip + limit above it,
 * on the heads path) is read with the join. MariaDB and MySQL have no such limit: a rebuild's
 * snapshot, a page of FEED_MAX_ITEMS + 1, stays bounded ranges there.
 */
export const MOST_BRANCHES = 500;

/**
 * The index range of one author's blogs (table alias `alias`) that a page may use: after `from`
 * (without its skip), at or above `minScore`, and at or above `floor` in canonical order.
 * A keyset position also gets the `created_at <= ?` it implies, and a floor its
 * `created_at >= ?`: SQLite takes only such plain comparisons, not the ORs, as the bounds of an
 * index range (MariaDB takes either).
 */
function rangeSql(
  from: FeedPosition,
  minScore: number | null,
  floor: ScoredId | null,
  alias = '',
): { where: string; params: unknown[] } {
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  const position = positionSql(from, alias);
  const where = [position.where];
  const params = [...position.params];
  if (from.maxScore !== null && from.afterId !== null) {
    where.push(`AND ${column('created_at')} <= ?`);
    params.push(new Date(from.maxScore));
  }
  if (minScore !== null) {
    where.push(`AND ${column('created_at')} >= ?`);
    params.push(new Date(minScore));
  }
  if (floor !== null) {
    const at = new Date(floor.score);
    where.push(
      `AND ${column('created_at')} >= ? AND (${column('created_at')} > ? OR (${column('created_at')} = ? AND ${column('id')} >= ?))`,
    );
    params.push(at, at, at, floor.id);
  }
  return { where: where.join(' '), params };
}

/**
 * The SQL of "newer than `before`" in canonical order, for a table aliased `alias`: the keyset
 * condition, with the plain `created_at >= ?` it implies (SQLite bounds an index range only by
 * such plain comparisons).
 */
function newerSql(before: ScoredId, alias = ''): { where: string; params: unknown[] } {
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  const at = new Date(before.score);
  return {
    where: `AND ${column('created_at')} >= ? AND (${column('created_at')} > ? OR (${column('created_at')} = ? AND ${column('id')} > ?))`,
    params: [at, at, at, before.id],
  };
}

/** The Redis generation's row in MySQL (feed/generation.ts). */
export interface GenerationRecord {
  generation(): Promise<{ epoch: number; identity: string }>;
  /** Raises the generation by one and records `to`, if the row still says `from`; false when another process came first. */
  advanceGeneration(from: string, to: string): Promise<boolean>;
}

/** A follow change in the outbox (tb_feed_change), waiting to be applied to its reader's inbox. */
export interface FollowChangeRow {
  id: number;
  readerId: number;
  authorId: number;
  follow: boolean;
  version: number;
}

type ChangeRow = { id: string; reader_id: string; author_id: string; follow: number | boolean; version: string };
const changeOf = (row: ChangeRow): FollowChangeRow => ({
  id: Number(row.id),
  readerId: Number(row.reader_id),
  authorId: Number(row.author_id),
  follow: Boolean(Number(row.follow)),
  version: Number(row.version),
});

/** One author's range in a union of ranges: their blogs at or above `minScore` (all when null). */
interface AuthorRange {
  authorId: number | string;
  minScore: number | null;
}

/** A call of hasFewerFollowers: its author, and the publishing transaction it was asked from. */
interface FollowerCountRead {
  sql: Sql;
  authorId: number;
}

/**
 * Where a read may run. Page reads may lag (`db.lagging()`: a replica when one is configured)
 * unless they are `fresh`: a read that stands in for blogs not yet in an inbox (the span above
 * the watermark, recent blogs of big authors, a rebuild's snapshot) must not miss a committed
 * blog, so it goes to the primary. What rebuilds and fan-out read, the follow checks and the live
 * feed's check are the primary's too.
 */
export class FeedStore implements GenerationRecord {
  /** hasFewerFollowers' calls, batched per turn of the event loop (setImmediate), never cached. */
  private readonly followerCounts = new DataLoader<FollowerCountRead, number>(
    (calls) => this.readFollowerCounts(calls),
    { cache: false, batchScheduleFn: (dispatch) => setImmediate(dispatch) },
  );

  constructor(private readonly db: Database) {}

  private reads(fresh: boolean): Sql {
    return fresh ? this.db : this.db.lagging();
  }

  /**
   * The pull model, the cold path and the span above the fan-out watermark: the first `limit`
   * live blogs after `from` among the blogs of everyone the reader follows now, with a score of
   * at least `minScore` when given.
   *
   * Read so that the cost does not grow with history. A join of tb_follow to tb_blog would sort
   * every live blog of every followee for each page (47,000 index entries for a page of 21, for
   * a reader of 20 authors with 2,500 blogs each): MariaDB reads a joined table's whole
   * (user_id, deleted_at) prefix, because only a statement's own constants, not values from
   * another table, bound an index range there. So, with k = skip + limit (what the page uses):
   *
   * 1. The followee list (one range of uq_follow_pair, at most MANY_FOLLOWEES + 1 rows).
   * 2. Up to MANY_FOLLOWEES followees: a UNION ALL of one branch per followee, each an index
   *    range of (user_id, deleted_at, created_at, id) after the position that stops after k
   *    rows, merged by the outer ORDER BY ... LIMIT skip, limit. At most followees x k entries,
   *    wherever the position lies.
   * 3. More followees: first the heads, each followee's newest live blog after the position
   *    (one index dive each), and the k newest of them. A followee whose head is not among
   *    these k cannot reach the page, since the k heads all come before every blog of theirs;
   *    so the union has at most k branches. The k-th head is a floor: the page lies at or above
   *    it, and each branch stops there too. A dive is a correlated subquery, which MariaDB
   *    starts at the followee's newest blog: it steps over the blogs above the position, so
   *    this path costs followees + scroll depth (not history).
   *
   * The statements see the database at different moments. A follow or a publish between them
   * shows on the next page, as if it had committed just after this one; an unfollow's blogs on
   * this page are hidden by followFeed, as for any entry that outlives its reason. A delete
   * between the heads and the union can take a head away and leave less than a page above the
   * floor: then fewer than `limit` rows come back although there were k heads, and the page is
   * read again with the join, which is correct at any moment.
   */
  async feedPage(
    readerId: number,
    from: FeedPosition,
    limit: number,
    minScore: number | null = null,
    fresh = false,
  ): Promise<ScoredId[]> {
    return this.pageOn(this.reads(fresh), readerId, from, limit, minScore);
  }

  /** feedPage on `sql`: a replica, the primary, or a transaction's connection (a rebuild's snapshot). */
  private async pageOn(
    sql: Sql,
    readerId: number,
    from: FeedPosition,
    limit: number,
    minScore: number | null,
  ): Promise<ScoredId[]> {
    if (limit === 0) return [];
    const { skip } = positionSql(from);
    const wanted = skip + limit;
    const followees = await sql.select<{ follow_user_id: string }>(
      'SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND muted = 0 LIMIT ?',
      [readerId, MANY_FOLLOWEES + 1],
    );
    if (followees.length === 0) return [];
    if (followees.length <= MANY_FOLLOWEES) {
      return this.mergedRanges(
        sql,
        followees.map((row) => ({ authorId: row.follow_user_id, minScore })),
        from,
        limit,
        null,
      );
    }
    if (this.db.dialect === 'sqlite' && wanted > MOST_BRANCHES)
      return this.joinedPage(sql, readerId, from, limit, minScore);
    // minScore applies to the heads, not inside the dives: a dive that looked for a blog at or
    // above it would step through the whole history of a followee who has none. The LIMIT of h
    // only keeps MariaDB from merging h into the join, where it would run each dive twice (once
    // for the primary key lookup, once to check it).
    const after = rangeSql(from, null, null, 'x');
    const heads = await sql.select<Row & { user_id: string }>(
      `SELECT h.user_id, b.id, b.created_at FROM (
         SELECT f.follow_user_id AS user_id,
           (SELECT x.id FROM tb_blog x WHERE x.user_id = f.follow_user_id AND x.deleted_at IS NULL ${after.where}
            ORDER BY x.created_at DESC, x.id DESC LIMIT 1) AS head_id
         FROM tb_follow f WHERE f.user_id = ? AND f.muted = 0 LIMIT 4294967295) AS h
       JOIN tb_blog b ON b.id = h.head_id
       ${minScore === null ? '' : 'WHERE b.created_at >= ?'} ORDER BY b.created_at DESC, b.id DESC LIMIT ?`,
      [...after.params, readerId, ...(minScore === null ? [] : [new Date(minScore)]), wanted],
    );
    if (heads.length === 0) return [];
    const floor = heads.length === wanted ? entryOf(heads[heads.length - 1]) : null;
    const page = await this.mergedRanges(
      sql,
      heads.map((head) => ({ authorId: head.user_id, minScore })),
      from,
      limit,
      floor,
    );
    if (floor !== null && page.length < limit) return this.joinedPage(sql, readerId, from, limit, minScore);
    return page;
  }

  /**
   * Pages up (followFeed's last/before, followFeedNewCount, a resumed followFeedAdded): the
   * first `limit` live blogs of the reader's followees *newer* than `before` (the keyset point
   * (score, blog id) of a cursor), the closest to it first (ascending canonical order).
   *
   * Bounded as feedPage is, mirrored: up to MANY_FOLLOWEES followees, a UNION ALL of one index
   * range per followee, each starting at `before` and stopping after `limit` rows (ascending
   * on the same index (user_id, deleted_at, created_at, id)). More followees: first the heads,
   * each followee's oldest live blog newer than `before` (one index range of one row each, in
   * statements of MANY_FOLLOWEES branches), and the `limit` oldest of them; a followee whose
   * head is not among these cannot reach the page, and the `limit`-th head is its ceiling. A delete between the two statements that leaves less than
   * `limit` under the ceiling makes the page read again with the join, as in feedPage. So the
   * cost grows with `limit` and the followees, never with how far back `before` lies.
   * On the primary when `fresh`: these are the newest blogs, those a replica may lack.
   */
  async feedNewer(readerId: number, before: ScoredId, limit: number, fresh = true): Promise<ScoredId[]> {
    if (limit === 0) return [];
    const sql = this.reads(fresh);
    const followees = await sql.select<{ follow_user_id: string }>(
      'SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND muted = 0 LIMIT ?',
      [readerId, MANY_FOLLOWEES + 1],
    );
    if (followees.length === 0) return [];
    if (followees.length <= MANY_FOLLOWEES)
      return this.newerRanges(
        sql,
        followees.map((row) => row.follow_user_id),
        before,
        limit,
        null,
      );
    // The heads: each followee's oldest live blog newer than `before`, by one index range each
    // with the followee as a constant (a correlated dive would walk each followee's history up
    // from its oldest blog on MariaDB), MANY_FOLLOWEES branches a statement.
    const everyone = await sql.select<{ follow_user_id: string }>(
      'SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND muted = 0',
      [readerId],
    );
    const newer = newerSql(before);
    const heads: Array<Row & { user_id: string }> = [];
    for (let start = 0; start < everyone.length; start += MANY_FOLLOWEES) {
      const chunk = everyone.slice(start, start + MANY_FOLLOWEES).map((row) => row.follow_user_id);
      const term = (i: number) =>
        this.db.unionTerm(
          `SELECT user_id, id, created_at FROM tb_blog WHERE user_id = ? AND deleted_at IS NULL ${newer.where} ORDER BY created_at ASC, id ASC LIMIT 1`,
          'user_id, id, created_at',
          `h${i}`,
        );
      heads.push(
        ...(await sql.select<Row & { user_id: string }>(
          `SELECT user_id, id, created_at FROM (${chunk.map((_, i) => term(i)).join(' UNION ALL ')}) AS heads ORDER BY created_at ASC, id ASC LIMIT ?`,
          [...chunk.flatMap((authorId) => [authorId, ...newer.params]), limit],
        )),
      );
    }
    heads.sort((a, b) => compareCanonical(entryOf(b), entryOf(a)));
    heads.splice(limit);
    if (heads.length === 0) return [];
    const ceiling = heads.length === limit ? entryOf(heads[heads.length - 1]) : null;
    const page = await this.newerRanges(
      sql,
      heads.map((head) => head.user_id),
      before,
      limit,
      ceiling,
    );
    if (ceiling === null || page.length >= limit) return page;
    const position = newerSql(before, 'b');
    const rows = await sql.select<Row>(
      `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
       WHERE f.user_id = ? AND f.muted = 0 AND b.deleted_at IS NULL ${position.where}
       ORDER BY b.created_at ASC, b.id ASC LIMIT ?`,
      [readerId, ...position.params, limit],
    );
    return rows.map(entryOf);
  }

  /** The first `limit` blogs newer than `before` among these authors, closest first, each range stopping at `ceiling`. One statement. */
  private async newerRanges(
    sql: Sql,
    authorIds: ReadonlyArray<number | string>,
    before: ScoredId,
    limit: number,
    ceiling: ScoredId | null,
  ): Promise<ScoredId[]> {
    const range = newerSql(before);
    const where = [range.where];
    const params = [...range.params];
    if (ceiling !== null) {
      const at = new Date(ceiling.score);
      where.push('AND created_at <= ? AND (created_at < ? OR (created_at = ? AND id <= ?))');
      params.push(at, at, at, ceiling.id);
    }
    const term = (i: number) =>
      this.db.unionTerm(
        `SELECT id, created_at FROM tb_blog WHERE user_id = ? AND deleted_at IS NULL ${where.join(' ')} ORDER BY created_at ASC, id ASC LIMIT ?`,
        'id, created_at',
        `n${i}`,
      );
    const rows = await sql.select<Row>(
      `SELECT id, created_at FROM (${authorIds.map((_, i) => term(i)).join(' UNION ALL ')}) AS page
       ORDER BY created_at ASC, id ASC LIMIT ?`,
      [...authorIds.flatMap((authorId) => [authorId, ...params, limit]), limit],
    );
    return rows.map(entryOf);
  }

  /**
   * The span above the watermark, scoped: the first `limit` live blogs after `from` of the
   * reader's followees whose fan-out is in flight, each at or above its lowest score in flight.
   * On the primary: these are the blogs that may be committed and not yet in the inbox.
   */
  async inFlightBlogs(authors: readonly AuthorInFlight[], from: FeedPosition, limit: number): Promise<ScoredId[]> {
    if (authors.length === 0 || limit === 0) return [];
    return this.mergedRanges(
      this.db,
      authors.map((author) => ({ authorId: author.authorId, minScore: author.score })),
      from,
      limit,
      null,
    );
  }

  /**
   * The first `limit` blogs after `from` (skipping its legacy offset) among these authors'
   * ranges, each range stopping after skip + limit rows, at its author's `minScore` and at
   * `floor`. One statement.
   */
  private async mergedRanges(
    sql: Sql,
    ranges: readonly AuthorRange[],
    from: FeedPosition,
    limit: number,
    floor: ScoredId | null,
  ): Promise<ScoredId[]> {
    const { skip } = positionSql(from);
    const branches = ranges.map((range) => {
      const where = rangeSql(from, range.minScore, floor);
      return { where: where.where, params: [range.authorId, ...where.params, skip + limit] };
    });
    const terms = branches.map((branch, i) => this.authorRangeTerm('id, created_at', branch.where, i));
    const rows = await sql.select<Row>(
      `SELECT id, created_at FROM (${terms.join(' UNION ALL ')}) AS page
       ORDER BY created_at DESC, id DESC LIMIT ?, ?`,
      [...branches.flatMap((branch) => branch.params), skip, limit],
    );
    return rows.map(entryOf);
  }

  /** feedPage as one join of tb_follow to tb_blog: correct at any moment, but it reads every live blog of every followee. */
  private async joinedPage(
    sql: Sql,
    readerId: number,
    from: FeedPosition,
    limit: number,
    minScore: number | null,
  ): Promise<ScoredId[]> {
    const position = positionSql(from, 'b');
    const rows = await sql.select<Row>(
      `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
       WHERE f.user_id = ? AND f.muted = 0 AND b.deleted_at IS NULL ${position.where} ${minScore === null ? '' : 'AND b.created_at >= ?'}
       ORDER BY b.created_at DESC, b.id DESC LIMIT ?, ?`,
      [readerId, ...position.params, ...(minScore === null ? [] : [new Date(minScore)]), position.skip, limit],
    );
    return rows.map(entryOf);
  }

  /**
   * What a rebuild copies, as one consistent view (a REPEATABLE READ transaction on the primary:
   * every read sees the same commits): the reader's feed_version, followees and newest feed
   * entries, with whether each was fanned out. The entries are FEED_MAX_ITEMS + 1 read in a few
   * rounds of bounded index ranges (newestOf), or past MANY_FOLLOWEES as a pull page of that
   * size is (the heads first), never by a join that reads every live blog of every followee: a
   * rebuild costs MySQL at most what that page costs, whatever the followees' history, and
   * usually a few times FEED_MAX_ITEMS rows.
   */
  async snapshot(readerId: number, maxItems: number): Promise<TruthSnapshot> {
    return this.db.transaction(async (sql) => {
      const { version, followeeIds, mutedIds } = await this.versionAndFollowees(sql, readerId);
      const newest =
        followeeIds.length <= MANY_FOLLOWEES
          ? await this.newestOf(sql, followeeIds, maxItems + 1)
          : await this.pageOn(sql, readerId, START, maxItems + 1, null);
      const pushed = await this.pushedAmong(sql, newest.slice(0, maxItems));
      return {
        version,
        followeeIds,
        mutedIds,
        entries: newest.slice(0, maxItems).map((entry) => ({ ...entry, pushed: pushed.has(entry.id) })),
        complete: newest.length <= maxItems,
      };
    }, 'REPEATABLE READ');
  }

  /**
   * The reader's feed_version, followees (not muted) and muted follows in one statement, a UNION
   * ALL of the user's row (by primary key; none for an unknown reader: version 0) and its follows
   * (on ix_follow_feed). One round trip, where two cost a rebuild a seventh of its statements: after
   * a Redis loss every active reader rebuilds, and each statement is a socket write that wakes a
   * MariaDB thread (bench:mixed, "Redis lost").
   */
  private async versionAndFollowees(
    sql: Sql,
    readerId: number,
  ): Promise<{ version: number; followeeIds: number[]; mutedIds: number[] }> {
    const rows = await sql.select<{ kind: string; num: string }>(
      `SELECT 'version' AS kind, feed_version AS num FROM tb_user WHERE id = ?
       UNION ALL SELECT CASE WHEN muted = 0 THEN 'followee' ELSE 'muted' END, follow_user_id FROM tb_follow WHERE user_id = ?`,
      [readerId, readerId],
    );
    const version = rows.find((row) => row.kind === 'version');
    const idsOf = (kind: string) => rows.filter((row) => row.kind === kind).map((row) => Number(row.num));
    return { version: Number(version?.num ?? 0), followeeIds: idsOf('followee'), mutedIds: idsOf('muted') };
  }

  /**
   * The newest `wanted` live blogs of these authors, in a few statements of bounded index ranges
   * (kernel/pagination/deepened.ts): each author's newest ceil(wanted / authors) first, then more
   * of those that may hold more of the answer, down to the `wanted`-th read so far. A few times
   * `wanted` rows (2,578 handler reads a snapshot on bench:mixed's graph, against 9,066), where
   * one round of `wanted` per author read up to authors x wanted; never more than that round,
   * per author.
   */
  private async newestOf(sql: Sql, authorIds: readonly number[], wanted: number): Promise<ScoredId[]> {
    const read = new DeepenedRead(wanted, authorIds);
    for (let round = read.next(); round.asks.length > 0; round = read.next())
      read.answer(round.asks, await this.authorRanges(sql, round.asks, round.floor));
    return read.newest();
  }

  /**
   * One statement: for each author its first `limit` live blogs after `after` (null: from the
   * top) and at or above `floor`, by author (every author asked is in the map). Each term is an
   * index range of ix_blog_user_live, which covers the columns read.
   */
  private async authorRanges(
    sql: Sql,
    asks: ReadonlyArray<{ authorId: number; after: ScoredId | null; limit: number }>,
    floor: ScoredId | null,
  ): Promise<Map<number, ScoredId[]>> {
    const terms = asks.map((ask, i) => {
      const from = ask.after === null ? START : { maxScore: ask.after.score, offset: 0, afterId: ask.after.id };
      const range = rangeSql(from, null, floor);
      return {
        sql: this.authorRangeTerm('user_id, id, created_at', range.where, i),
        params: [ask.authorId, ...range.params, ask.limit],
      };
    });
    const rows = await sql.select<Row & { user_id: string }>(
      terms.map((term) => term.sql).join(' UNION ALL '),
      terms.flatMap((term) => term.params),
    );
    const byAuthor = new Map<number, ScoredId[]>(asks.map((ask) => [ask.authorId, []]));
    for (const row of rows) byAuthor.get(Number(row.user_id))?.push(entryOf(row));
    for (const items of byAuthor.values()) items.sort(compareCanonical);
    return byAuthor;
  }

  /**
   * One author's live blogs in canonical order (newest first) that match `where`, at most a
   * LIMIT: a term of a UNION ALL, in the form its dialect accepts with an ORDER BY and LIMIT of
   * its own (database.ts). Its parameters: the author, `where`'s, the limit. An index range of
   * ix_blog_user_live, which covers user_id, id and created_at.
   */
  private authorRangeTerm(columns: string, where: string, i: number): string {
    return this.db.unionTerm(
      `SELECT ${columns} FROM tb_blog WHERE user_id = ? AND deleted_at IS NULL ${where} ORDER BY created_at DESC, id DESC LIMIT ?`,
      columns,
      `b${i}`,
    );
  }

  /** Which of these blogs were fanned out (tb_blog.pushed), by primary key. */
  private async pushedAmong(sql: Sql, entries: readonly ScoredId[]): Promise<Set<number>> {
    if (entries.length === 0) return new Set();
    const rows = await sql.select<{ id: string }>('SELECT id FROM tb_blog WHERE id IN (?) AND pushed', [
      entries.map((entry) => entry.id),
    ]);
    return new Set(rows.map((row) => Number(row.id)));
  }

  /** The database's clock in epoch ms: the one clock that rebuilds and fan-out chunks compare. */
  now(): Promise<number> {
    return this.db.now();
  }

  /**
   * The reader's big followees (hybrid: authors with blogs that were not fanned out), with the
   * reader's follow version, in one statement: one consistent read, so the list is the list of
   * that version (feed/big-followees.ts keeps it under that version).
   *
   * Read on the primary: a list read on a lagging replica could miss an author who just became
   * big and would then be kept until the reader's next follow change. Only a page that finds no
   * kept list reads it.
   */
  async pulledFollowees(readerId: number): Promise<{ version: number; authorIds: number[] }> {
    const rows = await this.db.select<{ version: string; id: string | null }>(
      `SELECT r.feed_version AS version, big.id FROM tb_user r
       LEFT JOIN (SELECT u.id FROM tb_follow f JOIN tb_user u ON u.id = f.follow_user_id
                  WHERE f.user_id = ? AND f.muted = 0 AND u.has_pulled_blogs) big ON TRUE
       WHERE r.id = ?`,
      [readerId, readerId],
    );
    return {
      version: Number(rows[0]?.version ?? 0),
      authorIds: rows.filter((row) => row.id !== null).map((row) => Number(row.id)),
    };
  }

  /**
   * The first `limit` not-fanned-out blogs of these authors after `from`. One statement: a
   * UNION ALL of one index range scan per author, each stopping after `limit` rows, instead of
   * sorting every blog of every big author. `fresh`: on the primary (the page is near the top of
   * the feed, where a blog may be younger than a replica's lag).
   */
  async pulledBlogs(
    authorIds: readonly number[],
    from: FeedPosition,
    limit: number,
    fresh = true,
  ): Promise<ScoredId[]> {
    if (authorIds.length === 0 || limit === 0) return [];
    const position = positionSql({ ...from, offset: 0 });
    const branch = `(SELECT id, created_at FROM tb_blog
       WHERE user_id = ? AND NOT pushed AND deleted_at IS NULL ${position.where}
       ORDER BY created_at DESC, id DESC LIMIT ?)`;
    const params = authorIds.flatMap((id) => [id, ...position.params, limit]);
    const rows = await this.reads(fresh).select<Row>(authorIds.map(() => branch).join(' UNION ALL '), params);
    return rows.map(entryOf);
  }

  /**
   * Whether an author's new blogs go into inboxes in the hybrid model (fewer than
   * `bigAuthorFollowers` followers), asked from inside the publishing transaction `sql`.
   *
   * The calls of one turn of the event loop share one statement: under load the publishes of a
   * turn start together, and each statement costs the API about 96 µs of CPU and wakes a MariaDB
   * thread (docs/benchmarks.md, machine AC). A call alone in its turn reads in its transaction, as
   * it always did; calls together read in one autocommit statement beside their transactions.
   * Either is right: the count only decides what a blog costs (fanned out now, or pulled by its
   * readers), never what a feed shows. The decision is stored with the blog (tb_blog.pushed),
   * and readers merge every blog that was not fanned out, whatever count it was decided on.
   */
  async hasFewerFollowers(sql: Sql, authorId: number, bigAuthorFollowers: number): Promise<boolean> {
    return (await this.followerCounts.load({ sql, authorId })) < bigAuthorFollowers;
  }

  /** A turn's hasFewerFollowers calls: in the one call's transaction, or all in one statement. */
  private async readFollowerCounts(calls: readonly FollowerCountRead[]): Promise<number[]> {
    const authorIds = [...new Set(calls.map((call) => call.authorId))];
    const sql = calls.length === 1 ? calls[0].sql : this.db;
    const rows = await sql.select<{ id: string; follower_count: number }>(
      `SELECT id, follower_count FROM tb_user WHERE id IN (${authorIds.map(() => '?').join(', ')})`,
      authorIds,
    );
    const counts = new Map(rows.map((row) => [Number(row.id), Number(row.follower_count)]));
    return calls.map((call) => counts.get(call.authorId) ?? 0);
  }

  /** Records that an author has blogs readers must pull (hybrid); true when that is new. */
  async markHasPulledBlogs(sql: Sql, authorId: number): Promise<boolean> {
    const { affectedRows } = await sql.write(
      'UPDATE tb_user SET has_pulled_blogs = TRUE WHERE id = ? AND NOT has_pulled_blogs',
      [authorId],
    );
    return affectedRows > 0;
  }

  /** An author's newest live blogs (a follow's backfill). */
  async newestOfAuthor(authorId: number, limit: number): Promise<FeedCandidate[]> {
    const rows = await this.db.select<CandidateRow>(
      `SELECT id, created_at, pushed FROM tb_blog WHERE user_id = ? AND deleted_at IS NULL
       ORDER BY created_at DESC, id DESC LIMIT ?`,
      [authorId, limit],
    );
    return rows.map(candidateOf);
  }

  /** Which of `blogIds` were written by `authorId` (an unfollow's cleanup). */
  async idsOfAuthorAmong(authorId: number, blogIds: readonly number[]): Promise<number[]> {
    if (blogIds.length === 0) return [];
    const rows = await this.db.select<{ id: string }>('SELECT id FROM tb_blog WHERE user_id = ? AND id IN (?)', [
      authorId,
      blogIds,
    ]);
    return rows.map((row) => Number(row.id));
  }

  /** Which of `blogIds` are deleted now (a follow's check after its copy). */
  async deletedAmong(blogIds: readonly number[]): Promise<number[]> {
    if (blogIds.length === 0) return [];
    const rows = await this.db.select<{ id: string }>(
      'SELECT id FROM tb_blog WHERE id IN (?) AND deleted_at IS NOT NULL',
      [blogIds],
    );
    return rows.map((row) => Number(row.id));
  }

  /**
   * Which of `readerIds` follow `authorId` now (a delivered chunk's check). A chunk's readers are
   * a range of follower ids: one index range scan of (follow_user_id, user_id), not a lookup each.
   */
  async followersAmong(authorId: number, readerIds: readonly number[]): Promise<Set<number>> {
    if (readerIds.length === 0) return new Set();
    const rows = await this.db.select<{ user_id: string }>(
      'SELECT user_id FROM tb_follow WHERE follow_user_id = ? AND user_id BETWEEN ? AND ? AND muted = 0',
      [authorId, Math.min(...readerIds), Math.max(...readerIds)],
    );
    return new Set(rows.map((row) => Number(row.user_id)));
  }

  /**
   * For readers who seem not to follow `authorId`: whether they do, with their feed_version,
   * read in one statement so that the two agree.
   */
  async followStates(
    authorId: number,
    readerIds: readonly number[],
  ): Promise<Array<{ readerId: number; follows: boolean; version: number }>> {
    if (readerIds.length === 0) return [];
    const rows = await this.db.select<{ id: string; feed_version: string; follows: number | string }>(
      `SELECT u.id, u.feed_version,
         EXISTS(SELECT 1 FROM tb_follow f WHERE f.user_id = u.id AND f.follow_user_id = ? AND f.muted = 0) AS follows
       FROM tb_user u WHERE u.id IN (?)`,
      [authorId, readerIds],
    );
    return rows.map((row) => ({
      readerId: Number(row.id),
      follows: Number(row.follows) === 1,
      version: Number(row.feed_version),
    }));
  }
  /** Which of these viewers see a blog now (it is live, and they follow its author): the check of a live event before it is shown. */
  async viewersSeeing(blogId: number, viewerIds: readonly number[]): Promise<Set<number>> {
    const rows = await this.db.select<{ user_id: string }>(
      `SELECT f.user_id FROM tb_blog b JOIN tb_follow f ON f.follow_user_id = b.user_id
       WHERE b.id = ? AND b.deleted_at IS NULL AND f.muted = 0 AND f.user_id IN (?)`,
      [blogId, viewerIds],
    );
    return new Set(rows.map((row) => Number(row.user_id)));
  }

  /**
   * Which of these blogs the viewer sees now (live, by an author the viewer follows, unmuted): the check
   * of a removal event before it is told. One statement, on the primary.
   */
  async visibleAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>> {
    if (blogIds.length === 0) return new Set();
    const rows = await this.db.select<{ id: string }>(
      `SELECT b.id FROM tb_blog b JOIN tb_follow f ON f.follow_user_id = b.user_id AND f.user_id = ? AND f.muted = 0
       WHERE b.id IN (?) AND b.deleted_at IS NULL`,
      [viewerId, blogIds],
    );
    return new Set(rows.map((row) => Number(row.id)));
  }

  /** Which of these authors the reader follows, unmuted (a live subscription's relist after a follow change): one statement. */
  async followeesAmong(readerId: number, authorIds: readonly number[]): Promise<number[]> {
    if (authorIds.length === 0) return [];
    const rows = await this.db.select<{ follow_user_id: string }>(
      'SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND follow_user_id IN (?) AND muted = 0',
      [readerId, authorIds],
    );
    return rows.map((row) => Number(row.follow_user_id));
  }

  /** Everyone the reader follows, unmuted. */
  async followeeIds(readerId: number): Promise<number[]> {
    const rows = await this.db.select<{ follow_user_id: string }>(
      'SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND muted = 0',
      [readerId],
    );
    return rows.map((row) => Number(row.follow_user_id));
  }

  /** The Redis generation's row (feed/generation.ts). */
  async generation(): Promise<{ epoch: number; identity: string }> {
    const [row] = await this.db.select<{ epoch: string; redis_identity: string }>(
      'SELECT epoch, redis_identity FROM tb_feed_generation WHERE id = 1',
    );
    if (!row) throw new Error('tb_feed_generation has no row: run the migrations');
    return { epoch: Number(row.epoch), identity: row.redis_identity };
  }

  async advanceGeneration(from: string, to: string): Promise<boolean> {
    const { affectedRows } = await this.db.write(
      'UPDATE tb_feed_generation SET epoch = epoch + 1, redis_identity = ? WHERE id = 1 AND redis_identity = ?',
      [to, from],
    );
    return affectedRows > 0;
  }

  /** Writes a follow change to the outbox, inside the transaction that commits it; its id. */
  async recordFollowChange(sql: Sql, change: Omit<FollowChangeRow, 'id'>, at: Date): Promise<number> {
    const { insertId } = await sql.write(
      'INSERT INTO tb_feed_change (reader_id, author_id, follow, version, created_at) VALUES (?, ?, ?, ?, ?)',
      [change.readerId, change.authorId, change.follow, change.version, at],
    );
    return insertId;
  }

  /** Follow changes not applied yet, written before `before` (null: all of them), oldest first. */
  async followChangesToApply(before: Date | null, limit: number): Promise<FollowChangeRow[]> {
    const rows =
      before === null
        ? await this.db.select<ChangeRow>(
            'SELECT id, reader_id, author_id, follow, version FROM tb_feed_change ORDER BY id LIMIT ?',
            [limit],
          )
        : await this.db.select<ChangeRow>(
            'SELECT id, reader_id, author_id, follow, version FROM tb_feed_change WHERE created_at <= ? ORDER BY id LIMIT ?',
            [before, limit],
          );
    return rows.map(changeOf);
  }

  /** Of these change ids, those still waiting in the outbox. */
  async followChangesAmong(ids: readonly number[]): Promise<FollowChangeRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.select<ChangeRow>(
      'SELECT id, reader_id, author_id, follow, version FROM tb_feed_change WHERE id IN (?)',
      [ids],
    );
    return rows.map(changeOf);
  }

  /** The change is applied: its row goes. */
  async forgetFollowChange(id: number): Promise<void> {
    await this.db.write('DELETE FROM tb_feed_change WHERE id = ?', [id]);
  }
}
