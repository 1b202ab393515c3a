/**
 * The deepened read (src/kernel/pagination/deepened.ts) against a brute-force model: authors with
 * random histories (small scores, so ties within a millisecond are common), a store that answers
 * each round the obvious way, and the answer compared with sorting every item. The model's
 * comparator is its own: it shares no code with the module under test.
 */
import fc from 'fast-check';
import { ScoredId } from '../../../src/kernel/pagination/cursor';
import { deepenings, firstRoundShare, newestOfRounds } from '../../../src/kernel/pagination/deepened';

/** Newest first; within a score the larger id first. */
const modelOrder = (a: ScoredId, b: ScoredId) => (a.score !== b.score ? b.score - a.score : b.id - a.id);
/** Whether `a` comes strictly after `b` in that order. */
const comesAfter = (a: ScoredId, b: ScoredId) => a.score < b.score || (a.score === b.score && a.id < b.id);

const world = fc.record({
  blogs: fc.uniqueArray(fc.record({ id: fc.integer({ min: 1, max: 500 }), score: fc.integer({ min: 0, max: 12 }) }), {
    selector: (item) => item.id,
    maxLength: 90,
  }),
  authors: fc.integer({ min: 1, max: 8 }),
  owners: fc.array(fc.nat(), { maxLength: 90 }),
  wanted: fc.integer({ min: 1, max: 40 }),
});

function historiesOf({ blogs, authors, owners }: { blogs: ScoredId[]; authors: number; owners: number[] }) {
  const histories = new Map<number, ScoredId[]>();
  for (let author = 1; author <= authors; author++) histories.set(author, []);
  blogs.forEach((blog, i) => histories.get(((owners[i] ?? i) % authors) + 1)!.push(blog));
  for (const items of histories.values()) items.sort(modelOrder);
  return histories;
}

/** What the store answers: an author's items after `after`, at or above `floor`, at most `limit`. */
function read(history: ScoredId[], after: ScoredId | null, floor: ScoredId | null, limit: number): ScoredId[] {
  return history
    .filter((item) => after === null || comesAfter(item, after))
    .filter((item) => floor === null || !comesAfter(item, floor))
    .slice(0, limit);
}

it('finds the newest `wanted` of all, and never reads more rows of an author than one round of `wanted` would', () => {
  fc.assert(
    fc.property(world, (spec) => {
      const histories = historiesOf(spec);
      const { wanted } = spec;
      const share = firstRoundShare(wanted, histories.size);
      const first = new Map([...histories].map(([author, items]) => [author, read(items, null, null, share)]));
      const { floor, deepen } = deepenings(wanted, share, first);
      const second = deepen.map((d) => ({
        author: d.authorId,
        items: read(histories.get(d.authorId)!, d.after, floor, d.limit),
      }));

      const everything = [...histories.values()].flat().sort(modelOrder);
      expect(newestOfRounds(wanted, [...first.values(), ...second.map((s) => s.items)])).toEqual(
        everything.slice(0, wanted),
      );
      for (const [author, items] of histories) {
        const rows = first.get(author)!.length + (second.find((s) => s.author === author)?.items.length ?? 0);
        expect(rows).toBeLessThanOrEqual(Math.min(items.length, wanted));
      }
      // An author is asked again at most once, and only when it filled its share.
      expect(new Set(deepen.map((d) => d.authorId)).size).toBe(deepen.length);
      for (const d of deepen) expect(first.get(d.authorId)!.length).toBe(share);
    }),
    { numRuns: 1000 },
  );
});

it('needs no second round when the newest items are spread evenly over the authors', () => {
  // 20 authors of 100 blogs each, interleaved in time: the first round of 41 each holds the 801.
  const first = new Map<number, ScoredId[]>();
  for (let author = 1; author <= 20; author++)
    first.set(
      author,
      Array.from({ length: 41 }, (_, i) => ({ id: i * 20 + author, score: 100_000 - i * 20 - author })),
    );
  expect(firstRoundShare(801, 20)).toBe(41);
  expect(deepenings(801, 41, first).deepen).toEqual([]);
});

it('asks the one author that crowds the top for the rest, down to the floor', () => {
  // Author 1 published the newest blogs; authors 2 and 3 two each, long ago.
  const first = new Map<number, ScoredId[]>([
    [1, [100, 99, 98].map((score) => ({ id: score, score }))],
    [
      2,
      [
        { id: 2, score: 2 },
        { id: 1, score: 1 },
      ],
    ],
    [
      3,
      [
        { id: 4, score: 4 },
        { id: 3, score: 3 },
      ],
    ],
  ]);
  const { floor, deepen } = deepenings(8, firstRoundShare(8, 3), first);
  expect(floor).toBeNull(); // 7 items in the first round: fewer than 8; 2 and 3 came back short
  expect(deepen).toEqual([{ authorId: 1, after: { id: 98, score: 98 }, limit: 5 }]);
  // Two each for 5: the floor is the 5th newest (2); author 2 reached it, 1 and 3 stopped above.
  const withFloor = deepenings(5, 2, new Map([...first].map(([author, items]) => [author, items.slice(0, 2)])));
  expect(withFloor).toEqual({
    floor: { id: 2, score: 2 },
    deepen: [
      { authorId: 1, after: { id: 99, score: 99 }, limit: 3 },
      { authorId: 3, after: { id: 3, score: 3 }, limit: 3 },
    ],
  });
});
