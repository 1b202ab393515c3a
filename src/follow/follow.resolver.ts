import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Resolver, Root } from 'type-graphql';
import { Context, optionalViewerId, requireViewerId } from '../graphql/context';
import type { KeysetPageLoader } from '../graphql/loaders';
import { connectionCost } from '../graphql/limits';
import { userConnection } from '../graphql/user-connection';
import { idOfType } from '../kernel/global-id';
import { ConnectionArgs, readKeysetPageArgs } from '../kernel/pagination/connection';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import { User, UserConnection } from '../user/user.types';
import { FollowUserPayload } from './follow.types';

@Resolver(() => User)
export class FollowResolver {
  @Mutation(() => User, {
    description:
      'Sets whether the viewer follows userId (idempotent); returns that user. A new follow past the most one user may follow ' +
      '(5,000 unless the operator set otherwise) is FORBIDDEN with extensions.limit "maxFollowing" and extensions.max.',
    deprecationReason:
      "Use followUser: the same change, and its payload carries the viewer's updated followingCount too.",
  })
  async follow(
    @Arg('userId', () => ID, { description: 'Global id of the user to follow or unfollow' }) userId: string,
    @Arg('follow', () => Boolean, { defaultValue: true, description: 'true to follow, false to unfollow' })
    follow: boolean,
    @Ctx() context: Context,
  ): Promise<User> {
    return (await setFollowing(userId, follow, context)).user;
  }

  @Mutation(() => FollowUserPayload, {
    description:
      'Sets whether the viewer follows userId (idempotent); answers both users as they are after the change, so that a normalized ' +
      "cache updates the user's followerCount and the viewer's followingCount at once. A new follow past the most one user may " +
      'follow (5,000 unless the operator set otherwise) is FORBIDDEN with extensions.limit "maxFollowing" and extensions.max.',
  })
  async followUser(
    @Arg('userId', () => ID, { description: 'Global id of the user to follow or unfollow' }) userId: string,
    @Arg('follow', () => Boolean, { defaultValue: true, description: 'true to follow, false to unfollow' })
    follow: boolean,
    @Ctx() context: Context,
  ): Promise<FollowUserPayload> {
    return setFollowing(userId, follow, context);
  }

  @Mutation(() => User, {
    description:
      "Sets whether the viewer mutes userId: their blogs leave the viewer's feed without unfollowing (idempotent). The viewer " +
      'still follows them (counts and lists unchanged) and their blogs come back on unmute. Muting a user one does not follow ' +
      'is kept, and applies if one follows them later. Returns that user.',
  })
  async mute(
    @Arg('userId', () => ID, { description: 'Global id of the user to mute or unmute' }) userId: string,
    @Arg('muted', () => Boolean, { defaultValue: true, description: 'true to mute, false to unmute' }) muted: boolean,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<User> {
    const viewerId = requireViewerId(auth);
    await services.rateLimits.follow(viewerId);
    const target = await services.follows.setMuted(viewerId, idOfType(userId, 'User', 'userId'), muted);
    loaders.user.clear(target.dbId).prime(target.dbId, target);
    return target;
  }

  @Mutation(() => User, {
    description:
      'Sets whether the viewer blocks userId: follows both ways end and neither sees the other (idempotent). While blocked, ' +
      'neither can follow the other (FORBIDDEN with extensions.reason "blocked"), and each is left out of the other\'s feed, ' +
      'followers, following, common follows, likers and search. Profiles and blogs stay readable by id. Unblocking restores ' +
      'no follow. Returns that user.',
  })
  async block(
    @Arg('userId', () => ID, { description: 'Global id of the user to block or unblock' }) userId: string,
    @Arg('blocked', () => Boolean, { defaultValue: true, description: 'true to block, false to unblock' })
    blocked: boolean,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<User> {
    const viewerId = requireViewerId(auth);
    await services.rateLimits.follow(viewerId);
    const target = await services.follows.setBlocked(viewerId, idOfType(userId, 'User', 'userId'), blocked);
    // Both users' counts may have changed, and every list the request read may hold the other.
    if (blocked) loaders.followedByViewer.clear(target.dbId).prime(target.dbId, false);
    loaders.user.clear(target.dbId).prime(target.dbId, target);
    loaders.user.clear(viewerId);
    for (const pages of [loaders.followers, loaders.following, loaders.commonFollows, loaders.likers]) pages.clearAll();
    return target;
  }

  @FieldResolver(() => UserConnection, {
    complexity: connectionCost,
    description: 'Users the viewer has muted (only on the viewer itself; empty elsewhere), most recent mute first',
  })
  muted(
    @Root() user: User,
    @Args(() => ConnectionArgs) args: ConnectionArgs,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<UserConnection> {
    const request = readKeysetPageArgs(args);
    return userConnection(
      ownList(auth, user, (fetch) => services.follows.muted([fetch])),
      user.dbId,
      request,
      loaders,
    );
  }

  @FieldResolver(() => UserConnection, {
    complexity: connectionCost,
    description: 'Users the viewer has blocked (only on the viewer itself; empty elsewhere), most recent block first',
  })
  blocked(
    @Root() user: User,
    @Args(() => ConnectionArgs) args: ConnectionArgs,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<UserConnection> {
    const request = readKeysetPageArgs(args);
    return userConnection(
      ownList(auth, user, (fetch) => services.follows.blocked([fetch])),
      user.dbId,
      request,
      loaders,
    );
  }

  @FieldResolver(() => UserConnection, {
    complexity: connectionCost,
    description: 'Users who follow this user, most recent follow first',
  })
  followers(
    @Root() user: User,
    @Args(() => ConnectionArgs) args: ConnectionArgs,
    @Ctx() { loaders }: Context,
  ): Promise<UserConnection> {
    return userConnection(loaders.followers, user.dbId, readKeysetPageArgs(args), loaders);
  }

  @FieldResolver(() => UserConnection, {
    complexity: connectionCost,
    description: 'Users this user follows, most recent follow first',
  })
  following(
    @Root() user: User,
    @Args(() => ConnectionArgs) args: ConnectionArgs,
    @Ctx() { loaders }: Context,
  ): Promise<UserConnection> {
    return userConnection(loaders.following, user.dbId, readKeysetPageArgs(args), loaders);
  }

  @FieldResolver(() => UserConnection, {
    complexity: connectionCost,
    description:
      'Users whom both the viewer and this user follow, most recent follow of this user first; empty for an anonymous viewer',
  })
  commonFollows(
    @Root() user: User,
    @Args(() => ConnectionArgs) args: ConnectionArgs,
    @Ctx() { auth, loaders }: Context,
  ): Promise<UserConnection> {
    const request = readKeysetPageArgs(args);
    // A rejected token is UNAUTHENTICATED here as everywhere. An anonymous viewer follows no one:
    // the request's loader answers an empty list without asking the database.
    optionalViewerId(auth);
    return userConnection(loaders.commonFollows, user.dbId, request, loaders);
  }
}

/**
 * A list only its owner may read (User.muted, User.blocked): its pages when `user` is the signed-in
 * viewer, else always empty, without a query. A rejected token is UNAUTHENTICATED here as
 * everywhere.
 */
function ownList(
  auth: Context['auth'],
  user: User,
  pages: (fetch: KeysetFetch) => Promise<KeysetPosition[][]>,
): Pick<KeysetPageLoader, 'load'> {
  const own = optionalViewerId(auth) === user.dbId;
  return { load: async (fetch) => (own ? (await pages(fetch))[0] : []) };
}

/**
 * follow and followUser: the viewer's rate limit, the change (follow.service.ts), and the
 * request's caches brought up to date. Both users as the change left them (the target, and the
 * viewer, whose followingCount moved).
 */
async function setFollowing(
  userId: string,
  follow: boolean,
  { auth, services, loaders }: Context,
): Promise<FollowUserPayload> {
  const viewerId = requireViewerId(auth);
  await services.rateLimits.follow(viewerId);
  const { target, viewer } = await services.follows.setFollowing(viewerId, idOfType(userId, 'User', 'userId'), follow);
  // The request's caches may hold the state from before the change (an earlier field of the
  // same document): the follow itself, both users' counters, and the pages of users.
  loaders.followedByViewer.clear(target.dbId).prime(target.dbId, follow);
  loaders.user.clear(target.dbId).prime(target.dbId, target);
  loaders.user.clear(viewerId).prime(viewerId, viewer);
  for (const pages of [loaders.followers, loaders.following, loaders.commonFollows]) pages.clearAll();
  return { user: target, viewer };
}
