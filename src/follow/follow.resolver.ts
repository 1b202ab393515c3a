import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Resolver, Root } from 'type-graphql';
import { Context, optionalViewerId, requireViewerId } from '../graphql/context';
import { connectionCost } from '../graphql/limits';
import { userConnection } from '../graphql/user-connection';
import { idOfType } from '../kernel/global-id';
import { ConnectionArgs, readKeysetPageArgs } from '../kernel/pagination/connection';
import { User, UserConnection } from '../user/user.types';

@Resolver(() => User)
export class FollowResolver {
  @Mutation(() => User, {
    description:
      'Idempotent: sets whether the viewer follows userId; returns that user. A new follow past MAX_FOLLOWING is FORBIDDEN ' +
      '(extensions.limit "maxFollowing", extensions.max); follows and unfollows count toward RATE_LIMIT_FOLLOW_PER_USER.',
  })
  async follow(
    @Arg('userId', () => ID) userId: string,
    @Arg('follow', () => Boolean, { defaultValue: true }) follow: boolean,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<User> {
    const viewerId = requireViewerId(auth);
    await services.rateLimits.follow(viewerId);
    const target = await services.follows.setFollowing(viewerId, idOfType(userId, 'User', 'userId'), follow);
    // The request's caches may hold the state from before the change (an earlier field of the
    // same document): the follow itself, both users' counters, and the pages of users.
    loaders.followedByViewer.clear(target.dbId).prime(target.dbId, follow);
    loaders.user.clear(target.dbId).prime(target.dbId, target);
    loaders.user.clear(viewerId);
    for (const pages of [loaders.followers, loaders.following, loaders.commonFollows]) pages.clearAll();
    return target;
  }

  @FieldResolver(() => UserConnection, { complexity: connectionCost, description: 'Users who follow this user, most recent follow first' })
  followers(@Root() user: User, @Args(() => ConnectionArgs) args: ConnectionArgs, @Ctx() { loaders }: Context): Promise<UserConnection> {
    return userConnection(loaders.followers, user.dbId, readKeysetPageArgs(args), loaders);
  }

  @FieldResolver(() => UserConnection, { complexity: connectionCost, description: 'Users this user follows, most recent follow first' })
  following(@Root() user: User, @Args(() => ConnectionArgs) args: ConnectionArgs, @Ctx() { loaders }: Context): Promise<UserConnection> {
    return userConnection(loaders.following, user.dbId, readKeysetPageArgs(args), loaders);
  }

  @FieldResolver(() => UserConnection, {
    complexity: connectionCost,
    description: "Users whom both the viewer and this user follow (the seed's common follows); empty when anonymous",
  })
  commonFollows(@Root() user: User, @Args(() => ConnectionArgs) args: ConnectionArgs, @Ctx() { auth, loaders }: Context): Promise<UserConnection> {
    const request = readKeysetPageArgs(args);
    // A rejected token is UNAUTHENTICATED here as everywhere. An anonymous viewer follows no one:
    // the request's loader answers an empty list without asking the database.
    optionalViewerId(auth);
    return userConnection(loaders.commonFollows, user.dbId, request, loaders);
  }
}
