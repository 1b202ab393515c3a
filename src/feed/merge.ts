/**
 * Merging feed sources. Pure: no I/O.
 *
 * A page of an inbox model is read from up to three sources at once, each answering "the first
 * `limit` items at position P, in canonical order":
 * - the reader's inbox, complete for every score at or above its floor;
 * - the blogs of big authors that were not fanned out (hybrid), complete;
 * - the span above the fan-out watermark, from MySQL, complete: blogs whose fan-out is still in
 *   flight may be missing from any inbox there.
 * The feed is their union in canonical order. A blog may come from two sources (an inbox that
 * already got an in-flight blog, an author who crossed the big-author threshold): the union
 * holds it once.
 *
 * The union is only certain as far down as every source is: a source that returned all `limit`
 * items it was asked for may go on below its last item, and the inbox knows nothing below its
 * floor. `certainMerge` keeps what lies at or above the highest of those bounds; the caller
 * continues below from MySQL (the cold path).
 */
import { compareCanonical, FeedPosition, ScoredId } from '../kernel/pagination/cursor';

/** The union of sorted lists, in canonical order, each blog once. */
export function mergeCanonical<T extends ScoredId>(lists: ReadonlyArray<readonly T[]>): T[] {
  const seen = new Set<number>();
  const merged: T[] = [];
  for (const item of lists.flat().sort(compareCanonical)) {
    if (seen.has(item.id)) continue;
    seen.add(item.id);
    merged.push(item);
  }
  return merged;
}

/** The items that come at or before `bound` in canonical order. */
export function atOrAbove<T extends ScoredId>(items: readonly T[], bound: ScoredId): T[] {
  return items.filter((item) => compareCanonical(item, bound) <= 0);
}

/** What one source answered for a read of `limit` items. */
export interface SourceReading<T extends ScoredId> {
  items: readonly T[];
  limit: number;
  /**
   * The source holds every item whose score is at least this (the inbox's floor); null when it
   * holds every item of its kind all the way down.
   */
  floor: number | null;
}

/**
 * How far down a source is certain: its last item when it returned a full `limit` (it may go on
 * below), else its floor (as the point (floor, 0): every id of score `floor` is above it), else
 * nothing (null: certain all the way down).
 */
export function certainDownTo<T extends ScoredId>(source: SourceReading<T>): ScoredId | null {
  if (source.limit > 0 && source.items.length >= source.limit) return source.items[source.items.length - 1];
  return source.floor === null ? null : { score: source.floor, id: 0 };
}

/** The union of the sources, cut at the highest bound that any of them is certain to. */
export function certainMerge<T extends ScoredId>(sources: ReadonlyArray<SourceReading<T>>): T[] {
  let bound: ScoredId | null = null;
  for (const source of sources) {
    const own = certainDownTo(source);
    if (own !== null && (bound === null || compareCanonical(own, bound) < 0)) bound = own;
  }
  const merged = mergeCanonical(sources.map((source) => source.items));
  return bound === null ? merged : atOrAbove(merged, bound);
}

/**
 * Whether the union is certain all the way down: every source returned less than it was asked
 * for and holds everything below (an inbox of floor 0 holds every score). A short page is then
 * the end of the feed, and no cold path needs to look below it.
 */
export function certainToTheEnd<T extends ScoredId>(sources: ReadonlyArray<SourceReading<T>>): boolean {
  return sources.every((source) => {
    const own = certainDownTo(source);
    return own === null || own.score <= 0;
  });
}

/** How to read each source so that their union can be cut at `from` with `limit` items. */
export interface SourceRead {
  from: FeedPosition;
  limit: number;
  /** Items of the union to drop before the page starts. */
  skip: number;
}

/**
 * A keyset position (with an id) means the same in every source: each reads `limit` items after
 * it. A position without an id (a cursor issued before ids) counts `offset` items of the
 * *union's* tie group, which no single source can skip on its own: each source then reads from
 * the top of the group, `offset + limit` items, and the union drops `offset`.
 */
export function sourceRead(from: FeedPosition, limit: number): SourceRead {
  if (from.afterId !== null || from.maxScore === null || from.offset === 0) return { from, limit, skip: 0 };
  return { from: { maxScore: from.maxScore, offset: 0, afterId: null }, limit: from.offset + limit, skip: from.offset };
}

/** The keyset position just after `item` (the offset is only a hint there; 1 is always valid). */
export function keysetAfter(item: ScoredId, offsetHint = 1): FeedPosition {
  return { maxScore: item.score, offset: Math.max(1, offsetHint), afterId: item.id };
}
