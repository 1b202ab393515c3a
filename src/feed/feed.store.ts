/**
 * The feed's reads of the database (MySQL, or the embedded SQLite), the truth that inboxes cache. Every query answers in canonical
 * order (created_at DESC, id DESC) with the same (maxScore, offset) positions as an inbox, so a
 * page can come from either, or start in one and continue in the other.
 */
import { DataSource } from 'typeorm';
import { select, write } from '../db/sql';
import { FeedPosition, ScoredId } from './cursor';

type Row = { id: string; created_at: Date };
const entryOf = (row: Row): ScoredId => ({ id: Number(row.id), score: row.created_at.getTime() });

export class FeedStore {
  constructor(private readonly db: DataSource) {}

  /**
   * The pull model and the cold path: the first `limit` live blogs at `from` among the blogs
   * of everyone the reader follows now. One statement: tb_follow by (user_id, ...) joined to
   * tb_blog by (user_id, created_at, id).
   */
  async feedPage(readerId: number, from: FeedPosition, limit: number): Promise<ScoredId[]> {
    if (limit === 0) return [];
    const rows = await select<Row>(
      this.db,
      `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
       WHERE f.user_id = ? AND b.deleted_at IS NULL ${from.maxScore === null ? '' : 'AND b.created_at <= ?'}
       ORDER BY b.created_at DESC, b.id DESC LIMIT ?, ?`,
      from.maxScore === null
        ? [readerId, from.offset, limit]
        : [readerId, new Date(from.maxScore), from.offset, limit],
    );
    return rows.map(entryOf);
  }

  /** The reader's feed entries created at or after `since` (a rebuild's catch-up). */
  async feedSince(readerId: number, since: Date, limit: number): Promise<ScoredId[]> {
    const rows = await select<Row>(
      this.db,
      `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
       WHERE f.user_id = ? AND b.deleted_at IS NULL AND b.created_at >= ?
       ORDER BY b.created_at DESC, b.id DESC LIMIT ?`,
      [readerId, since, limit],
    );
    return rows.map(entryOf);
  }

  /** Followees with blogs that were not fanned out (big authors, hybrid model). */
  async pulledFolloweeIds(readerId: number): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db,
      `SELECT u.id FROM tb_follow f JOIN tb_user u ON u.id = f.follow_user_id
       WHERE f.user_id = ? AND u.has_pulled_blogs`,
      [readerId],
    );
    return rows.map((row) => Number(row.id));
  }

  /**
   * The first `limit` not-fanned-out blogs of these authors with score <= maxScore. One
   * statement: a UNION ALL of one index range scan per author, each stopping after `limit`
   * rows, instead of sorting every blog of every big author.
   */
  async pulledBlogs(authorIds: readonly number[], maxScore: number | null, limit: number): Promise<ScoredId[]> {
    if (authorIds.length === 0 || limit === 0) return [];
    const branch = `(SELECT id, created_at FROM tb_blog
       WHERE user_id = ? AND NOT pushed AND deleted_at IS NULL ${maxScore === null ? '' : 'AND created_at <= ?'}
       ORDER BY created_at DESC, id DESC LIMIT ?)`;
    const params = authorIds.flatMap((id) => (maxScore === null ? [id, limit] : [id, new Date(maxScore), limit]));
    const rows = await select<Row>(this.db, authorIds.map(() => branch).join(' UNION ALL '), params);
    return rows.map(entryOf);
  }

  /** An author's newest live blogs (a follow's backfill). */
  async newestOfAuthor(authorId: number, limit: number): Promise<ScoredId[]> {
    const rows = await select<Row>(
      this.db,
      `SELECT id, created_at FROM tb_blog WHERE user_id = ? AND deleted_at IS NULL
       ORDER BY created_at DESC, id DESC LIMIT ?`,
      [authorId, limit],
    );
    return rows.map(entryOf);
  }

  /** Which of `blogIds` were written by `authorId` (an unfollow's cleanup). */
  async idsOfAuthorAmong(authorId: number, blogIds: readonly number[]): Promise<number[]> {
    if (blogIds.length === 0) return [];
    const rows = await select<{ id: string }>(this.db, 'SELECT id FROM tb_blog WHERE user_id = ? AND id IN (?)', [
      authorId,
      blogIds,
    ]);
    return rows.map((row) => Number(row.id));
  }

  /** Records that the user was active now. */
  async markActive(userId: number, now: Date): Promise<void> {
    await write(this.db, 'UPDATE tb_user SET last_active_at = ? WHERE id = ?', [now, userId]);
  }
}
