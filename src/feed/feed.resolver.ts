import { Arg, Args, Ctx, Int, Query, Resolver, Root, Subscription } from 'type-graphql';
import type { SubscribeResolverData } from 'type-graphql';
import { BlogConnection, BlogEdge } from '../blog/blog.types';
import { blogConnection } from '../graphql/blog-connection';
import { Context, requireViewerId } from '../graphql/context';
import { connectionCost } from '../graphql/limits';
import { clearLoaders, primeLoaders } from '../graphql/loaders';
import { badUserInput, notFound } from '../kernel/errors';
import { toGlobalId } from '../kernel/global-id';
import { FeedConnectionArgs, readFeedPageArgs } from '../kernel/pagination/connection';
import { cursorsForPage, encodeCursor, InvalidCursorError, ScoredId, START } from '../kernel/pagination/cursor';
import { positionBefore } from '../kernel/pagination/page';
import { LiveRemoval, MAX_RESUME_BLOGS } from './feed.live';
import { FeedRemoval } from './feed.types';
import { MAX_NEW_COUNT } from './feed.service';

@Resolver()
export class FeedResolver {
  @Query(() => BlogConnection, {
    complexity: connectionCost,
    description:
      'Blogs of the users the viewer follows, newest first (ties: larger blog id first). Forward with first/after; newer than a cursor with last/before ' +
      '(the blogs closest to before, still newest first; pageInfo.hasPreviousPage says whether more newer ones lie above). Requires a viewer.',
  })
  async followFeed(
    @Args(() => FeedConnectionArgs) args: FeedConnectionArgs,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<BlogConnection> {
    const viewerId = requireViewerId(auth);
    const request = readFeedPageArgs(args);
    const page =
      request.direction === 'forward'
        ? await services.feed.page(viewerId, request)
        : await services.feed.newerPage(viewerId, request);
    // The page's blogs, authors, likes and follow checks in one statement, ready in the loaders.
    const ids = page.items.map((item) => item.id);
    primeLoaders(loaders, ids, await services.blogs.forViewer(viewerId, ids));
    return blogConnection(page, loaders, { followedAuthorsOnly: true });
  }

  @Query(() => Int, {
    description: `How many blogs of the follow feed are newer than before, counted up to max (0..${MAX_NEW_COUNT}): for a "new posts" banner. Requires a viewer.`,
  })
  async followFeedNewCount(
    @Arg('before', () => String, {
      description:
        "An edge's cursor, usually the newest blog the client shows (pageInfo.startCursor of its first page)",
    })
    before: string,
    @Arg('max', () => Int, {
      nullable: true,
      defaultValue: MAX_NEW_COUNT,
      description: `Stop counting at this many, 0..${MAX_NEW_COUNT}`,
    })
    max: number | null,
    @Ctx() { auth, services }: Context,
  ): Promise<number> {
    return services.feed.newCount(requireViewerId(auth), before, max ?? MAX_NEW_COUNT);
  }

  @Subscription(() => BlogEdge, {
    description:
      "Each blog as it enters the viewer's follow feed, over graphql-ws at the same /graphql address. " +
      'With after (the cursor of the newest blog the client holds), every blog newer than it comes first, oldest of them first so that ' +
      'the client prepends each edge as it comes, then live ones in arrival order, none missed or repeated. ' +
      `More than ${MAX_RESUME_BLOGS} newer blogs end the subscription with RESUME_GAP_TOO_LARGE: refetch the first page of followFeed and subscribe again with its newest cursor. ` +
      'The connection_init payload carries { "authorization": "Bearer <token>" }.',
    subscribe: ({ args, context }: SubscribeResolverData<unknown, { after?: string | null }, Context>) => {
      const viewerId = requireViewerId(context.auth);
      return context.services.liveFeed.subscribe(viewerId, readResumeCursor(args.after));
    },
  })
  async followFeedAdded(
    @Root() blog: ScoredId,
    @Ctx() { loaders }: Context,
    @Arg('after', () => String, {
      nullable: true,
      description:
        "The cursor of the newest blog the client holds (its first edge's cursor): the blogs newer than it come first",
    })
    _after?: string | null,
  ): Promise<BlogEdge> {
    // One context serves the whole subscription: what its loaders remember of the last event
    // (an author's counts, a like) is stale by now.
    clearLoaders(loaders);
    const node = await loaders.blog.load(blog.id);
    if (!node) throw notFound(`blog ${blog.id} was deleted as it arrived`);
    // The position just after this blog: a followFeed page from there continues below it.
    return { cursor: encodeCursor(cursorsForPage(START, [blog])[0]), node };
  }

  @Subscription(() => FeedRemoval, {
    description:
      "Each blog that leaves the viewer's follow feed while the client watches it: deleted, or its author unfollowed (the author's newest blogs, " +
      'one event each). Over graphql-ws, as followFeedAdded.',
    subscribe: ({ context }: SubscribeResolverData<unknown, unknown, Context>) =>
      context.services.liveFeed.subscribeRemovals(requireViewerId(context.auth)),
  })
  followFeedRemoved(@Root() removal: LiveRemoval): FeedRemoval {
    return { blogId: toGlobalId('Blog', removal.blogId) };
  }
}

/** followFeedAdded's `after`: a keyset point, or null (live only); a bad cursor is BAD_USER_INPUT naming after. */
function readResumeCursor(after: string | null | undefined): ScoredId | null {
  if (after === null || after === undefined) return null;
  try {
    const position = positionBefore(after);
    return { score: position.maxScore, id: position.afterId };
  } catch (error) {
    if (error instanceof InvalidCursorError) throw badUserInput(error.message, 'after');
    throw error;
  }
}
