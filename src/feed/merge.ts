/**
 * Merging feed sources. Pure: no I/O.
 *
 * The hybrid model reads two sources (the reader's inbox and the blogs of big authors that were
 * not fanned out) and the cold path continues an inbox from MySQL. Each source answers in
 * canonical order; the feed is their union in canonical order. A blog may come from two sources
 * (an author who crossed the big-author threshold, an inbox rebuilt from MySQL): the union holds
 * it once.
 */
import { compareCanonical, ScoredId } from './cursor';

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
