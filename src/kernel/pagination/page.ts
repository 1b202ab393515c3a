/**
 * Page slicing for cursor connections. Pure: no I/O.
 *
 * Every source (the Redis inbox, the MySQL pull query, a user's own blogs) answers the same
 * question: "the first `limit` items at position P, in canonical order". The page logic asks for
 * `first + 1` items: the extra one only tells whether a next page exists (Relay's hasNextPage)
 * without a second round trip or a COUNT.
 */
import { cursorsForPage, FeedPosition, positionAfter, ScoredId } from './cursor';

/** Default page size when a client gives no `first`. */
export const DEFAULT_PAGE_SIZE = 10;

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

/** Validates `first` and decodes `after`; throws InvalidPageSizeError or InvalidCursorError. */
export function pageRequest(first: number | null | undefined, after: string | null | undefined): PageRequest {
  const size = first ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(size) || size < 0 || size > MAX_PAGE_SIZE) {
    throw new InvalidPageSizeError(`first must be between 0 and ${MAX_PAGE_SIZE} (got ${first})`);
  }
  return { from: positionAfter(after), first: size };
}

/** How many items to fetch for a page: one more than asked, to learn hasNextPage. */
export function fetchSize(request: PageRequest): number {
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
