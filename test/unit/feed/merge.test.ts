/** The merge of feed sources against a brute-force model (property tests). */
import fc from 'fast-check';
import { FeedPosition, ScoredId, START } from '../../../src/kernel/pagination/cursor';
import {
  atOrAbove,
  certainMerge,
  certainToTheEnd,
  keysetAfter,
  mergeCanonical,
  SourceReading,
  sourceRead,
} from '../../../src/feed/merge';

// A blog has one score wherever it appears, so sources are drawn from one pool of blogs.
const pool = fc.uniqueArray(
  fc.record({ id: fc.integer({ min: 1, max: 500 }), score: fc.integer({ min: 0, max: 15 }) }),
  {
    selector: (item) => item.id,
    maxLength: 80,
  },
);

function bruteForce(lists: ScoredId[][]): ScoredId[] {
  const byId = new Map<number, ScoredId>();
  for (const item of lists.flat()) byId.set(item.id, item);
  return [...byId.values()].sort((a, b) => (a.score !== b.score ? (a.score > b.score ? -1 : 1) : a.id > b.id ? -1 : 1));
}

it('is the sorted union of its sources, each blog once', () => {
  fc.assert(
    fc.property(pool, fc.array(fc.array(fc.nat()), { minLength: 1, maxLength: 4 }), (blogs, picks) => {
      // Each source: some blogs of the pool, in canonical order (as every source answers).
      const sources = picks.map((indexes) =>
        bruteForce([indexes.filter((i) => i < blogs.length).map((i) => blogs[i])]),
      );
      expect(mergeCanonical(sources)).toEqual(bruteForce(sources));
    }),
    { numRuns: 300 },
  );
});

it('atOrAbove keeps exactly the items up to the bound in canonical order', () => {
  fc.assert(
    fc.property(pool, fc.nat(), (blogs, pick) => {
      const sorted = bruteForce([blogs]);
      if (sorted.length === 0) return;
      const bound = sorted[pick % sorted.length];
      expect(atOrAbove(sorted, bound)).toEqual(sorted.slice(0, sorted.indexOf(bound) + 1));
    }),
    { numRuns: 300 },
  );
});

// ---------------------------------------------------------------------------------------------
// certainMerge + sourceRead: a page assembled from partial sources is a prefix of the truth.
//
// The brute-force model: the truth is a canonical list of blogs; some were fanned out (the inbox
// may hold them), some are in flight (at or above the watermark, maybe not in the inbox yet),
// some are a big author's (only the pulled source has them). The inbox holds the fanned-out,
// delivered blogs at or above its floor; the recent source is MySQL above the watermark; each
// source answers "the first `limit` items after P" the slow way, as the stores do.

const world = fc
  .record({
    blogs: fc.uniqueArray(
      fc.record({
        id: fc.integer({ min: 1, max: 300 }),
        score: fc.integer({ min: 0, max: 12 }),
        kind: fc.constantFrom('pushed' as const, 'pushed' as const, 'pulled' as const),
        delivered: fc.boolean(),
      }),
      { selector: (blog) => blog.id, maxLength: 40 },
    ),
    floor: fc.integer({ min: 0, max: 13 }),
    watermark: fc.option(fc.integer({ min: 0, max: 13 }), { nil: null }),
    limit: fc.integer({ min: 1, max: 8 }),
    position: fc.record({
      score: fc.integer({ min: 0, max: 13 }),
      offset: fc.integer({ min: 0, max: 4 }),
      id: fc.integer({ min: 1, max: 301 }),
    }),
    keyset: fc.boolean(),
    start: fc.boolean(),
  })
  .map((w) => ({
    ...w,
    // Below the watermark every fan-out is done: those blogs are delivered.
    blogs: w.blogs.map((blog) =>
      w.watermark === null || blog.score < w.watermark ? { ...blog, delivered: true } : blog,
    ),
  }));

function after(items: readonly ScoredId[], from: FeedPosition): ScoredId[] {
  const sorted = bruteForce([items as ScoredId[]]);
  if (from.maxScore === null) return sorted.slice(from.offset);
  const max = from.maxScore;
  if (from.afterId !== null) {
    const id = from.afterId;
    return sorted.filter((item) => item.score < max || (item.score === max && item.id < id));
  }
  return sorted.filter((item) => item.score <= max).slice(from.offset);
}

const plain = (items: readonly ScoredId[]) => items.map(({ id, score }) => ({ id, score }));

it('certainMerge of the inbox, the pulled blogs and the span above the watermark is a prefix of the truth after P', () => {
  fc.assert(
    fc.property(world, (w) => {
      const from: FeedPosition = w.start
        ? START
        : { maxScore: w.position.score, offset: w.position.offset, afterId: w.keyset ? w.position.id : null };
      const truth = plain(after(w.blogs, from));
      const read = sourceRead(from, w.limit);
      const inbox = w.blogs.filter((blog) => blog.kind === 'pushed' && blog.delivered && blog.score >= w.floor);
      const pulled = w.blogs.filter((blog) => blog.kind === 'pulled');
      const sources: Array<SourceReading<ScoredId>> = [
        { items: plain(after(inbox, read.from).slice(0, read.limit)), limit: read.limit, floor: w.floor },
        { items: plain(after(pulled, read.from).slice(0, read.limit)), limit: read.limit, floor: null },
      ];
      if (w.watermark !== null) {
        const recent = w.blogs.filter((blog) => blog.score >= w.watermark!);
        sources.push({ items: plain(after(recent, read.from).slice(0, read.limit)), limit: read.limit, floor: null });
      }
      const certain = certainMerge(sources).slice(read.skip);
      // Safety: never an item out of place, never one missing in front of another.
      expect(certain).toEqual(truth.slice(0, certain.length));
      // Progress: with nothing cut off below the floor, every source that stopped short of its
      // limit was complete, so the page is whole.
      if (w.floor === 0 && certain.length < w.limit) expect(certain.length).toBe(Math.min(truth.length, w.limit));
      // The service skips the cold path when certainToTheEnd says so: the page must be whole then.
      if (certainToTheEnd(sources)) expect(certain.slice(0, w.limit)).toEqual(truth.slice(0, w.limit));
    }),
    { numRuns: 2000 },
  );
});

it('keysetAfter continues exactly after an item, whatever its offset hint', () => {
  fc.assert(
    fc.property(pool, fc.nat(), fc.integer({ min: 0, max: 9 }), (blogs, pick, hint) => {
      const sorted = bruteForce([blogs]);
      if (sorted.length === 0) return;
      const item = sorted[pick % sorted.length];
      expect(after(sorted, keysetAfter(item, hint))).toEqual(sorted.slice(sorted.indexOf(item) + 1));
    }),
    { numRuns: 300 },
  );
});
