/** The per-process lists of big followees: kept per follow version and generation, bounded. */
import { BigFolloweeLists } from '../../../src/feed/big-followees';
import { UNSETTLED } from '../../../src/feed/inbox';

it('gives a list back only at the version and generation it was kept with', () => {
  const lists = new BigFolloweeLists();
  lists.set(1, 7, 'g1', [11, 12]);
  expect(lists.get(1, 7, 'g1')).toEqual([11, 12]);
  expect(lists.get(1, 8, 'g1')).toBeNull(); // the reader followed or unfollowed someone
  expect(lists.get(1, 7, 'g2')).toBeNull(); // someone became a big author
  expect(lists.get(1, 7, null)).toBeNull(); // Redis lost the generation
  expect(lists.get(2, 7, 'g1')).toBeNull();
});

it('keeps nothing and trusts nothing without a settled generation', () => {
  const lists = new BigFolloweeLists();
  lists.set(1, 7, null, [11]);
  lists.set(2, 7, `${UNSETTLED}g2`, [11]);
  expect(lists.size).toBe(0);
  lists.set(3, 7, 'g1', [11]);
  expect(lists.get(3, 7, `${UNSETTLED}g1`)).toBeNull();
});

it('forgets the least recently used reader first', () => {
  const lists = new BigFolloweeLists(2);
  lists.set(1, 1, 'g', [1]);
  lists.set(2, 1, 'g', [2]);
  expect(lists.get(1, 1, 'g')).toEqual([1]); // reader 1 is now the most recent
  lists.set(3, 1, 'g', [3]);
  expect(lists.size).toBe(2);
  expect(lists.get(2, 1, 'g')).toBeNull();
  expect(lists.get(1, 1, 'g')).toEqual([1]);
  expect(lists.get(3, 1, 'g')).toEqual([3]);
});

it('peeks at a kept list whatever its version, without making it recent, and gives the same list get would', () => {
  const lists = new BigFolloweeLists(2);
  lists.set(1, 1, 'g', [1, 2]);
  lists.set(2, 1, 'g', [3]);
  const peeked = lists.peek(1);
  expect(peeked).toEqual([1, 2]);
  expect(lists.get(1, 1, 'g')).toBe(peeked); // the same list: a page can tell its guess was right
  expect(lists.peek(3)).toBeNull();
  lists.set(3, 1, 'g', [4]); // reader 2 was used least recently (get made reader 1 recent)
  expect(lists.peek(2)).toBeNull();
  expect(lists.peek(1)).toEqual([1, 2]);
  // A peek does not make a list recent: reader 1 is forgotten before reader 3.
  lists.peek(1);
  lists.get(3, 1, 'g');
  lists.set(4, 1, 'g', [5]);
  expect(lists.peek(1)).toBeNull();
});
