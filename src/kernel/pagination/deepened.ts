/**
 * A deepened read: the newest `wanted` items of many authors' histories, in two bounded rounds
 * instead of one. Pure: the store runs each round as one statement (a UNION ALL of one index range
 * per author), this file says what to ask and what the answer is.
 *
 * One round asks every author for `wanted` items: it is exact, and reads up to authors x wanted
 * rows for `wanted`. A rebuild's snapshot (801 entries) from 20 followees read about 4,200 rows on
 * bench:mixed's graph, and 16,000 from 20 long histories. Two rounds read about `wanted`, and a
 * little more where one author's blogs crowd the top:
 *
 * 1. Every author is asked for its newest `share` = ceil(wanted / authors) items.
 * 2. Let F be the `wanted`-th newest item of the first round. The newest `wanted` of all items are
 *    at or above F (the first round alone holds `wanted` items at or above F). An author whose
 *    first round came back short has nothing more; one whose last item is at or below F has
 *    nothing unread at or above F. Every other author may: it is asked for its items after its
 *    last one, down to F. Now every item at or above F has been read, and with it the answer.
 *    No author gives the answer more than `wanted` items, so the second ask is for at most
 *    `wanted - share` more: never more rows of an author than the one round would read.
 * When the first round holds fewer than `wanted` items there is no F: each author that filled its
 * share is asked for up to `wanted - share` more, which is the one round again for those authors.
 */
import { compareCanonical, ScoredId } from './cursor';

/**
 * What the second round asks of one author: the items after `after` (the last of its first
 * round), at or above the round's floor, at most `limit`.
 */
export interface Deepening {
  authorId: number;
  after: ScoredId;
  limit: number;
}

/** The first round's items per author: enough that the round holds `wanted` when every author has that many. */
export function firstRoundShare(wanted: number, authors: number): number {
  return authors === 0 ? 0 : Math.ceil(wanted / authors);
}

/**
 * The second round, given the first (each author's newest `share` items, in canonical order):
 * the floor F (null: none) and the authors to read further.
 */
export function deepenings(
  wanted: number,
  share: number,
  firstRound: ReadonlyMap<number, readonly ScoredId[]>,
): { floor: ScoredId | null; deepen: Deepening[] } {
  const merged = newestOfRounds(wanted, [...firstRound.values()]);
  const floor = wanted > 0 && merged.length >= wanted ? merged[wanted - 1] : null;
  const deepen: Deepening[] = [];
  if (share >= wanted) return { floor, deepen };
  for (const [authorId, items] of firstRound) {
    if (items.length < share) continue;
    const last = items[items.length - 1];
    if (floor !== null && compareCanonical(last, floor) >= 0) continue;
    deepen.push({ authorId, after: last, limit: wanted - share });
  }
  return { floor, deepen };
}

/** The newest `wanted` items of both rounds, in canonical order (authors' items are distinct blogs). */
export function newestOfRounds<T extends ScoredId>(wanted: number, rounds: ReadonlyArray<readonly T[]>): T[] {
  return rounds.flat().sort(compareCanonical).slice(0, Math.max(wanted, 0));
}
