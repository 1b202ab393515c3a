/**
 * Page slicing for cursor connections. Pure: no I/O.
 *
 * Every source (the Redis inbox, the MySQL pull query, a user's own blogs) answers the same
 * question: "the first `limit` items at position P, in canonical order". The page logic asks for
 * `first + 1` items: the extra one only tells whether a next page exists (Relay's hasNextPage)
 * without a second round trip or a COUNT.
 */
import { cursorsForPage, decodeKeysetCursor, FeedPosition, KeysetPosition, positionAfter, ScoredId } from './cursor';

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
  /** At most `first` items, in canonical order. */
  items: T[];
  /** cursors[i] is the position just after items[i]. */
  cursors: FeedPosition[];
  hasNextPage: boolean;
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
export function keysetPageRequest(first: number | null | undefined, after: string | null | undefined, fallback = DEFAULT_PAGE_SIZE): KeysetPageRequest {
  return { after: after === null || after === undefined ? null : decodeKeysetCursor(after), first: pageSize(first, fallback) };
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
export function sliceKeysetPage<T extends KeysetPosition>(request: KeysetPageRequest, fetched: readonly T[]): KeysetPage<T> {
  return { items: fetched.slice(0, request.first), hasNextPage: fetched.length > request.first };
}
