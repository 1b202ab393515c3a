/** GraphQL types of the feed that no other domain owns. */
import { Field, ID, ObjectType } from 'type-graphql';

@ObjectType({
  simpleResolvers: true,
  description: "Something that left the viewer's follow feed: deleted, unfollowed, muted or blocked",
})
export class FeedRemoval {
  @Field(() => ID, { description: 'Global id of the blog that left the feed' })
  blogId!: string;
}
