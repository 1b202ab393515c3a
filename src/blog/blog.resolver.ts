import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Context, optionalViewerId, requireViewerId } from '../graphql/context';
import { idOfType } from '../kernel/global-id';
import { User } from '../user/user.types';
import { Blog, PublishBlogInput } from './blog.types';

@Resolver(() => Blog)
export class BlogResolver {
  @Query(() => Blog, { nullable: true, description: 'null when no live blog has this id' })
  blog(@Arg('id', () => ID) id: string, @Ctx() { loaders }: Context): Promise<Blog | null> {
    return loaders.blog.load(idOfType(id, 'Blog', 'id'));
  }

  @Mutation(() => Blog, {
    description: "Publishes a blog; it reaches the followers' feeds right after. With input.idempotencyKey, a retry returns the blog instead of a second one.",
  })
  async publishBlog(@Arg('input', () => PublishBlogInput) input: PublishBlogInput, @Ctx() { auth, services }: Context): Promise<Blog> {
    const viewerId = requireViewerId(auth);
    await services.rateLimits.publish(viewerId);
    return services.blogs.publish(viewerId, input);
  }

  @Mutation(() => ID, { description: "Only the author may delete; the blog leaves every feed. Returns the deleted blog's id." })
  async deleteBlog(@Arg('blogId', () => ID) blogId: string, @Ctx() { auth, services }: Context): Promise<string> {
    const viewerId = requireViewerId(auth);
    await services.blogs.delete(viewerId, idOfType(blogId, 'Blog', 'blogId'));
    return blogId;
  }

  @FieldResolver(() => User)
  async author(@Root() blog: Blog, @Ctx() { loaders }: Context): Promise<User> {
    const author = await loaders.user.load(blog.authorId);
    if (!author) throw new Error(`blog ${blog.dbId} has no author row (user ${blog.authorId})`);
    return author;
  }

  @FieldResolver(() => Boolean, { description: 'false for an anonymous viewer' })
  isLiked(@Root() blog: Blog, @Ctx() { auth, loaders }: Context): Promise<boolean> | boolean {
    return optionalViewerId(auth) === null ? false : loaders.likedByViewer.load(blog.dbId);
  }
}
