/** Follows: the follow graph in tb_follow, with follower/following counters kept exact. */
import { DataSource } from 'typeorm';
import { inTransaction, select, Sql, write } from '../db/sql';
import { FeedService } from '../feed/feed.service';
import { badUserInput, notFound } from '../kernel/errors';
import { UserService } from '../user/user.service';
import { User } from '../user/user.types';

export class FollowService {
  constructor(
    private readonly db: DataSource,
    private readonly users: UserService,
    private readonly feed: FeedService,
    private readonly now: () => Date,
  ) {}

  /**
   * Idempotent: makes "viewer follows target" true or false and returns the target. The row and
   * both counters change in one transaction, and only when the row really changed, so repeated
   * or concurrent calls never drift the counts. The inbox follows the change at once: a follow
   * brings the target's recent blogs in, an unfollow takes them out.
   */
  async setFollowing(viewerId: number, targetId: number, follow: boolean): Promise<User> {
    if (viewerId === targetId) throw badUserInput('you cannot follow yourself', 'userId');
    if (!(await this.users.findById(targetId))) throw notFound(`user ${targetId} does not exist`);
    await this.feed.changeFollow(viewerId, targetId, follow, () =>
      inTransaction(this.db, (sql) => (follow ? this.insertFollow(sql, viewerId, targetId) : this.deleteFollow(sql, viewerId, targetId))),
    );
    const target = await this.users.findById(targetId);
    if (!target) throw notFound(`user ${targetId} does not exist`);
    return target;
  }

  /** Inserts the row; the follower's new feed_version, or null when it existed already. */
  private async insertFollow(sql: Sql, followerId: number, followeeId: number): Promise<number | null> {
    const inserted = await write(sql, 'INSERT IGNORE INTO tb_follow (user_id, follow_user_id, created_at) VALUES (?, ?, ?)', [
      followerId,
      followeeId,
      this.now(),
    ]);
    if (inserted.affectedRows === 0) return null;
    return this.adjustCounts(sql, followerId, followeeId, +1);
  }

  /** Deletes the row; the follower's new feed_version, or null when there was none. */
  private async deleteFollow(sql: Sql, followerId: number, followeeId: number): Promise<number | null> {
    const deleted = await write(sql, 'DELETE FROM tb_follow WHERE user_id = ? AND follow_user_id = ?', [followerId, followeeId]);
    if (deleted.affectedRows === 0) return null;
    return this.adjustCounts(sql, followerId, followeeId, -1);
  }

  /**
   * Both counters in one statement: it locks the two user rows in index order, so two users
   * following each other at the same moment cannot deadlock (two UPDATEs in call order could).
   * The same statement counts the follower's feed_version up: under the follower's row lock, so
   * one reader's follow changes get versions in commit order (see feed/inbox.ts). Returns it.
   */
  private async adjustCounts(sql: Sql, followerId: number, followeeId: number, delta: 1 | -1): Promise<number> {
    await write(
      sql,
      `UPDATE tb_user SET
         following_count = following_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         follower_count = follower_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         feed_version = feed_version + CASE WHEN id = ? THEN 1 ELSE 0 END
       WHERE id IN (?, ?)`,
      [followerId, delta, followeeId, delta, followerId, followerId, followeeId],
    );
    const [row] = await select<{ feed_version: string }>(sql, 'SELECT feed_version FROM tb_user WHERE id = ?', [followerId]);
    return Number(row.feed_version);
  }

  /** Which of `userIds` the viewer follows, in one statement. */
  async followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set();
    const rows = await select<{ follow_user_id: string }>(this.db, 'SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND follow_user_id IN (?)', [
      viewerId,
      userIds,
    ]);
    return new Set(rows.map((row) => Number(row.follow_user_id)));
  }
}
