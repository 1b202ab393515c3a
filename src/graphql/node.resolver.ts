import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { Context } from './context';
import { fromGlobalId } from '../kernel/global-id';
import { Node } from '../kernel/node';

@Resolver()
export class NodeResolver {
  @Query(() => Node, { nullable: true, description: 'Any object by its global id; null when it does not exist' })
  async node(
    @Arg('id', () => ID, { description: 'Global id of a User or a Blog' }) id: string,
    @Ctx() { loaders }: Context,
  ): Promise<Node | null> {
    const decoded = fromGlobalId(id);
    return decoded.type === 'User' ? loaders.user.load(decoded.id) : loaders.blog.load(decoded.id);
  }
}
