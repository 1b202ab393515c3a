/**
 * BlogAuthors (src/blog/blog.authors.ts): the authors of the blogs a process has seen, so that a
 * page asks for its authors in its blogs' round trip. It answers only when it knows every blog's
 * author, and stays within its capacity, forgetting the blogs not seen for longest first.
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

it('keeps at most its capacity, forgetting the blogs not seen for longest, half of it at a time', () => {
  const authors = new BlogAuthors(4);
  authors.remember([blog(1, 10), blog(2, 20)]); // the young half is full: it becomes the old one
  authors.remember([blog(3, 30)]);
  expect(authors.of([1, 2, 3])).toEqual([10, 20, 30]);
  // Seen again: young once more, with 3, which fills the young half; the old one, with 2, goes.
  authors.remember([blog(1, 10)]);
  expect(authors.size).toBeLessThanOrEqual(4);
  expect(authors.of([2])).toBeNull();
  expect(authors.of([1, 3])).toEqual([10, 30]);
  for (let id = 100; id < 200; id += 1) authors.remember([blog(id, id * 10)]);
  expect(authors.size).toBeLessThanOrEqual(4);
  expect(authors.of([198, 199])).toEqual([1980, 1990]);
  expect(authors.of([1])).toBeNull();
});
