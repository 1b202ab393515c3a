/**
 * A deepened read: the newest `wanted` items of many authors' histories, in a few bounded rounds
 * instead of one big one. Pure: the store runs each round as one statement (a UNION ALL of one
 * index range per author asked), this file says whom to ask for how much, and what the answer is.
 *
 * One round that asks every author for `wanted` items is exact, and reads up to authors x wanted
 * rows for `wanted`: a rebuild's snapshot (801 entries) from 20 followees read about 4,500 rows on
 * bench:mixed's graph and 16,000 from 20 long histories. Rounds read a few times `wanted` (on
 * that graph 2,578 handler reads a snapshot, all its statements, against 9,066 for one round's
 * entries):
 *
 * 1. Every author is asked for its newest ceil(wanted / authors) items.
 * 2. After each round, let F be the `wanted`-th newest item read so far (none while fewer are
 *    read). The answer is at or above F: what has been read already holds `wanted` items there.
 *    An author is finished when its last read came back short (it has no more), when its last
 *    item is at or below F (nothing unread of it is above F), or when no more of it can be in
 *    the answer: if its last item is the r-th newest read so far, each item it has after that one
 *    comes after those r, so at most `wanted - r` more of it can be in the answer, and they are
 *    its next `wanted - r`. Every other author is asked for more, after its last item and down to
 *    F: its next ceil(wanted / authors asked), at most `wanted - r`.
 * 3. When no author is asked, every item at or above F has been read, and with it the answer. The
 *    last round allowed (MAX_DEEPENED_ROUNDS) asks for the whole `wanted - r`, which finishes every
 *    author it asks.
 *
 * No author is read for more than `wanted` items in all (r counts its own), so the rounds never
 * read more rows of an author than the one round did.
 */
import { compareCanonical, ScoredId } from './cursor';

/**
 * Rounds of a deepened read at most. Each is a statement; eight snapshots of bench:mixed's graph
 * took two to four.
 */
export const MAX_DEEPENED_ROUNDS = 4;

/** What a round asks of one author: its next `limit` items after `after` (null: from the top), at or above the round's floor. */
export interface Ask {
  authorId: number;
  after: ScoredId | null;
  limit: number;
}

/** What has been read of one author: its newest items, in canonical order, and whether it is finished. */
interface AuthorReading {
  items: ScoredId[];
  finished: boolean;
}

/** A deepened read in progress, round after round. */
export class DeepenedRead {
  private readonly readings: Map<number, AuthorReading>;
  private rounds = 0;

  /** `maxRounds`: MAX_DEEPENED_ROUNDS but in tests; 1 is the one round of `wanted` per author. */
  constructor(
    private readonly wanted: number,
    authorIds: readonly number[],
    private readonly maxRounds = MAX_DEEPENED_ROUNDS,
  ) {
    this.readings = new Map(authorIds.map((id) => [id, { items: [], finished: wanted <= 0 }]));
  }

  /** The next round's asks and the floor they stop at; no asks: the read is complete. */
  next(): { floor: ScoredId | null; asks: Ask[] } {
    const final = this.rounds + 1 >= this.maxRounds;
    if (this.rounds === 0) {
      const share = final ? this.wanted : Math.ceil(this.wanted / Math.max(this.readings.size, 1));
      const asks = [...this.readings]
        .filter(([, reading]) => !reading.finished)
        .map(([authorId]) => ({ authorId, after: null, limit: share }));
      return { floor: null, asks };
    }
    const merged = this.newest(Number.MAX_SAFE_INTEGER);
    const floor = merged.length >= this.wanted ? merged[this.wanted - 1] : null;
    const place = new Map(merged.map((item, i) => [item.id, i + 1]));
    const open: Array<{ authorId: number; last: ScoredId; most: number }> = [];
    for (const [authorId, reading] of this.readings) {
      if (reading.finished) continue;
      const last = reading.items[reading.items.length - 1];
      const most = this.wanted - place.get(last.id)!;
      if (most <= 0 || (floor !== null && compareCanonical(last, floor) >= 0)) reading.finished = true;
      else open.push({ authorId, last, most });
    }
    const share = Math.ceil(this.wanted / Math.max(open.length, 1));
    // The last round allowed asks for all that may be in the answer: every author it asks is finished.
    const asks = open.map(({ authorId, last, most }) => ({
      authorId,
      after: last,
      limit: final ? most : Math.min(most, share),
    }));
    return { floor, asks };
  }

  /** The answer to a round's asks: each author's items (at most its limit, in canonical order). */
  answer(asks: readonly Ask[], items: ReadonlyMap<number, readonly ScoredId[]>): void {
    this.rounds += 1;
    for (const ask of asks) {
      const reading = this.readings.get(ask.authorId)!;
      const got = items.get(ask.authorId) ?? [];
      reading.items.push(...got);
      // A short answer: the author has no more (at or above the floor). A full one of all it may
      // still give the answer leaves its last item at place `wanted` or later: next() finishes it.
      if (got.length < ask.limit) reading.finished = true;
    }
  }

  /** Rounds answered so far. */
  get roundsRead(): number {
    return this.rounds;
  }

  /** The newest `limit` items read so far, in canonical order (authors' items are distinct blogs). */
  newest(limit = this.wanted): ScoredId[] {
    return [...this.readings.values()]
      .flatMap((reading) => reading.items)
      .sort(compareCanonical)
      .slice(0, Math.max(limit, 0));
  }
}
