import { Args, Ctx, Query, Resolver } from 'type-graphql';
import { BlogConnection } from '../blog/blog.types';
import { blogConnection } from '../graphql/blog-connection';
import { Context, requireViewerId } from '../graphql/context';
import { connectionCost } from '../graphql/limits';
import { primeLoaders } from '../graphql/loaders';
import { ConnectionArgs, readPageArgs } from '../kernel/pagination/connection';

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
}
