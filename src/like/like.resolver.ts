import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { Blog } from '../blog/blog.types';
import { Context, requireViewerId } from '../graphql/context';
import { idOfType } from '../kernel/global-id';

@Resolver()
export class LikeResolver {
  @Mutation(() => Blog, { description: 'Idempotent: sets whether the viewer likes blogId; returns the blog.' })
  async likeBlog(
    @Arg('blogId', () => ID) blogId: string,
    @Arg('liked', () => Boolean, { defaultValue: true }) liked: boolean,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<Blog> {
    const viewerId = requireViewerId(auth);
    await services.rateLimits.like(viewerId);
    const blog = await services.likes.setLiked(viewerId, idOfType(blogId, 'Blog', 'blogId'), liked);
    // The request's caches may hold the state from before the change.
    loaders.blog.clear(blog.dbId).prime(blog.dbId, blog);
    loaders.likedByViewer.clear(blog.dbId).prime(blog.dbId, liked);
    return blog;
  }
}
