import { Arg, Args, Ctx, Int, Query, Resolver, Root, Subscription } from 'type-graphql';
import type { SubscribeResolverData } from 'type-graphql';
import { BlogConnection, BlogEdge } from '../blog/blog.types';
import { blogConnection } from '../graphql/blog-connection';
import { Context, requireViewerId } from '../graphql/context';
import { connectionCost } from '../graphql/limits';
import { clearLoaders, primeLoaders } from '../graphql/loaders';
import { notFound } from '../kernel/errors';
import { FeedConnectionArgs, readFeedPageArgs } from '../kernel/pagination/connection';
import { cursorsForPage, encodeCursor, START } from '../kernel/pagination/cursor';
import type { LiveBlog } from './feed.live';
import { MAX_NEW_COUNT } from './feed.service';

@Resolver()
export class FeedResolver {
  @Query(() => BlogConnection, {
    complexity: connectionCost,
    description:
      'Blogs of the users the viewer follows, newest first (ties: larger blog id first). Forward with first/after; newer than a cursor with last/before ' +
      '(the blogs closest to before, still newest first; pageInfo.hasPreviousPage says whether more newer ones lie above). Requires a viewer.',
  })
  async followFeed(@Args(() => FeedConnectionArgs) args: FeedConnectionArgs, @Ctx() { auth, services, loaders }: Context): Promise<BlogConnection> {
    const viewerId = requireViewerId(auth);
    const request = readFeedPageArgs(args);
    const page = request.direction === 'forward' ? await services.feed.page(viewerId, request) : await services.feed.newerPage(viewerId, request);
    // The page's blogs, authors, likes and follow checks in one statement, ready in the loaders.
    const ids = page.items.map((item) => item.id);
    primeLoaders(loaders, ids, await services.blogs.forViewer(viewerId, ids));
    return blogConnection(page, loaders, { followedAuthorsOnly: true });
  }

  @Query(() => Int, {
    description: `How many blogs of the follow feed are newer than before, counted up to max (0..${MAX_NEW_COUNT}): for a "new posts" banner. Requires a viewer.`,
  })
  async followFeedNewCount(
    @Arg('before', () => String, { description: "An edge's cursor, usually the newest blog the client shows (pageInfo.startCursor of its first page)" })
    before: string,
    @Arg('max', () => Int, { nullable: true, defaultValue: MAX_NEW_COUNT, description: `Stop counting at this many, 0..${MAX_NEW_COUNT}` }) max: number | null,
    @Ctx() { auth, services }: Context,
  ): Promise<number> {
    return services.feed.newCount(requireViewerId(auth), before, max ?? MAX_NEW_COUNT);
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
