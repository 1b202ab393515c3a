/** The SQL of the follow graph (tb_follow), its counters on tb_user, and mutes and blocks (tb_user_mute, tb_user_block). */
import type { Database, Sql } from '../db/database';
import { KeysetList, selectKeysetPages } from '../db/keyset';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import { notBlockedWithViewer } from '../user/user.store';

/** A user's followers (the list's owner is the followed user), on ix_follow_followee_created (follow_user_id, created_at, user_id). */
const FOLLOWERS: KeysetList = {
  source: 'tb_follow f WHERE f.follow_user_id = ?',
  time: 'f.created_at',
  id: 'f.user_id',
  order: 'DESC',
};

/** The users a user follows, on ix_follow_follower_created (user_id, created_at, follow_user_id). */
const FOLLOWING: KeysetList = {
  source: 'tb_follow f WHERE f.user_id = ?',
  time: 'f.created_at',
  id: 'f.follow_user_id',
  order: 'DESC',
};

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

/** A list as a signed-in viewer sees it: without the users the viewer blocked or was blocked by (two more `?`: the viewer). */
function seenBy(list: KeysetList): KeysetList {
  return { ...list, source: `${list.source} AND ${notBlockedWithViewer(list.id)}` };
}

const FOLLOWERS_SEEN = seenBy(FOLLOWERS);
const FOLLOWING_SEEN = seenBy(FOLLOWING);
const COMMON_FOLLOWS_SEEN = seenBy(COMMON_FOLLOWS);

/** The users a user muted, most recent mute first, on ix_mute_user_created (user_id, created_at, muted_user_id). */
const MUTED: KeysetList = {
  source: 'tb_user_mute WHERE user_id = ?',
  time: 'created_at',
  id: 'muted_user_id',
  order: 'DESC',
};

/** The users a user blocked, most recent block first, on ix_block_user_created (user_id, created_at, blocked_user_id). */
const BLOCKED: KeysetList = {
  source: 'tb_user_block WHERE user_id = ?',
  time: 'created_at',
  id: 'blocked_user_id',
  order: 'DESC',
};

export class FollowStore {
  constructor(private readonly db: Database) {}

  /** Inserts the row; false when it existed already. */
  async insert(sql: Sql, followerId: number, followeeId: number, at: Date): Promise<boolean> {
    const inserted = await sql.write(
      'INSERT IGNORE INTO tb_follow (user_id, follow_user_id, created_at) VALUES (?, ?, ?)',
      [followerId, followeeId, at],
    );
    return inserted.affectedRows > 0;
  }

  /** Deletes the row; false when there was none. */
  async delete(sql: Sql, followerId: number, followeeId: number): Promise<boolean> {
    const deleted = await sql.write('DELETE FROM tb_follow WHERE user_id = ? AND follow_user_id = ?', [
      followerId,
      followeeId,
    ]);
    return deleted.affectedRows > 0;
  }

  /**
   * Both counters in one statement: it locks the two user rows in index order, so two users
   * following each other at the same moment cannot deadlock (two UPDATEs in call order could).
   * The same statement counts the follower's feed_version up: under the follower's row lock, so
   * one reader's follow changes get versions in commit order (see feed/inbox.ts).
   *
   * Then one read returns what a follow's checks need, as this transaction leaves it: the
   * follower's feed_version and following_count (under the same lock, so two concurrent follows
   * of one user see each other's count), whether either user has blocked the other, and whether
   * the follower has muted the followee. A block or a mute of the two takes those row locks
   * first (lockUsers): one committed before this UPDATE is seen, one not yet begun waits for
   * this transaction. One read where there were three: each statement is a round trip that
   * wakes a MariaDB thread, and a follow ran eleven of them (bench:mixed).
   */
  async adjustCounts(
    sql: Sql,
    followerId: number,
    followeeId: number,
    delta: 1 | -1,
  ): Promise<{ feedVersion: number; followingCount: number; blocked: boolean; muted: boolean }> {
    await sql.write(
      `UPDATE tb_user SET
         following_count = following_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         follower_count = follower_count + CASE WHEN id = ? THEN ? ELSE 0 END,
         feed_version = feed_version + CASE WHEN id = ? THEN 1 ELSE 0 END
       WHERE id IN (?, ?)`,
      [followerId, delta, followeeId, delta, followerId, followerId, followeeId],
    );
    const [row] = await sql.select<{
      feed_version: string;
      following_count: number | string;
      blocked: number | string;
      muted: number | string;
    }>(
      `SELECT feed_version, following_count,
         EXISTS (SELECT 1 FROM tb_user_block
                 WHERE (user_id = ? AND blocked_user_id = ?) OR (user_id = ? AND blocked_user_id = ?)) AS blocked,
         EXISTS (SELECT 1 FROM tb_user_mute WHERE user_id = ? AND muted_user_id = ?) AS muted
       FROM tb_user WHERE id = ?`,
      [followerId, followeeId, followeeId, followerId, followerId, followeeId, followerId],
    );
    return {
      feedVersion: Number(row.feed_version),
      followingCount: Number(row.following_count),
      blocked: Number(row.blocked) === 1,
      muted: Number(row.muted) === 1,
    };
  }

  /** Which of `userIds` the viewer follows, in one statement. */
  async followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set();
    const rows = await this.db
      .lagging()
      .select<{ follow_user_id: string }>(
        'SELECT follow_user_id FROM tb_follow WHERE user_id = ? AND follow_user_id IN (?)',
        [viewerId, userIds],
      );
    return new Set(rows.map((row) => Number(row.follow_user_id)));
  }

  /**
   * Pages of users' followers (KeysetFetch.of: the followed user), most recent follow first, as
   * `viewerId` sees them (null: anonymous); one statement per MAX_PAGES_PER_STATEMENT pages.
   */
  followers(viewerId: number | null, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    if (viewerId === null) return selectKeysetPages(this.db, FOLLOWERS, fetches, (fetch) => [fetch.of]);
    return selectKeysetPages(this.db, FOLLOWERS_SEEN, fetches, (fetch) => [fetch.of, viewerId, viewerId]);
  }

  /** Pages of the users that users follow (KeysetFetch.of: the follower), most recent follow first, as `viewerId` sees them. */
  following(viewerId: number | null, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    if (viewerId === null) return selectKeysetPages(this.db, FOLLOWING, fetches, (fetch) => [fetch.of]);
    return selectKeysetPages(this.db, FOLLOWING_SEEN, fetches, (fetch) => [fetch.of, viewerId, viewerId]);
  }

  /** Pages of the users whom both the viewer and KeysetFetch.of follow, most recent follow of `of` first; one statement per MAX_PAGES_PER_STATEMENT pages. */
  commonFollows(viewerId: number, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return selectKeysetPages(this.db, COMMON_FOLLOWS_SEEN, fetches, (fetch) => [
      viewerId,
      fetch.of,
      viewerId,
      viewerId,
    ]);
  }

  /** Pages of the users a user muted (KeysetFetch.of: that user), most recent first. */
  muted(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return selectKeysetPages(this.db, MUTED, fetches, (fetch) => [fetch.of]);
  }

  /** Pages of the users a user blocked (KeysetFetch.of: that user), most recent first. */
  blocked(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return selectKeysetPages(this.db, BLOCKED, fetches, (fetch) => [fetch.of]);
  }

  // ---------------------------------------------------------------------------------------
  // Mutes and blocks. Every transaction that reads or writes them takes the row locks of the
  // users concerned first (lockUsers, or adjustCounts in a follow), in one statement, so that a
  // follow, a mute and a block of the same users run one after the other.

  /** Locks these users' rows (an UPDATE that changes nothing still takes its rows' locks), in index order. */
  async lockUsers(sql: Sql, userIds: readonly number[]): Promise<void> {
    await sql.write('UPDATE tb_user SET feed_version = feed_version WHERE id IN (?)', [userIds]);
  }

  /** Counts the user's feed_version up (a change of their feed: a mute or unmute of a followee) and returns it. */
  async nextFeedVersion(sql: Sql, userId: number): Promise<number> {
    await sql.write('UPDATE tb_user SET feed_version = feed_version + 1 WHERE id = ?', [userId]);
    const [row] = await sql.select<{ feed_version: string }>('SELECT feed_version FROM tb_user WHERE id = ?', [userId]);
    return Number(row.feed_version);
  }

  /** Inserts or deletes the mute row; whether it changed. */
  async setMuteRow(sql: Sql, userId: number, mutedId: number, muted: boolean, at: Date): Promise<boolean> {
    const change = muted
      ? await sql.write('INSERT IGNORE INTO tb_user_mute (user_id, muted_user_id, created_at) VALUES (?, ?, ?)', [
          userId,
          mutedId,
          at,
        ])
      : await sql.write('DELETE FROM tb_user_mute WHERE user_id = ? AND muted_user_id = ?', [userId, mutedId]);
    return change.affectedRows > 0;
  }

  /** Sets the follow row's muted flag; true when the row exists and its flag changed. */
  async setFollowMuted(sql: Sql, followerId: number, followeeId: number, muted: boolean): Promise<boolean> {
    const flag = muted ? 1 : 0;
    const changed = await sql.write(
      'UPDATE tb_follow SET muted = ? WHERE user_id = ? AND follow_user_id = ? AND muted <> ?',
      [flag, followerId, followeeId, flag],
    );
    return changed.affectedRows > 0;
  }

  /** Inserts or deletes the block row; whether it changed. */
  async setBlockRow(sql: Sql, userId: number, blockedId: number, blocked: boolean, at: Date): Promise<boolean> {
    const change = blocked
      ? await sql.write('INSERT IGNORE INTO tb_user_block (user_id, blocked_user_id, created_at) VALUES (?, ?, ?)', [
          userId,
          blockedId,
          at,
        ])
      : await sql.write('DELETE FROM tb_user_block WHERE user_id = ? AND blocked_user_id = ?', [userId, blockedId]);
    return change.affectedRows > 0;
  }

  /** Of `userIds`, those that the viewer has blocked or that have blocked the viewer, in one statement (from a replica: a read may lag). */
  async blockedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set();
    const rows = await this.db.lagging().select<{ other: string }>(
      `SELECT blocked_user_id AS other FROM tb_user_block WHERE user_id = ? AND blocked_user_id IN (?)
       UNION SELECT user_id AS other FROM tb_user_block WHERE blocked_user_id = ? AND user_id IN (?)`,
      [viewerId, userIds, viewerId, userIds],
    );
    return new Set(rows.map((row) => Number(row.other)));
  }
}
