/** The SQL of the follow graph (tb_follow) and its counters on tb_user. */
import type { Database, Sql } from '../db/database';

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
   * one reader's follow changes get versions in commit order (see feed/inbox.ts). Returns it.
   */
  async adjustCounts(sql: Sql, followerId: number, followeeId: number, delta: 1 | -1): Promise<number> {
    await sql.write(
      `UPDATE tb_user SET
         following_count = following_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         follower_count = follower_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         feed_version = feed_version + CASE WHEN id = ? THEN 1 ELSE 0 END
       WHERE id IN (?, ?)`,
      [followerId, delta, followeeId, delta, followerId, followerId, followeeId],
    );
    const [row] = await sql.select<{ feed_version: string }>('SELECT feed_version FROM tb_user WHERE id = ?', [followerId]);
    return Number(row.feed_version);
  }

  /** Which of `userIds` the viewer follows, in one statement. */
  async followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set();
    const rows = await this.db
      .lagging()
      .select<{ follow_user_id: string }>('SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND follow_user_id IN (?)', [viewerId, userIds]);
    return new Set(rows.map((row) => Number(row.follow_user_id)));
  }
}
