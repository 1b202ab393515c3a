/**
 * Relay connection plumbing shared by every paginated field: PageInfo, and turning a page of the
 * cursor algorithm (page.ts) into edges.
 */
import { ArgsType, Field, Int, ObjectType } from 'type-graphql';
import { encodeCursor, InvalidCursorError, ScoredId } from './cursor';
import { DEFAULT_PAGE_SIZE, InvalidPageSizeError, MAX_PAGE_SIZE, Page, PageRequest, pageRequest } from './page';
import { badUserInput } from '../errors';

@ObjectType({ description: 'Relay page information; pagination here is forward only (first/after)' })
export class PageInfo {
  @Field(() => Boolean)
  hasNextPage!: boolean;

  @Field(() => Boolean, { description: 'Always false: connections page forward only' })
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true })
  startCursor!: string | null;

  @Field(() => String, { nullable: true, description: 'Pass as `after` to get the next page' })
  endCursor!: string | null;
}

export interface Edge<N> {
  cursor: string;
  node: N;
}

export interface Connection<N> {
  edges: Edge<N>[];
  pageInfo: PageInfo;
}

/**
 * Builds a connection from a page. `nodeOf` may return null for an item that must not be shown
 * (deleted since it was indexed, or by an author no longer followed): that item gets no edge,
 * but it still counts for the position, so endCursor moves past it and the next page does not
 * fetch it again. A page whose items are all hidden still has an endCursor to continue from.
 */
export function toConnection<T extends ScoredId, N>(page: Page<T>, nodeOf: (item: T) => N | null): Connection<N> {
  const edges: Edge<N>[] = [];
  page.items.forEach((item, i) => {
    const node = nodeOf(item);
    if (node !== null) edges.push({ cursor: encodeCursor(page.cursors[i]), node });
  });
  const last = page.cursors[page.cursors.length - 1];
  return {
    edges,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      hasPreviousPage: false,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: last ? encodeCursor(last) : null,
    },
  };
}

/** The arguments of every connection field: forward pagination, Relay style. */
@ArgsType()
export class ConnectionArgs {
  // Declared after `first` in reverse: type-graphql lists an ArgsType's fields last-declared
  // first, and the contract's order is (first, after).
  @Field(() => String, { nullable: true })
  after!: string | null;

  @Field(() => Int, { nullable: true, defaultValue: DEFAULT_PAGE_SIZE, description: `0..${MAX_PAGE_SIZE}` })
  first!: number | null;
}

/** Reads `first` and `after` of a connection field; bad values are BAD_USER_INPUT naming them. */
export function readPageArgs({ first, after }: { first?: number | null; after?: string | null }): PageRequest {
  try {
    return pageRequest(first, after);
  } catch (error) {
    if (error instanceof InvalidPageSizeError) throw badUserInput(error.message, 'first');
    if (error instanceof InvalidCursorError) throw badUserInput(error.message, 'after');
    throw error;
  }
}
