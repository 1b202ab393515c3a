/**
 * The feed's reads of the database (MySQL, or the embedded SQLite), the truth that inboxes
 * cache. Every page query answers in canonical order (created_at DESC, id DESC) after the same
 * positions as an inbox, so a page can come from either, or start in one and continue in the
 * other.
 */
import type { Database, Sql } from '../db/database';
import { FeedPosition, ScoredId } from '../kernel/pagination/cursor';

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
 * Page reads (feedPage, pulledFolloweeIds, pulledBlogs) may lag and take `db.lagging()`; what
 * rebuilds and fan-out read (snapshot, feedVersion, the follow checks) is the primary's.
 */
export class FeedStore {
  constructor(private readonly db: Database) {}

  /**
   * The pull model and the cold path: the first `limit` live blogs after `from` among the
   * blogs of everyone the reader follows now, with a score of at least `minScore` when given
   * (the span above the fan-out watermark). One statement: tb_follow by (user_id, ...) joined
   * to tb_blog by (user_id, created_at, id).
   */
  async feedPage(readerId: number, from: FeedPosition, limit: number, minScore: number | null = null): Promise<ScoredId[]> {
    if (limit === 0) return [];
    const position = positionSql(from, 'b');
    const rows = await this.db.lagging().select<Row>(
      `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
       WHERE f.user_id = ? AND b.deleted_at IS NULL ${position.where} ${minScore === null ? '' : 'AND b.created_at >= ?'}
       ORDER BY b.created_at DESC, b.id DESC LIMIT ?, ?`,
      [readerId, ...position.params, ...(minScore === null ? [] : [new Date(minScore)]), position.skip, limit],
    );
    return rows.map(entryOf);
  }

  /**
   * What a rebuild copies, as one consistent view (a REPEATABLE READ transaction: all three
   * reads see the same commits): the reader's feed_version, followees and newest feed entries.
   */
  async snapshot(readerId: number, maxItems: number): Promise<TruthSnapshot> {
    return this.db.transaction(async (sql) => {
      const [user] = await sql.select<{ feed_version: string }>('SELECT feed_version FROM tb_user WHERE id = ?', [readerId]);
      const followees = await sql.select<{ follow_user_id: string }>('SELECT follow_user_id FROM tb_follow WHERE user_id = ?', [readerId]);
      const rows = await sql.select<CandidateRow>(
        `SELECT b.id, b.created_at, b.pushed FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
         WHERE f.user_id = ? AND b.deleted_at IS NULL ORDER BY b.created_at DESC, b.id DESC LIMIT ?`,
        [readerId, maxItems + 1],
      );
      return {
        version: Number(user?.feed_version ?? 0),
        followeeIds: followees.map((row) => Number(row.follow_user_id)),
        entries: rows.slice(0, maxItems).map(candidateOf),
        complete: rows.length <= maxItems,
      };
    }, 'REPEATABLE READ');
  }

  /** The database's clock in epoch ms: the one clock that rebuilds and fan-out chunks compare. */
  now(): Promise<number> {
    return this.db.now();
  }

  /** A user's feed_version (the version of their newest follow change). */
  async feedVersion(userId: number): Promise<number> {
    const [row] = await this.db.select<{ feed_version: string }>('SELECT feed_version FROM tb_user WHERE id = ?', [userId]);
    return Number(row?.feed_version ?? 0);
  }

  /** Followees with blogs that were not fanned out (big authors, hybrid model). */
  async pulledFolloweeIds(readerId: number): Promise<number[]> {
    const rows = await this.db.lagging().select<{ id: string }>(
      `SELECT u.id FROM tb_follow f JOIN tb_user u ON u.id = f.follow_user_id
       WHERE f.user_id = ? AND u.has_pulled_blogs`,
      [readerId],
    );
    return rows.map((row) => Number(row.id));
  }

  /**
   * The first `limit` not-fanned-out blogs of these authors after `from`. One statement: a
   * UNION ALL of one index range scan per author, each stopping after `limit` rows, instead of
   * sorting every blog of every big author.
   */
  async pulledBlogs(authorIds: readonly number[], from: FeedPosition, limit: number): Promise<ScoredId[]> {
    if (authorIds.length === 0 || limit === 0) return [];
    const position = positionSql({ ...from, offset: 0 });
    const branch = `(SELECT id, created_at FROM tb_blog
       WHERE user_id = ? AND NOT pushed AND deleted_at IS NULL ${position.where}
       ORDER BY created_at DESC, id DESC LIMIT ?)`;
    const params = authorIds.flatMap((id) => [id, ...position.params, limit]);
    const rows = await this.db.lagging().select<Row>(authorIds.map(() => branch).join(' UNION ALL '), params);
    return rows.map(entryOf);
  }

  /** Whether an author's new blogs go into inboxes in the hybrid model (fewer than `bigAuthorFollowers` followers). */
  async hasFewerFollowers(sql: Sql, authorId: number, bigAuthorFollowers: number): Promise<boolean> {
    const [row] = await sql.select<{ follower_count: number }>('SELECT follower_count FROM tb_user WHERE id = ?', [authorId]);
    return Number(row?.follower_count ?? 0) < bigAuthorFollowers;
  }

  /** Records that an author has blogs readers must pull (hybrid). */
  async markHasPulledBlogs(sql: Sql, authorId: number): Promise<void> {
    await sql.write('UPDATE tb_user SET has_pulled_blogs = TRUE WHERE id = ? AND NOT has_pulled_blogs', [authorId]);
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
    const rows = await this.db.select<{ id: string }>('SELECT id FROM tb_blog WHERE user_id = ? AND id IN (?)', [authorId, blogIds]);
    return rows.map((row) => Number(row.id));
  }

  /** Which of `blogIds` are deleted now (a follow's check after its copy). */
  async deletedAmong(blogIds: readonly number[]): Promise<number[]> {
    if (blogIds.length === 0) return [];
    const rows = await this.db.select<{ id: string }>('SELECT id FROM tb_blog WHERE id IN (?) AND deleted_at IS NOT NULL', [blogIds]);
    return rows.map((row) => Number(row.id));
  }

  /**
   * Which of `readerIds` follow `authorId` now (a delivered chunk's check). A chunk's readers are
   * a range of follower ids: one index range scan of (follow_user_id, user_id), not a lookup each.
   */
  async followersAmong(authorId: number, readerIds: readonly number[]): Promise<Set<number>> {
    if (readerIds.length === 0) return new Set();
    const rows = await this.db.select<{ user_id: string }>('SELECT user_id FROM tb_follow WHERE follow_user_id = ? AND user_id BETWEEN ? AND ?', [
      authorId,
      Math.min(...readerIds),
      Math.max(...readerIds),
    ]);
    return new Set(rows.map((row) => Number(row.user_id)));
  }

  /**
   * For readers who seem not to follow `authorId`: whether they do, with their feed_version,
   * read in one statement so that the two agree.
   */
  async followStates(authorId: number, readerIds: readonly number[]): Promise<Array<{ readerId: number; follows: boolean; version: number }>> {
    if (readerIds.length === 0) return [];
    const rows = await this.db.select<{ id: string; feed_version: string; follows: number | string }>(
      `SELECT u.id, u.feed_version,
         EXISTS(SELECT 1 FROM tb_follow f WHERE f.user_id = u.id AND f.follow_user_id = ?) AS follows
       FROM tb_user u WHERE u.id IN (?)`,
      [authorId, readerIds],
    );
    return rows.map((row) => ({ readerId: Number(row.id), follows: Number(row.follows) === 1, version: Number(row.feed_version) }));
  }
}
