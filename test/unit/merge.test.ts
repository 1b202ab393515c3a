/** mergeCanonical and atOrAbove against a brute-force model (property tests). */
import fc from 'fast-check';
import { ScoredId } from '../../src/feed/cursor';
import { atOrAbove, mergeCanonical } from '../../src/feed/merge';

// A blog has one score wherever it appears, so sources are drawn from one pool of blogs.
const pool = fc.uniqueArray(fc.record({ id: fc.integer({ min: 1, max: 500 }), score: fc.integer({ min: 0, max: 15 }) }), {
  selector: (item) => item.id,
  maxLength: 80,
});

function bruteForce(lists: ScoredId[][]): ScoredId[] {
  const byId = new Map<number, ScoredId>();
  for (const item of lists.flat()) byId.set(item.id, item);
  return [...byId.values()].sort((a, b) => (a.score !== b.score ? (a.score > b.score ? -1 : 1) : a.id > b.id ? -1 : 1));
}

it('is the sorted union of its sources, each blog once', () => {
  fc.assert(
    fc.property(pool, fc.array(fc.array(fc.nat()), { minLength: 1, maxLength: 4 }), (blogs, picks) => {
      // Each source: some blogs of the pool, in canonical order (as every source answers).
      const sources = picks.map((indexes) => bruteForce([indexes.filter((i) => i < blogs.length).map((i) => blogs[i])]));
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
