/** What followUser answers: the user followed or unfollowed, and the viewer, both as they are after the change. */
import { Field, ObjectType } from 'type-graphql';
import { User } from '../user/user.types';

@ObjectType({
  simpleResolvers: true,
  description: 'The result of followUser: both users with their counts after the change, for a normalized cache',
})
export class FollowUserPayload {
  @Field(() => User, { description: 'The user followed or unfollowed (followerCount, isFollowedByViewer updated)' })
  user!: User;

  @Field(() => User, { description: 'The viewer (followingCount updated)' })
  viewer!: User;
}
