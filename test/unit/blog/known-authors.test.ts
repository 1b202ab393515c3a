/** The authors of blogs a process has hydrated (blog/known-authors.ts): guesses of a page's authors, bounded. */
import { KnownAuthors } from '../../../src/blog/known-authors';

const blog = (dbId: number, authorId: number) => ({ dbId, authorId });

it("guesses the distinct authors of the blogs it has seen, in the page's order, and nothing for the others", () => {
  const known = new KnownAuthors();
  known.remember([blog(1, 10), blog(2, 20), blog(3, 10)]);
  expect(known.guess([3, 2, 1, 4])).toEqual([10, 20]);
  expect(known.guess([4, 5])).toEqual([]);
  expect(known.guess([])).toEqual([]);
});

it('forgets the blogs it remembered first once past its capacity', () => {
  const known = new KnownAuthors(2);
  known.remember([blog(1, 10), blog(2, 20)]);
  known.remember([blog(1, 10)]); // already known: not remembered again
  known.remember([blog(3, 30)]);
  expect(known.size).toBe(2);
  expect(known.guess([1])).toEqual([]);
  expect(known.guess([2, 3])).toEqual([20, 30]);
});
