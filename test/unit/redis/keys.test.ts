import fc from 'fast-check';
import { RedisKeys } from '../../../src/redis/keys';

/**
 * The fan-out's script names a reader's keys from heads and the reader's id (deliver.lua): the
 * names it builds must be the names every other script and the API use.
 */
describe('RedisKeys.deliveryKeyHeads', () => {
  it('gives, with "<id>}" appended, exactly the feed, feedMeta, feedFollowees and live keys of any reader', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9:_-]{0,12}$/), fc.nat({ max: 2 ** 53 - 1 }), (prefix, readerId) => {
        const keys = new RedisKeys(prefix);
        const named = keys.deliveryKeyHeads().map((head) => `${head}${readerId}}`);
        expect(named).toEqual([
          keys.feed(readerId),
          keys.feedMeta(readerId),
          keys.feedFollowees(readerId),
          keys.live(readerId),
        ]);
      }),
    );
  });
});
