import { Args, Ctx, Query, Resolver, Root, Subscription } from 'type-graphql';
import type { SubscribeResolverData } from 'type-graphql';
import { BlogConnection, BlogEdge } from '../blog/blog.types';
import { blogConnection } from '../graphql/blog-connection';
import { Context, requireViewerId } from '../graphql/context';
import { connectionCost } from '../graphql/limits';
import { clearLoaders, primeLoaders } from '../graphql/loaders';
import { notFound } from '../kernel/errors';
import { ConnectionArgs, readPageArgs } from '../kernel/pagination/connection';
import { cursorsForPage, encodeCursor, START } from '../kernel/pagination/cursor';
import type { LiveBlog } from './feed.live';

@Resolver()
export class FeedResolver {
  @Query(() => BlogConnection, {
    complexity: connectionCost,
    description: 'Blogs of the users the viewer follows, newest first (ties: larger blog id first). Requires a viewer.',
  })
  async followFeed(@Args(() => ConnectionArgs) args: ConnectionArgs, @Ctx() { auth, services, loaders }: Context): Promise<BlogConnection> {
    const viewerId = requireViewerId(auth);
    const page = await services.feed.page(viewerId, readPageArgs(args));
    // The page's blogs, authors, likes and follow checks in one statement, ready in the loaders.
    const ids = page.items.map((item) => item.id);
    primeLoaders(loaders, ids, await services.blogs.forViewer(viewerId, ids));
    return blogConnection(page, loaders, { followedAuthorsOnly: true });
  }

  @Subscription(() => BlogEdge, {
    description:
      "Each blog as it enters the viewer's follow feed, in arrival order, over graphql-ws at the same /graphql address. " +
      'Requires a viewer: the connection_init payload carries { "authorization": "Bearer <token>" }.',
    subscribe: ({ context }: SubscribeResolverData<unknown, unknown, Context>) => context.services.liveFeed.subscribe(requireViewerId(context.auth)),
  })
  async followFeedAdded(@Root() blog: LiveBlog, @Ctx() { loaders }: Context): Promise<BlogEdge> {
    // One context serves the whole subscription: what its loaders remember of the last event
    // (an author's counts, a like) is stale by now.
    clearLoaders(loaders);
    const node = await loaders.blog.load(blog.id);
    if (!node) throw notFound(`blog ${blog.id} was deleted as it arrived`);
    // The position just after this blog: a followFeed page from there continues below it.
    return { cursor: encodeCursor(cursorsForPage(START, [blog])[0]), node };
  }
}
