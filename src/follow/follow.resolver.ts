import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { Context, requireViewerId } from '../graphql/context';
import { idOfType } from '../kernel/global-id';
import { User } from '../user/user.types';

@Resolver()
export class FollowResolver {
  @Mutation(() => User, { description: 'Idempotent: sets whether the viewer follows userId; returns that user.' })
  async follow(
    @Arg('userId', () => ID) userId: string,
    @Arg('follow', () => Boolean, { defaultValue: true }) follow: boolean,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<User> {
    const viewerId = requireViewerId(auth);
    const target = await services.follows.setFollowing(viewerId, idOfType(userId, 'User', 'userId'), follow);
    // The request's caches may hold the state from before the change (an earlier field of the
    // same document): the follow itself, and both users' counters.
    loaders.followedByViewer.clear(target.dbId).prime(target.dbId, follow);
    loaders.user.clear(target.dbId).prime(target.dbId, target);
    loaders.user.clear(viewerId);
    return target;
  }
}
