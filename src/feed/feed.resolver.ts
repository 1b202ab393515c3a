import { Arg, Ctx, Int, Query, Resolver } from 'type-graphql';
import { BlogConnection } from '../blog/blog.types';
import { readPageArgs } from '../kernel/pagination/connection';
import { connectionCost } from '../graphql/limits';
import { Context, requireViewerId } from '../graphql/context';

@Resolver()
export class FeedResolver {
  @Query(() => BlogConnection, {
    complexity: connectionCost,
    description: 'Blogs of the users the viewer follows, newest first (ties: larger blog id first). Requires a viewer.',
  })
  followFeed(
    @Arg('first', () => Int, { nullable: true, defaultValue: 10, description: '0..100' }) first: number,
    @Arg('after', () => String, { nullable: true }) after: string | null,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<BlogConnection> {
    const viewerId = requireViewerId(auth);
    return services.feed.followFeed(viewerId, readPageArgs(first, after), loaders);
  }
}
