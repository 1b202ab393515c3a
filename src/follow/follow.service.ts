/**
 * Follows: the follow graph in tb_follow, with follower/following counters kept exact; and mutes
 * and blocks, which change the feed through the same follow-change path as follows do.
 *
 * Mute: "viewer V mutes A" is a row of tb_user_mute (User.muted lists them), and V's follow of A,
 * if any, carries muted = 1. The feed's followees are V's follows that are not muted
 * (feed/feed.store.ts), so a muted author's blogs leave V's feed, inbox and live feed as after an
 * unfollow, and come back on unmute as after a follow (the newest FOLLOW_BACKFILL_ITEMS at once,
 * older ones from MySQL), while V still follows A: counts, social lists and isFollowedByViewer
 * are unchanged. A mute or unmute of a followee is a follow change of the feed: V's feed_version
 * counts up and the change goes through FeedService.changeFollow, exactly as an unfollow or a
 * follow (outbox row, pending mark, inbox removal or backfill, live re-listing). Muting someone
 * V does not follow is kept and takes effect if V follows them later: that follow commits as a
 * change that leaves them out of the feed.
 *
 * Block: "V blocks B" is a row of tb_user_block (User.blocked lists them). It ends the follows
 * both ways, each through the normal unfollow path (counters and feed exact), refuses new follows
 * either way (FORBIDDEN, extensions.reason "blocked"), and hides each from the other in the
 * social lists, Blog.likers and users(search:) (as either of them sees them). Their blogs cannot
 * reach each other's feed: neither follows the other. Profiles (user(id)) and blogs by id stay
 * readable, as they are to anyone signed out. Unblocking restores no follow.
 *
 * Every transaction that reads or writes a mute or a block holds the row locks of the users
 * concerned (FollowStore.lockUsers, or adjustCounts in a follow), so a follow, a mute and a
 * block of the same users serialise, and runs at READ COMMITTED, so that what it reads after
 * taking them is what the one before it committed.
 */
import type { Database, Sql } from '../db/database';
import type { LiveFeed } from '../feed/feed.live';
import type { FeedService } from '../feed/feed.service';
import { badUserInput, forbidden, limitReached, notFound } from '../kernel/errors';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import type { UserService } from '../user/user.service';
import type { User } from '../user/user.types';
import { FollowStore } from './follow.store';

/** What a follow transaction changed: the follower's new feed_version, and whether the followee's blogs are in the feed after it. */
interface FeedChange {
  version: number;
  inFeed: boolean;
}

export interface FollowServiceDeps {
  /** Runs the transactions. */
  db: Database;
  store: FollowStore;
  users: UserService;
  feed: Pick<FeedService, 'changeFollow'>;
  /** The viewer's live subscriptions, which listen to the authors they follow. */
  live: Pick<LiveFeed, 'followsChanged'>;
  now: () => Date;
  /** MAX_FOLLOWING: how many users one user may follow. */
  maxFollowing: number;
}

export class FollowService {
  private readonly db: Database;
  private readonly store: FollowStore;
  private readonly users: UserService;
  private readonly feed: Pick<FeedService, 'changeFollow'>;
  private readonly live: Pick<LiveFeed, 'followsChanged'>;
  private readonly now: () => Date;
  private readonly maxFollowing: number;

  constructor(deps: FollowServiceDeps) {
    this.db = deps.db;
    this.store = deps.store;
    this.users = deps.users;
    this.feed = deps.feed;
    this.live = deps.live;
    this.now = deps.now;
    this.maxFollowing = deps.maxFollowing;
  }

  /**
   * Idempotent: makes "viewer follows target" true or false and returns the target. The row and
   * both counters change in one transaction, and only when the row really changed, so repeated
   * or concurrent calls never drift the counts. The inbox follows the change at once: a follow
   * brings the target's recent blogs in (none while the target is muted), an unfollow takes them
   * out. A new follow past MAX_FOLLOWING is refused (FORBIDDEN, extensions.limit "maxFollowing"),
   * and so is one between users of whom one blocked the other (FORBIDDEN, extensions.reason
   * "blocked"); an unfollow never is. Returns both users as the change left them (their
   * counters moved), read in one statement.
   */
  async setFollowing(viewerId: number, targetId: number, follow: boolean): Promise<{ target: User; viewer: User }> {
    await this.checkTarget(viewerId, targetId, 'follow');
    await this.changeFeed(viewerId, targetId, follow, (sql) => this.commitChange(sql, viewerId, targetId, follow));
    await this.live.followsChanged(viewerId, [targetId]);
    const users = await this.users.findByIds([targetId, viewerId]);
    const target = users.get(targetId);
    if (!target) throw noSuchUser(targetId);
    const viewer = users.get(viewerId);
    if (!viewer) throw new Error(`the viewer (user ${viewerId}) has no user row`);
    return { target, viewer };
  }

  /**
   * Idempotent: makes "viewer mutes target" true or false and returns the target. When the viewer
   * follows the target, the change is a follow change of the feed (see above); else only the mute
   * row changes.
   */
  async setMuted(viewerId: number, targetId: number, muted: boolean): Promise<User> {
    await this.checkTarget(viewerId, targetId, 'mute');
    await this.changeFeed(viewerId, targetId, !muted, async (sql) => {
      await this.store.lockUsers(sql, [viewerId]);
      await this.store.setMuteRow(sql, viewerId, targetId, muted, this.now());
      if (!(await this.store.setFollowMuted(sql, viewerId, targetId, muted))) return null;
      return { version: await this.store.nextFeedVersion(sql, viewerId), inFeed: !muted };
    });
    await this.live.followsChanged(viewerId, [targetId]);
    return this.target(targetId);
  }

  /**
   * Idempotent: makes "viewer blocks target" true or false and returns the target. A block is
   * recorded together with the end of the viewer's follow of the target, then the target's
   * follow of the viewer ends: each an unfollow through the feed's path. A block found with a
   * follow left over (a process died between the two) ends it when the block is asked again.
   */
  async setBlocked(viewerId: number, targetId: number, blocked: boolean): Promise<User> {
    await this.checkTarget(viewerId, targetId, 'block');
    if (!blocked) {
      await this.db.transaction(async (sql) => {
        await this.store.lockUsers(sql, [viewerId, targetId]);
        await this.store.setBlockRow(sql, viewerId, targetId, false, this.now());
      }, 'READ COMMITTED');
      return this.target(targetId);
    }
    await this.changeFeed(viewerId, targetId, false, async (sql) => {
      await this.store.lockUsers(sql, [viewerId, targetId]);
      await this.store.setBlockRow(sql, viewerId, targetId, true, this.now());
      return this.commitChange(sql, viewerId, targetId, false);
    });
    await this.changeFeed(targetId, viewerId, false, (sql) => this.commitChange(sql, targetId, viewerId, false));
    await Promise.all([this.live.followsChanged(viewerId, [targetId]), this.live.followsChanged(targetId, [viewerId])]);
    return this.target(targetId);
  }

  /** The self and existence checks of a change of the viewer's relation to the target (nothing changes on error). */
  private async checkTarget(viewerId: number, targetId: number, verb: 'follow' | 'mute' | 'block'): Promise<void> {
    if (viewerId === targetId) throw badUserInput(`you cannot ${verb} yourself`, 'userId');
    if (!(await this.users.exists(targetId))) throw noSuchUser(targetId);
  }

  private async target(targetId: number): Promise<User> {
    const target = await this.users.findById(targetId);
    if (!target) throw noSuchUser(targetId);
    return target;
  }

  /**
   * Runs `commit` in a transaction through the feed's follow-change path (FeedService.changeFollow):
   * when it reports a change of the reader's feed, the change is recorded in the same transaction.
   * `follow`: whether the author is in the feed after the change, as far as the caller knows.
   */
  private changeFeed(
    readerId: number,
    authorId: number,
    follow: boolean,
    commit: (sql: Sql) => Promise<FeedChange | null>,
  ): Promise<void> {
    return this.feed.changeFollow(readerId, authorId, follow, (record) =>
      this.db.transaction(async (sql) => {
        const change = await commit(sql);
        return change === null ? null : record(sql, change.version, change.inFeed);
      }, 'READ COMMITTED'),
    );
  }

  /**
   * Inserts or deletes the row and moves the counters; the follower's new feed_version and
   * whether the followee is in the feed after it, or null when nothing changed. The cap and the
   * blocks are checked after adjustCounts, under both users' row locks: of two follows at the
   * last free place, the second sees the first's count and rolls back; a follow and a block of
   * the same users see each other.
   */
  private async commitChange(
    sql: Sql,
    followerId: number,
    followeeId: number,
    follow: boolean,
  ): Promise<FeedChange | null> {
    const changed = follow
      ? await this.store.insert(sql, followerId, followeeId, this.now())
      : await this.store.delete(sql, followerId, followeeId);
    if (!changed) return null;
    const { feedVersion, followingCount, blocked, muted } = await this.store.adjustCounts(
      sql,
      followerId,
      followeeId,
      follow ? 1 : -1,
    );
    if (!follow) return { version: feedVersion, inFeed: false };
    if (followingCount > this.maxFollowing) {
      throw limitReached(
        `one may follow at most ${this.maxFollowing} users (MAX_FOLLOWING), and you do; unfollow someone first`,
        'maxFollowing',
        this.maxFollowing,
        'userId',
      );
    }
    if (blocked) {
      throw forbidden(
        `userId: user ${followeeId} cannot be followed: one of you has blocked the other`,
        'userId',
        'blocked',
      );
    }
    if (muted) await this.store.setFollowMuted(sql, followerId, followeeId, true);
    return { version: feedVersion, inFeed: !muted };
  }

  /** Which of `userIds` the viewer follows, in one statement. */
  followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    return this.store.followedAmong(viewerId, userIds);
  }

  /** Pages of users' followers (KeysetFetch.of: the followed user), most recent follow first, as the viewer (null: anonymous) sees them; all in one read (db/keyset.ts). */
  followers(viewerId: number | null, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.followers(viewerId, fetches);
  }

  /** Pages of the users that users follow (KeysetFetch.of: the follower), most recent follow first, as the viewer sees them; all in one read. */
  following(viewerId: number | null, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.following(viewerId, fetches);
  }

  /** Pages of the users whom both the viewer and KeysetFetch.of follow, in the order of `of`'s follows, all in one read (db/keyset.ts). */
  commonFollows(viewerId: number, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.commonFollows(viewerId, fetches);
  }

  /** Pages of the users a user muted (KeysetFetch.of), most recent first. */
  muted(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.muted(fetches);
  }

  /** Pages of the users a user blocked (KeysetFetch.of), most recent first. */
  blocked(fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.blocked(fetches);
  }

  /** Of `userIds`, those that the viewer has blocked or that have blocked the viewer (one statement). */
  blockedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>> {
    return this.store.blockedAmong(viewerId, userIds);
  }
}

/** The error of a change whose target names no user (NOT_FOUND naming userId). */
function noSuchUser(targetId: number): Error {
  return notFound(`user ${targetId} does not exist`, 'userId');
}
