/**
 * Relay connection plumbing shared by every paginated field: PageInfo, and turning a page of the
 * cursor algorithm (page.ts) into edges.
 */
import { ArgsType, Field, Int, ObjectType } from 'type-graphql';
import { encodeCursor, encodeKeysetCursor, InvalidCursorError, KeysetPosition, ScoredId } from './cursor';
import {
  DEFAULT_PAGE_SIZE,
  FeedPageArgs,
  FeedPageRequest,
  feedPageRequest,
  InvalidPageArgumentsError,
  InvalidPageSizeError,
  KeysetPage,
  KeysetPageRequest,
  keysetPageRequest,
  MAX_PAGE_SIZE,
  Page,
  PageRequest,
  pageRequest,
} from './page';
import { badUserInput } from '../errors';

@ObjectType({ simpleResolvers: true, description: 'Where a page sits in its connection' })
export class PageInfo {
  @Field(() => Boolean, {
    description:
      'Whether more items come after this page; false on a page read with last/before (the client holds what lies below it)',
  })
  hasNextPage!: boolean;

  @Field(() => Boolean, {
    description:
      'Whether more items come before this page: on a page read with last/before, whether newer items lie above it; false when paging forward with first/after',
  })
  hasPreviousPage!: boolean;

  @Field(() => String, {
    nullable: true,
    description:
      "The first edge's cursor (pass as `before` to get the page above, where a connection takes it); null for an empty page",
  })
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
  const connection = connectionOf(page.items, (_, i) => encodeCursor(page.cursors[i]), page.hasNextPage, nodeOf);
  if (!page.newer) return connection;
  // A page read upwards continues upwards from its first item, shown or hidden, as a page read
  // downwards continues from its last: a page whose items are all hidden still moves on.
  return {
    edges: connection.edges,
    pageInfo: {
      ...connection.pageInfo,
      hasPreviousPage: page.hasPreviousPage ?? false,
      startCursor: page.items.length > 0 ? encodeCursor(page.cursors[0]) : null,
    },
  };
}

/** The same for a page of a keyset list, where each item is its own position (KeysetPosition). */
export function toKeysetConnection<T extends KeysetPosition, N>(
  page: KeysetPage<T>,
  nodeOf: (item: T) => N | null,
): Connection<N> {
  return connectionOf(page.items, (item) => encodeKeysetCursor(item), page.hasNextPage, nodeOf);
}

function connectionOf<T, N>(
  items: readonly T[],
  cursorOf: (item: T, i: number) => string,
  hasNextPage: boolean,
  nodeOf: (item: T) => N | null,
): Connection<N> {
  const edges: Edge<N>[] = [];
  items.forEach((item, i) => {
    const node = nodeOf(item);
    if (node !== null) edges.push({ cursor: cursorOf(item, i), node });
  });
  const last = items.length - 1;
  return {
    edges,
    pageInfo: {
      hasNextPage,
      hasPreviousPage: false,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: last >= 0 ? cursorOf(items[last], last) : null,
    },
  };
}

/** The arguments of every connection field: forward pagination, Relay style. */
@ArgsType()
export class ConnectionArgs {
  // In the contract's order: the SDL lists an ArgsType's fields as they are declared.
  @Field(() => Int, {
    nullable: true,
    defaultValue: DEFAULT_PAGE_SIZE,
    description: `How many items to return, 0..${MAX_PAGE_SIZE}`,
  })
  first!: number | null;

  @Field(() => String, {
    nullable: true,
    description:
      "Returns the items after this cursor (an edge's cursor or pageInfo.endCursor); none for the first page",
  })
  after!: string | null;
}

type PageArgs = { first?: number | null; after?: string | null };

/** Reads `first` and `after` of a connection field; bad values are BAD_USER_INPUT naming them. */
export function readPageArgs({ first, after }: PageArgs): PageRequest {
  return asUserInput(() => pageRequest(first, after));
}

/** The same for a keyset list's connection, whose `first` defaults to `fallback`. */
export function readKeysetPageArgs({ first, after }: PageArgs, fallback = DEFAULT_PAGE_SIZE): KeysetPageRequest {
  return asUserInput(() => keysetPageRequest(first, after, fallback));
}

/**
 * followFeed's arguments, Relay style both ways, in the contract's order. No default for
 * `first` in the schema: a default would make every `last` look like "first and last both
 * given"; without either, a page down holds DEFAULT_PAGE_SIZE items.
 */
@ArgsType()
export class FeedConnectionArgs {
  @Field(() => Int, {
    nullable: true,
    description: `How many blogs to return going down (older), 0..${MAX_PAGE_SIZE}; ${DEFAULT_PAGE_SIZE} when neither first nor last is given`,
  })
  first!: number | null;

  @Field(() => String, {
    nullable: true,
    description:
      "Returns the blogs after (older than) this cursor (an edge's cursor or pageInfo.endCursor); none for the first page",
  })
  after!: string | null;

  @Field(() => Int, {
    nullable: true,
    description: `With before: how many blogs to return going up (newer), 0..${MAX_PAGE_SIZE}, the ones closest to before, still newest first; ${DEFAULT_PAGE_SIZE} when omitted`,
  })
  last!: number | null;

  @Field(() => String, {
    nullable: true,
    description:
      "Returns the blogs newer than this cursor (an edge's cursor or pageInfo.startCursor): new posts above what the client shows",
  })
  before!: string | null;
}

/** Reads followFeed's four arguments; bad values or combinations are BAD_USER_INPUT naming the argument. */
export function readFeedPageArgs(args: FeedPageArgs): FeedPageRequest {
  try {
    return feedPageRequest(args);
  } catch (error) {
    if (error instanceof InvalidPageArgumentsError) throw badUserInput(error.message, error.argument);
    if (error instanceof InvalidPageSizeError)
      throw badUserInput(error.message, error.message.startsWith('last') ? 'last' : 'first');
    if (error instanceof InvalidCursorError)
      throw badUserInput(error.message, args.before !== null && args.before !== undefined ? 'before' : 'after');
    throw error;
  }
}

function asUserInput<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof InvalidPageSizeError) throw badUserInput(error.message, 'first');
    if (error instanceof InvalidCursorError) throw badUserInput(error.message, 'after');
    throw error;
  }
}
