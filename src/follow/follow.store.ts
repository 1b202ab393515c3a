/** The SQL of the follow graph (tb_follow) and its counters on tb_user. */
import type { Database, Sql } from '../db/database';
import { KeysetList, selectKeysetPages } from '../db/keyset';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';

/** A user's followers (the list's owner is the followed user), on ix_follow_followee_created (follow_user_id, created_at, user_id). */
const FOLLOWERS: KeysetList = { source: 'tb_follow WHERE follow_user_id = ?', time: 'created_at', id: 'user_id', order: 'DESC' };

/** The users a user follows, on ix_follow_follower_created (user_id, created_at, follow_user_id). */
const FOLLOWING: KeysetList = { source: 'tb_follow WHERE user_id = ?', time: 'created_at', id: 'follow_user_id', order: 'DESC' };

/**
 * The users whom both the viewer (the first `?`) and the list's owner follow, in the order of
 * the owner's follows: the owner's following list on ix_follow_follower_created, each row
 * kept when the viewer's row for the same user exists (uq_follow_pair).
 */
const COMMON_FOLLOWS: KeysetList = {
  source: 'tb_follow f JOIN tb_follow v ON v.follow_user_id = f.follow_user_id AND v.user_id = ? WHERE f.user_id = ?',
  time: 'f.created_at',
  id: 'f.follow_user_id',
  order: 'DESC',
};

export class FollowStore {
  constructor(private readonly db: Database) {}

  /** Inserts the row; false when it existed already. */
  async insert(sql: Sql, followerId: number, followeeId: number, at: Date): Promise<boolean> {
    const inserted = await sql.write('INSERT IGNORE INTO tb_follow (user_id, follow_user_id, created_at) VALUES (?, ?, ?)', [followerId, followeeId, at]);
    return inserted.affectedRows > 0;
  }

  /** Deletes the row; false when there was none. */
  async delete(sql: Sql, followerId: number, followeeId: number): Promise<boolean> {
    const deleted = await sql.write('DELETE FROM tb_follow WHERE user_id = ? AND follow_user_id = ?', [followerId, followeeId]);
    return deleted.affectedRows > 0;
  }

  /**
   * Both counters in one statement: it locks the two user rows in index order, so two users
   * following each other at the same moment cannot deadlock (two UPDATEs in call order could).
   * The same statement counts the follower's feed_version up: under the follower's row lock, so
   * one reader's follow changes get versions in commit order (see feed/inbox.ts). Returns it,
   * with the follower's following_count as this transaction leaves it: read under the same
   * lock, so two concurrent follows of one user see each other's count.
   */
  async adjustCounts(sql: Sql, followerId: number, followeeId: number, delta: 1 | -1): Promise<{ feedVersion: number; followingCount: number }> {
    await sql.write(
      `UPDATE tb_user SET
         following_count = following_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         follower_count = follower_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         feed_version = feed_version + CASE WHEN id = ? THEN 1 ELSE 0 END
       WHERE id IN (?, ?)`,
      [followerId, delta, followeeId, delta, followerId, followerId, followeeId],
    );
    const [row] = await sql.select<{ feed_version: string; following_count: number | string }>(
      'SELECT feed_version, following_count FROM tb_user WHERE id = ?',
      [followerId],
    );
    return { feedVersion: Number(row.feed_version), followingCount: Number(row.following_count) };
  }

  /** Which of `userIds` the viewer follows, in one statement. */
  async followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set();
    const rows = await this.db
      .lagging()
      .select<{ follow_user_id: string }>('SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND follow_user_id IN (?)', [viewerId, userIds]);
    return new Set(rows.map((row) => Number(row.follow_user_id)));
  }

  /** Pages of users' followers (KeysetFetch.of: the followed user), most recent follow first; one statement per MAX_PAGES_PER_STATEMENT pages. */
  followers(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return selectKeysetPages(this.db, FOLLOWERS, fetches, (fetch) => [fetch.of]);
  }

  /** Pages of the users that users follow (KeysetFetch.of: the follower), most recent follow first; one statement per MAX_PAGES_PER_STATEMENT pages. */
  following(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return selectKeysetPages(this.db, FOLLOWING, fetches, (fetch) => [fetch.of]);
  }

  /** Pages of the users whom both the viewer and KeysetFetch.of follow, most recent follow of `of` first; one statement per MAX_PAGES_PER_STATEMENT pages. */
  commonFollows(viewerId: number, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return selectKeysetPages(this.db, COMMON_FOLLOWS, fetches, (fetch) => [viewerId, fetch.of]);
  }
}
