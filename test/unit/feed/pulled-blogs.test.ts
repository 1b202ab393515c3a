/**
 * The per-process lists of big authors' pulled blogs (feed/pulled-blogs.ts): kept per token,
 * bounded, and read from a position exactly as MySQL would answer, or not at all. The reading
 * is checked against a brute-force model over all of an author's blogs.
 */
import fc from 'fast-check';
import { compareCanonical, FeedPosition, ScoredId } from '../../../src/kernel/pagination/cursor';
import { PULLED_LIST_TRUST_MS, PulledBlogLists, pulledAfter } from '../../../src/feed/pulled-blogs';

const list = (ids: number[]) => ({ newest: ids.map((id) => ({ id, score: id })), complete: true });

it('gives a list back only under the token it was kept with', () => {
  const lists = new PulledBlogLists();
  lists.set(1, 't1', list([3, 2]));
  expect(lists.get(1, 't1')?.newest).toEqual(list([3, 2]).newest);
  expect(lists.get(1, 't2')).toBeNull(); // the author published or deleted since
  expect(lists.get(1, null)).toBeNull(); // no settled token (lost, or a change committing)
  expect(lists.get(2, 't1')).toBeNull();
});

it('keeps nothing without a settled token', () => {
  const lists = new PulledBlogLists();
  lists.set(1, null, list([1]));
  expect(lists.size).toBe(0);
});

it('forgets the least recently used author first', () => {
  const lists = new PulledBlogLists(2);
  lists.set(1, 't', list([1]));
  lists.set(2, 't', list([2]));
  expect(lists.get(1, 't')).not.toBeNull(); // author 1 is now the most recent
  lists.set(3, 't', list([3]));
  expect(lists.size).toBe(2);
  expect(lists.get(2, 't')).toBeNull();
  expect(lists.get(1, 't')).not.toBeNull();
  expect(lists.get(3, 't')).not.toBeNull();
});

it('trusts no list past PULLED_LIST_TRUST_MS, whatever its token (a rolling deploy from a version that kept tokens as they were)', () => {
  let now = 0;
  const lists = new PulledBlogLists(10, PULLED_LIST_TRUST_MS, () => now);
  lists.set(1, 't', list([1]));
  now = PULLED_LIST_TRUST_MS - 1;
  expect(lists.get(1, 't')).not.toBeNull();
  now = PULLED_LIST_TRUST_MS;
  expect(lists.get(1, 't')).toBeNull();
  expect(lists.size).toBe(0);
});

/** What MySQL answers (FeedStore.pulledBlogs for one author): the first `limit` after the position, its offset ignored. */
function mysqlAnswer(all: readonly ScoredId[], from: FeedPosition, limit: number): ScoredId[] {
  return [...all]
    .sort(compareCanonical)
    .filter((item) => {
      if (from.maxScore === null) return true;
      if (from.afterId === null) return item.score <= from.maxScore;
      return item.score < from.maxScore || (item.score === from.maxScore && item.id < from.afterId);
    })
    .slice(0, limit);
}

const blogsArb = fc
  .uniqueArray(fc.record({ id: fc.integer({ min: 1, max: 400 }), score: fc.integer({ min: 0, max: 30 }) }), {
    selector: (blog) => blog.id,
    maxLength: 60,
  })
  .map((blogs) => blogs.sort(compareCanonical));

const positionArb: fc.Arbitrary<FeedPosition> = fc.oneof(
  fc.constant({ maxScore: null, offset: 0, afterId: null }),
  fc.record({
    maxScore: fc.integer({ min: -1, max: 31 }),
    offset: fc.integer({ min: 0, max: 5 }),
    afterId: fc.option(fc.integer({ min: 0, max: 401 }), { nil: null }),
  }),
);

it('answers what MySQL answers whenever it answers, and always when the list can say', () => {
  fc.assert(
    fc.property(
      blogsArb,
      fc.integer({ min: 0, max: 40 }),
      positionArb,
      fc.integer({ min: 1, max: 25 }),
      (all, kept, from, limit) => {
        // The list as a fill reads it: the newest `kept` of all, complete when there were fewer.
        const newest = all.slice(0, kept);
        const answer = pulledAfter({ newest, complete: all.length < kept }, from, limit);
        const expected = mysqlAnswer(all, from, limit);
        if (answer !== null) expect(answer).toEqual(expected);
        // It may only decline when the answer reaches below the kept list.
        const reachesBelow =
          all.length >= kept && expected.length > 0 && all.indexOf(expected[expected.length - 1]) >= kept - 1;
        if (answer === null) expect(reachesBelow || expected.length < limit).toBe(true);
        if (all.length < kept) expect(answer).not.toBeNull();
      },
    ),
    { numRuns: 2000 },
  );
});
