import { Arg, Args, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { BlogConnection } from '../blog/blog.types';
import { ConnectionArgs, readPageArgs } from '../kernel/pagination/connection';
import { blogConnection } from '../graphql/blog-connection';
import { primeLoaders } from '../graphql/loaders';
import { Context, optionalViewerId, requireViewerId } from '../graphql/context';
import { idOfType } from '../kernel/global-id';
import { connectionCost } from '../graphql/limits';
import { UpdateProfileInput, User, UserConnection } from './user.types';

@Resolver(() => User)
export class UserResolver {
  @Query(() => User, { nullable: true, description: 'The signed-in user; null when anonymous' })
  async viewer(@Ctx() { auth, loaders }: Context): Promise<User | null> {
    const viewerId = optionalViewerId(auth);
    return viewerId === null ? null : loaders.user.load(viewerId);
  }

  @Query(() => User, { nullable: true, description: 'The user with this global id; null when there is none' })
  user(
    @Arg('id', () => ID, { description: 'Global id of a user (User.id)' }) id: string,
    @Ctx() { loaders }: Context,
  ): Promise<User | null> {
    return loaders.user.load(idOfType(id, 'User', 'id'));
  }

  @Query(() => UserConnection, {
    complexity: connectionCost,
    description: 'Users whose nickName starts with search (case- and width-insensitive), best match first',
  })
  async users(
    @Arg('search', () => String, {
      description:
        'The start of a nickName, 1..32 characters. Matched without regard to case or width ("ＡＬ" finds "alice"); ' +
        'the exact match comes first, then shorter nickNames, then alphabetical order.',
    })
    search: string,
    @Args(() => ConnectionArgs) args: ConnectionArgs,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<UserConnection> {
    const page = await services.users.search(search, args.first, args.after, optionalViewerId(auth));
    for (const edge of page.edges) loaders.user.prime(edge.user.dbId, edge.user);
    const edges = page.edges.map(({ cursor, user }) => ({ cursor, node: user }));
    return {
      edges,
      pageInfo: {
        hasNextPage: page.hasNextPage,
        hasPreviousPage: false,
        startCursor: edges[0]?.cursor ?? null,
        endCursor: edges.at(-1)?.cursor ?? null,
      },
    };
  }

  @Mutation(() => User, { description: "Changes one's own nickName or icon" })
  async updateProfile(
    @Arg('input', () => UpdateProfileInput, { description: 'The fields to change; omitted ones stay as they are' })
    input: UpdateProfileInput,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<User> {
    const user = await services.users.updateProfile(requireViewerId(auth), input);
    loaders.user.clear(user.dbId).prime(user.dbId, user);
    return user;
  }

  @FieldResolver(() => Int)
  async followerCount(@Root() user: User, @Ctx() { loaders }: Context): Promise<number> {
    return (await counted(user, loaders)).followerCount;
  }

  @FieldResolver(() => Int)
  async followingCount(@Root() user: User, @Ctx() { loaders }: Context): Promise<number> {
    return (await counted(user, loaders)).followingCount;
  }

  @FieldResolver(() => Boolean, { description: 'Whether the viewer follows this user; false for an anonymous viewer' })
  isFollowedByViewer(@Root() user: User, @Ctx() { auth, loaders }: Context): Promise<boolean> | boolean {
    return optionalViewerId(auth) === null ? false : loaders.followedByViewer.load(user.dbId);
  }

  @FieldResolver(() => BlogConnection, {
    complexity: connectionCost,
    description: "The user's own blogs, newest first (ties: larger blog id first)",
  })
  async blogs(
    @Root() user: User,
    @Args(() => ConnectionArgs) args: ConnectionArgs,
    @Ctx() { auth, services, loaders }: Context,
  ): Promise<BlogConnection> {
    const page = await services.blogs.pageOfAuthor(user.dbId, readPageArgs(args));
    // The blogs, like counts and the viewer's likes as a feed page gets them (the hydration
    // cache: no SQL when warm). Not its follow checks: those are the feed's (muted followees
    // left out), and isFollowedByViewer means the follow itself.
    const ids = page.items.map((item) => item.id);
    const found = await services.blogs.forViewer(optionalViewerId(auth), ids);
    primeLoaders(loaders, ids, { ...found, followed: null });
    return blogConnection(page, loaders, { followedAuthorsOnly: false });
  }
}

/** The user with its counts: itself, or (a user from the hydration cache has none) read through the loader of whole rows. */
async function counted(user: User, loaders: Context['loaders']): Promise<User> {
  if (user.counted) return user;
  const row = await loaders.userRow.load(user.dbId);
  if (!row) throw new Error(`user ${user.dbId} has no row`);
  return row;
}
