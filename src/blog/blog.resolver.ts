import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { cursorsForPage, encodeCursor, START } from '../kernel/pagination/cursor';
import { Context, optionalViewerId, requireViewerId } from '../graphql/context';
import type { Loaders } from '../graphql/loaders';
import { idOfType } from '../kernel/global-id';
import { User } from '../user/user.types';
import { Blog, BlogEdge, PublishBlogInput, UpdateBlogInput } from './blog.types';

@Resolver(() => Blog)
export class BlogResolver {
  @Query(() => Blog, {
    nullable: true,
    description: 'The blog with this global id; null when there is none or it was deleted',
  })
  blog(
    @Arg('id', () => ID, { description: 'Global id of a blog (Blog.id)' }) id: string,
    @Ctx() { loaders }: Context,
  ): Promise<Blog | null> {
    return loaders.blog.load(idOfType(id, 'Blog', 'id'));
  }

  @Mutation(() => Blog, {
    description:
      "Publishes a blog; it reaches the followers' feeds right after. With input.idempotencyKey, a retry returns the blog instead of a second one.",
    deprecationReason:
      'Use publishBlogEdge: the same blog with its feed cursor, ready to insert into a cached connection.',
  })
  publishBlog(
    @Arg('input', () => PublishBlogInput, { description: 'The new blog' }) input: PublishBlogInput,
    @Ctx() context: Context,
  ): Promise<Blog> {
    return publish(input, context);
  }

  @Mutation(() => BlogEdge, {
    description:
      "Publishes a blog and answers it as an edge: its cursor is the blog's place in followFeed and User.blogs, so a client can put " +
      "it at the top of a cached connection (Relay's @prependEdge, Apollo Client's cache.modify). It reaches the followers' feeds " +
      'right after. With input.idempotencyKey, a retry answers the blog of the first attempt instead of publishing a second one.',
  })
  async publishBlogEdge(
    @Arg('input', () => PublishBlogInput, { description: 'The new blog' }) input: PublishBlogInput,
    @Ctx() context: Context,
  ): Promise<BlogEdge> {
    const blog = await publish(input, context);
    // The position just after the blog: a page from there continues below it, as for any edge of a feed.
    return { cursor: encodeCursor(cursorsForPage(START, [{ id: blog.dbId, score: blog.score }])[0]), node: blog };
  }

  @Mutation(() => Blog, {
    description:
      "Edits one's own blog: the fields given replace the old ones, and editedAt is set. FORBIDDEN for another user's blog (nothing changes).",
  })
  async updateBlog(
    @Arg('input', () => UpdateBlogInput, { description: 'The blog and the fields to change' }) input: UpdateBlogInput,
    @Ctx() context: Context,
  ): Promise<Blog> {
    const viewerId = requireViewerId(context.auth);
    const { services, loaders } = context;
    const blog = await services.blogs.update(viewerId, {
      blogId: idOfType(input.blogId, 'Blog', 'blogId'),
      title: input.title,
      content: input.content,
      images: input.images,
    });
    loaders.blog.clear(blog.dbId).prime(blog.dbId, blog);
    return blog;
  }

  @Mutation(() => ID, {
    description: "Only the author may delete; the blog leaves every feed. Returns the deleted blog's id.",
  })
  async deleteBlog(
    @Arg('blogId', () => ID, { description: "Global id of one of the viewer's blogs" }) blogId: string,
    @Ctx() { auth, services }: Context,
  ): Promise<string> {
    const viewerId = requireViewerId(auth);
    await services.blogs.delete(viewerId, idOfType(blogId, 'Blog', 'blogId'));
    return blogId;
  }

  // author and isLiked answer at once what a page's hydration primed (PeekableLoader, graphql/loaders.ts).
  @FieldResolver(() => User, { description: 'Who published it' })
  author(@Root() blog: Blog, @Ctx() { loaders }: Context): Promise<User> | User {
    return loaders.user.peek(blog.authorId) ?? loadAuthor(blog, loaders);
  }

  @FieldResolver(() => Boolean, { description: 'Whether the viewer likes this blog; false for an anonymous viewer' })
  isLiked(@Root() blog: Blog, @Ctx() { auth, loaders }: Context): Promise<boolean> | boolean {
    if (optionalViewerId(auth) === null) return false;
    return loaders.likedByViewer.peek(blog.dbId) ?? loaders.likedByViewer.load(blog.dbId);
  }
}

async function loadAuthor(blog: Blog, loaders: Loaders): Promise<User> {
  const author = await loaders.user.load(blog.authorId);
  if (!author) throw new Error(`blog ${blog.dbId} has no author row (user ${blog.authorId})`);
  return author;
}

/** publishBlog and publishBlogEdge: the viewer's rate limit, then the blog (blog.service.ts). */
async function publish(input: PublishBlogInput, { auth, services }: Context): Promise<Blog> {
  const viewerId = requireViewerId(auth);
  await services.rateLimits.publish(viewerId);
  return services.blogs.publish(viewerId, input);
}
