/**
 * BlogAuthors (src/blog/blog.authors.ts): the authors of the blogs a process has seen, so that a
 * page asks for its authors in its blogs' round trip. It answers only when it knows every blog's
 * author, and stays within its capacity, forgetting the least recently seen first.
 */
import { BlogAuthors } from '../../../src/blog/blog.authors';

const blog = (dbId: number, authorId: number) => ({ dbId, authorId });

it('gives the distinct authors of blogs it has seen, and null when any blog is unknown', () => {
  const authors = new BlogAuthors();
  authors.remember([blog(1, 10), blog(2, 10), blog(3, 30)]);
  expect(authors.of([1, 2, 3])).toEqual([10, 30]);
  expect(authors.of([3])).toEqual([30]);
  expect(authors.of([])).toEqual([]);
  expect(authors.of([1, 4])).toBeNull();
});

it('keeps at most its capacity, forgetting the least recently seen blogs first', () => {
  const authors = new BlogAuthors(3);
  authors.remember([blog(1, 10), blog(2, 20), blog(3, 30)]);
  // Seen again: the most recent now.
  authors.remember([blog(1, 10)]);
  authors.remember([blog(4, 40)]);
  expect(authors.size).toBe(3);
  expect(authors.of([2])).toBeNull();
  expect(authors.of([1, 3, 4])).toEqual([10, 30, 40]);
  authors.remember([blog(5, 50), blog(6, 60)]);
  expect(authors.size).toBe(3);
  expect(authors.of([4, 5, 6])).toEqual([40, 50, 60]);
  expect(authors.of([1])).toBeNull();
});
