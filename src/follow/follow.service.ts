/** Follows: the follow graph in tb_follow, with follower/following counters kept exact. */
import type { Database, Sql } from '../db/database';
import type { LiveFeed } from '../feed/feed.live';
import type { FeedService } from '../feed/feed.service';
import { badUserInput, limitReached, notFound } from '../kernel/errors';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import type { UserService } from '../user/user.service';
import type { User } from '../user/user.types';
import { FollowStore } from './follow.store';

export class FollowService {
  constructor(
    /** Runs the transactions. */
    private readonly db: Database,
    private readonly store: FollowStore,
    private readonly users: UserService,
    private readonly feed: Pick<FeedService, 'changeFollow'>,
    /** The viewer's live subscriptions, which listen to the authors they follow. */
    private readonly live: Pick<LiveFeed, 'followsChanged'>,
    private readonly now: () => Date,
    /** MAX_FOLLOWING: how many users one user may follow. */
    private readonly maxFollowing: number,
  ) {}

  /**
   * Idempotent: makes "viewer follows target" true or false and returns the target. The row and
   * both counters change in one transaction, and only when the row really changed, so repeated
   * or concurrent calls never drift the counts. The inbox follows the change at once: a follow
   * brings the target's recent blogs in, an unfollow takes them out. A new follow past
   * MAX_FOLLOWING is refused (FORBIDDEN, extensions.limit "maxFollowing"); an unfollow never is.
   */
  async setFollowing(viewerId: number, targetId: number, follow: boolean): Promise<User> {
    if (viewerId === targetId) throw badUserInput('you cannot follow yourself', 'userId');
    if (!(await this.users.findById(targetId))) throw notFound(`user ${targetId} does not exist`);
    await this.feed.changeFollow(viewerId, targetId, follow, (record) =>
      this.db.transaction(async (sql) => {
        const version = await this.commitChange(sql, viewerId, targetId, follow);
        return version === null ? null : record(sql, version);
      }),
    );
    await this.live.followsChanged(viewerId);
    const target = await this.users.findById(targetId);
    if (!target) throw notFound(`user ${targetId} does not exist`);
    return target;
  }

  /**
   * Inserts or deletes the row and moves the counters; the follower's new feed_version, or null
   * when nothing changed. The cap is checked on the count this transaction leaves, under the
   * follower's row lock: of two follows at the last free place, the second sees the first's
   * count and rolls back.
   */
  private async commitChange(sql: Sql, followerId: number, followeeId: number, follow: boolean): Promise<number | null> {
    const changed = follow ? await this.store.insert(sql, followerId, followeeId, this.now()) : await this.store.delete(sql, followerId, followeeId);
    if (!changed) return null;
    const { feedVersion, followingCount } = await this.store.adjustCounts(sql, followerId, followeeId, follow ? 1 : -1);
    if (follow && followingCount > this.maxFollowing) {
      throw limitReached(
        `one may follow at most ${this.maxFollowing} users (MAX_FOLLOWING), and you do; unfollow someone first`,
        'maxFollowing',
        this.maxFollowing,
        'userId',
      );
    }
    return feedVersion;
  }

  /** Which of `userIds` the viewer follows, in one statement. */
  followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    return this.store.followedAmong(viewerId, userIds);
  }

  /** Pages of users' followers (KeysetFetch.of: the followed user), most recent follow first, all in one read (db/keyset.ts). */
  followers(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.followers(fetches);
  }

  /** Pages of the users that users follow (KeysetFetch.of: the follower), most recent follow first, all in one read (db/keyset.ts). */
  following(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.following(fetches);
  }

  /** Pages of the users whom both the viewer and KeysetFetch.of follow, in the order of `of`'s follows, all in one read (db/keyset.ts). */
  commonFollows(viewerId: number, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.commonFollows(viewerId, fetches);
  }
}
