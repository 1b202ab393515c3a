/**
 * The deepened read (src/kernel/pagination/deepened.ts) against a brute-force model: authors with
 * random histories (small scores, so ties within a millisecond are common), a store that answers
 * each round the obvious way, and the answer compared with sorting every item. The model's
 * comparator is its own: it shares no code with the module under test.
 */
import fc from 'fast-check';
import { ScoredId } from '../../../src/kernel/pagination/cursor';
import { DeepenedRead, MAX_DEEPENED_ROUNDS } from '../../../src/kernel/pagination/deepened';

/** Newest first; within a score the larger id first. */
const modelOrder = (a: ScoredId, b: ScoredId) => (a.score !== b.score ? b.score - a.score : b.id - a.id);
/** Whether `a` comes strictly after `b` in that order. */
const comesAfter = (a: ScoredId, b: ScoredId) => a.score < b.score || (a.score === b.score && a.id < b.id);

const world = fc.record({
  blogs: fc.uniqueArray(fc.record({ id: fc.integer({ min: 1, max: 600 }), score: fc.integer({ min: 0, max: 12 }) }), {
    selector: (item) => item.id,
    maxLength: 120,
  }),
  authors: fc.integer({ min: 1, max: 10 }),
  // Skewed ownership: author 1 often owns most blogs, as a prolific followee does.
  owners: fc.array(fc.oneof(fc.constant(0), fc.nat()), { maxLength: 120 }),
  wanted: fc.integer({ min: 0, max: 40 }),
  maxRounds: fc.integer({ min: 1, max: MAX_DEEPENED_ROUNDS }),
});

function historiesOf({ blogs, authors, owners }: { blogs: ScoredId[]; authors: number; owners: number[] }) {
  const histories = new Map<number, ScoredId[]>();
  for (let author = 1; author <= authors; author++) histories.set(author, []);
  blogs.forEach((blog, i) => histories.get(((owners[i] ?? i) % authors) + 1)!.push(blog));
  for (const items of histories.values()) items.sort(modelOrder);
  return histories;
}

/** Runs the read against the histories as a store would answer it; the answer, the rows each author gave and the rounds. */
function runRead(histories: Map<number, ScoredId[]>, wanted: number, maxRounds = MAX_DEEPENED_ROUNDS) {
  const read = new DeepenedRead(wanted, [...histories.keys()], maxRounds);
  const rows = new Map([...histories.keys()].map((author) => [author, 0]));
  for (let step = read.next(); step.asks.length > 0; step = read.next()) {
    const answered = new Map<number, ScoredId[]>();
    for (const ask of step.asks) {
      const items = histories
        .get(ask.authorId)!
        .filter((item) => ask.after === null || comesAfter(item, ask.after))
        .filter((item) => step.floor === null || !comesAfter(item, step.floor))
        .slice(0, ask.limit);
      answered.set(ask.authorId, items);
      rows.set(ask.authorId, rows.get(ask.authorId)! + items.length);
    }
    read.answer(step.asks, answered);
  }
  return { answer: read.newest(), rows, rounds: read.roundsRead };
}

it('finds the newest `wanted` of all within its rounds, never reading more rows of an author than one round of `wanted` would', () => {
  fc.assert(
    fc.property(world, (spec) => {
      const histories = historiesOf(spec);
      const { answer, rows, rounds } = runRead(histories, spec.wanted, spec.maxRounds);
      expect(answer).toEqual([...histories.values()].flat().sort(modelOrder).slice(0, spec.wanted));
      for (const [author, items] of histories)
        expect(rows.get(author)).toBeLessThanOrEqual(Math.min(items.length, spec.wanted));
      expect(rounds).toBeLessThanOrEqual(spec.maxRounds);
    }),
    { numRuns: 1500 },
  );
});

it('reads one round when the newest items are spread evenly over the authors', () => {
  // 20 authors of 100 blogs each, interleaved in time: the first round of 41 each holds the 801.
  const histories = new Map<number, ScoredId[]>();
  for (let author = 1; author <= 20; author++)
    histories.set(
      author,
      Array.from({ length: 100 }, (_, i) => ({ id: i * 20 + author, score: 100_000 - i * 20 - author })),
    );
  const { rounds, rows } = runRead(histories, 801);
  expect(rounds).toBe(1);
  expect([...rows.values()].reduce((sum, n) => sum + n, 0)).toBe(820);
});

it('reads close to `wanted` rows where a few authors crowd the top and the rest have little', () => {
  // As on bench:mixed's graph: 4 prolific followees with 2,000 blogs each, 16 with 5 each.
  const histories = new Map<number, ScoredId[]>();
  let id = 0;
  for (let author = 1; author <= 20; author++) {
    const count = author <= 4 ? 2000 : 5;
    histories.set(
      author,
      Array.from({ length: count }, (_, i) => ({ id: (id += 1), score: 1_000_000 - i * 10 - author })),
    );
  }
  const { answer, rows, rounds } = runRead(histories, 801);
  const total = [...rows.values()].reduce((sum, n) => sum + n, 0);
  // One round of 801 each read 4 x 801 + 16 x 5 = 3,284 rows.
  expect({ rounds, total, underTwiceWanted: total < 2 * 801 }).toEqual({ rounds, total, underTwiceWanted: true });
  expect(answer).toEqual([...histories.values()].flat().sort(modelOrder).slice(0, 801));
});
