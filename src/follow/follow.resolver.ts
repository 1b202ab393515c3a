import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { Context, requireViewerId } from '../graphql/context';
import { idOfType } from '../graphql/global-id';
import { User } from '../user/user.types';

@Resolver()
export class FollowResolver {
  @Mutation(() => User, { description: 'Idempotent: sets whether the viewer follows userId; returns that user.' })
  follow(
    @Arg('userId', () => ID) userId: string,
    @Arg('follow', () => Boolean, { defaultValue: true }) follow: boolean,
    @Ctx() { auth, services }: Context,
  ): Promise<User> {
    const viewerId = requireViewerId(auth);
    return services.follows.setFollowing(viewerId, idOfType(userId, 'User', 'userId'), follow);
  }
}
