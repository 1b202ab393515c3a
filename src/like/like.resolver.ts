import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Resolver, Root } from 'type-graphql';
import { Blog } from '../blog/blog.types';
import { Context, requireViewerId } from '../graphql/context';
import { connectionCost } from '../graphql/limits';
import { userConnection } from '../graphql/user-connection';
import { idOfType } from '../kernel/global-id';
import { readKeysetPageArgs } from '../kernel/pagination/connection';
import { DEFAULT_LIKERS_PAGE_SIZE, MAX_PAGE_SIZE } from '../kernel/pagination/page';
import { UserConnection } from '../user/user.types';

@Resolver(() => Blog)
export class LikeResolver {
  @Mutation(() => Blog, { description: 'Sets whether the viewer likes blogId (idempotent); returns the blog' })
  async likeBlog(
    @Arg('blogId', () => ID, { description: 'Global id of the blog' }) blogId: string,
    @Arg('liked', () => Boolean, { defaultValue: true, description: 'true to like it, false to take the like back' })
    liked: boolean,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<Blog> {
    const viewerId = requireViewerId(auth);
    await services.rateLimits.like(viewerId);
    const blog = await services.likes.setLiked(viewerId, idOfType(blogId, 'Blog', 'blogId'), liked);
    // The request's caches may hold the state from before the change.
    loaders.blog.clear(blog.dbId).prime(blog.dbId, blog);
    loaders.likedByViewer.clear(blog.dbId).prime(blog.dbId, liked);
    loaders.likers.clearAll();
    return blog;
  }

  @FieldResolver(() => UserConnection, {
    complexity: connectionCost,
    description: 'Users who like this blog, earliest like first',
  })
  likers(
    @Root() blog: Blog,
    // Arguments of their own rather than ConnectionArgs: the page is shorter by default.
    @Arg('first', () => Int, {
      nullable: true,
      defaultValue: DEFAULT_LIKERS_PAGE_SIZE,
      description: `How many users to return, 0..${MAX_PAGE_SIZE}`,
    })
    first: number | null,
    @Arg('after', () => String, {
      nullable: true,
      description:
        "Returns the users after this cursor (an edge's cursor or pageInfo.endCursor); none for the first page",
    })
    after: string | null,
    @Ctx() { loaders }: Context,
  ): Promise<UserConnection> {
    return userConnection(
      loaders.likers,
      blog.dbId,
      readKeysetPageArgs({ first, after }, DEFAULT_LIKERS_PAGE_SIZE),
      loaders,
    );
  }
}
