import { Arg, Args, Ctx, FieldResolver, ID, Query, Resolver, Root } from 'type-graphql';
import { BlogConnection } from '../blog/blog.types';
import { ConnectionArgs, readPageArgs } from '../kernel/pagination/connection';
import { blogConnection } from '../graphql/blog-connection';
import { Context, optionalViewerId } from '../graphql/context';
import { idOfType } from '../kernel/global-id';
import { connectionCost } from '../graphql/limits';
import { User } from './user.types';

@Resolver(() => User)
export class UserResolver {
  @Query(() => User, { nullable: true, description: 'null when anonymous' })
  async viewer(@Ctx() { auth, loaders }: Context): Promise<User | null> {
    const viewerId = optionalViewerId(auth);
    return viewerId === null ? null : loaders.user.load(viewerId);
  }

  @Query(() => User, { nullable: true, description: 'null when no user has this id' })
  user(@Arg('id', () => ID) id: string, @Ctx() { loaders }: Context): Promise<User | null> {
    return loaders.user.load(idOfType(id, 'User', 'id'));
  }

  @FieldResolver(() => Boolean, { description: 'false for an anonymous viewer' })
  isFollowedByViewer(@Root() user: User, @Ctx() { auth, loaders }: Context): Promise<boolean> | boolean {
    return optionalViewerId(auth) === null ? false : loaders.followedByViewer.load(user.dbId);
  }

  @FieldResolver(() => BlogConnection, { complexity: connectionCost, description: "the user's own blogs, newest first" })
  async blogs(@Root() user: User, @Args(() => ConnectionArgs) args: ConnectionArgs, @Ctx() { services, loaders }: Context): Promise<BlogConnection> {
    const page = await services.blogs.pageOfAuthor(user.dbId, readPageArgs(args));
    for (const item of page.items) loaders.blog.prime(item.id, item.blog);
    return blogConnection(page, loaders, { followedAuthorsOnly: false });
  }
}
