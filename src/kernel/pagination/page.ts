/**
 * Page slicing for cursor connections. Pure: no I/O.
 *
 * Every source (the Redis inbox, the MySQL pull query, a user's own blogs) answers the same
 * question: "the first `limit` items at position P, in canonical order". The page logic asks for
 * `first + 1` items: the extra one only tells whether a next page exists (Relay's hasNextPage)
 * without a second round trip or a COUNT.
 */
import {
  cursorsForNewerPage,
  cursorsForPage,
  decodeCursor,
  decodeKeysetCursor,
  FeedPosition,
  KeysetPosition,
  positionAfter,
  ScoredId,
} from './cursor';

/** Default page size when a client gives no `first`. */
export const DEFAULT_PAGE_SIZE = 10;

/** Default page size of a blog's likers, as the contract says: a like ranking shows the first 5. */
export const DEFAULT_LIKERS_PAGE_SIZE = 5;

/**
 * Largest `first` a client may ask for: the common public-API limit (GitHub, Shopify use 100).
 * It bounds one page's SQL IN-list, Redis reply and response size.
 */
export const MAX_PAGE_SIZE = 100;

export class InvalidPageSizeError extends Error {
  override name = 'InvalidPageSizeError';
}

export interface PageRequest {
  from: FeedPosition;
  first: number;
}

/** Validates `first` (`fallback` when absent); throws InvalidPageSizeError. */
export function pageSize(first: number | null | undefined, fallback = DEFAULT_PAGE_SIZE): number {
  const size = first ?? fallback;
  if (!Number.isInteger(size) || size < 0 || size > MAX_PAGE_SIZE) {
    throw new InvalidPageSizeError(`first must be between 0 and ${MAX_PAGE_SIZE} (got ${first})`);
  }
  return size;
}

/** Validates `first` and decodes `after`; throws InvalidPageSizeError or InvalidCursorError. */
export function pageRequest(first: number | null | undefined, after: string | null | undefined): PageRequest {
  return { from: positionAfter(after), first: pageSize(first) };
}

/** How many items to fetch for a page: one more than asked, to learn hasNextPage. */
export function fetchSize(request: { first: number }): number {
  return request.first + 1;
}

export interface Page<T extends ScoredId> {
  /** At most `first` (or `last`) items, in canonical order. */
  items: T[];
  /** cursors[i] is the position just after items[i]. */
  cursors: FeedPosition[];
  hasNextPage: boolean;
  /** A page read upwards (last/before): whether newer items exist above its first one. Absent: false. */
  hasPreviousPage?: boolean;
  /** Whether the page was read upwards (last/before); its startCursor is then its first item's, hidden or not. */
  newer?: boolean;
}

/** Cuts what a source returned for `request` (up to first + 1 items) into a page. */
export function slicePage<T extends ScoredId>(request: PageRequest, fetched: readonly T[]): Page<T> {
  const items = fetched.slice(0, request.first);
  return {
    items,
    cursors: cursorsForPage(request.from, items),
    hasNextPage: fetched.length > request.first,
  };
}

/**
 * A page of a list ordered by (time, id) (cursor.ts, KeysetPosition): the items after `after`
 * (null: from the start). Each item is its own position, so an edge's cursor is its item's.
 */
export interface KeysetPageRequest {
  after: KeysetPosition | null;
  first: number;
}

/** Validates `first` (`fallback` when absent) and decodes `after`; throws InvalidPageSizeError or InvalidCursorError. */
export function keysetPageRequest(
  first: number | null | undefined,
  after: string | null | undefined,
  fallback = DEFAULT_PAGE_SIZE,
): KeysetPageRequest {
  return {
    after: after === null || after === undefined ? null : decodeKeysetCursor(after),
    first: pageSize(first, fallback),
  };
}

/** What a keyset source is asked for one list (`of`: its owner, say the followed user): the first `limit` items after `after`. */
export interface KeysetFetch {
  of: number;
  after: KeysetPosition | null;
  limit: number;
}

/** The fetch of one page: `first + 1` items, to learn hasNextPage. */
export function keysetFetch(of: number, request: KeysetPageRequest): KeysetFetch {
  return { of, after: request.after, limit: fetchSize(request) };
}

export interface KeysetPage<T extends KeysetPosition> {
  /** At most `first` items, in the list's order; each is the position just after itself. */
  items: T[];
  hasNextPage: boolean;
}

/** Cuts what a source returned for `request` (up to first + 1 items) into a page. */
export function sliceKeysetPage<T extends KeysetPosition>(
  request: KeysetPageRequest,
  fetched: readonly T[],
): KeysetPage<T> {
  return { items: fetched.slice(0, request.first), hasNextPage: fetched.length > request.first };
}

/**
 * A page read upwards: the `last` items newer than `before` (a keyset position that names its
 * blog), the ones closest to it, shown newest first like every page.
 */
export interface NewerPageRequest {
  before: FeedPosition & { maxScore: number; afterId: number };
  last: number;
}

/** What a followFeed request asks for: a page down from `after` (or the top), or a page up from `before`. */
export type FeedPageRequest = ({ direction: 'forward' } & PageRequest) | ({ direction: 'backward' } & NewerPageRequest);

/** A bad combination of first/after/last/before, naming the argument at fault. */
export class InvalidPageArgumentsError extends Error {
  override name = 'InvalidPageArgumentsError';
  constructor(
    message: string,
    readonly argument: string,
  ) {
    super(message);
  }
}

/** Decodes `before` into a keyset position (every cursor this API issues names its blog). */
export function positionBefore(before: string): NewerPageRequest['before'] {
  const position = decodeCursor(before);
  if (position.maxScore === null || position.afterId === null)
    throw new Error('decodeCursor returned a position without a blog');
  return { maxScore: position.maxScore, offset: position.offset, afterId: position.afterId };
}

export interface FeedPageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/**
 * Reads Relay's four arguments: first/after pages down (first defaults to DEFAULT_PAGE_SIZE),
 * last/before pages up (last defaults to DEFAULT_PAGE_SIZE). `first` with `last`, `after` with
 * `before`, and `last` without `before` (the oldest end of a feed is not a page anyone asks
 * for) are refused. Throws InvalidPageArgumentsError, InvalidPageSizeError (first or last out of
 * range: the message names which) or InvalidCursorError.
 */
export function feedPageRequest(args: FeedPageArgs): FeedPageRequest {
  const has = (value: unknown) => value !== null && value !== undefined;
  if (has(args.first) && has(args.last)) {
    throw new InvalidPageArgumentsError(
      `pass first (a page down) or last (a page up), not both (got first: ${args.first}, last: ${args.last})`,
      'last',
    );
  }
  if (has(args.after) && has(args.before)) {
    throw new InvalidPageArgumentsError('pass after (a page down) or before (a page up), not both', 'before');
  }
  if (has(args.first) && has(args.before)) {
    throw new InvalidPageArgumentsError('before pages up and takes last, not first', 'first');
  }
  if (has(args.last) && has(args.after)) {
    throw new InvalidPageArgumentsError('after pages down and takes first, not last', 'last');
  }
  if (args.before !== null && args.before !== undefined) {
    return { direction: 'backward', before: positionBefore(args.before), last: lastSize(args.last) };
  }
  if (has(args.last)) {
    throw new InvalidPageArgumentsError(
      'last needs before: pass the cursor of the newest item you hold to get what is newer',
      'last',
    );
  }
  return { direction: 'forward', ...pageRequest(args.first, args.after) };
}

/** Validates `last` (DEFAULT_PAGE_SIZE when absent); throws InvalidPageSizeError naming last. */
export function lastSize(last: number | null | undefined): number {
  const size = last ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(size) || size < 0 || size > MAX_PAGE_SIZE) {
    throw new InvalidPageSizeError(`last must be between 0 and ${MAX_PAGE_SIZE} (got ${last})`);
  }
  return size;
}

/** How many items to fetch for a page up: one more than asked, to learn hasPreviousPage. */
export function newerFetchSize(request: { last: number }): number {
  return request.last + 1;
}

/**
 * Cuts what a source returned for a page up into a page: `fetched` holds up to last + 1 items
 * newer than `before`, closest to it first (ascending). The page is the `last` closest ones,
 * newest first; hasPreviousPage says whether more lie above.
 */
export function sliceNewerPage<T extends ScoredId>(request: NewerPageRequest, fetched: readonly T[]): Page<T> {
  const items = fetched.slice(0, request.last).reverse();
  return {
    items,
    cursors: cursorsForNewerPage(items),
    hasNextPage: false,
    hasPreviousPage: fetched.length > request.last,
    newer: true,
  };
}
