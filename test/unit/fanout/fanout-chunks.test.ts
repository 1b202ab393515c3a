/** chunkRanges: a page of follower ids cut into contiguous chunks (property test); chunksInRound: how rounds grow. */
import fc from 'fast-check';
import {
  chunkRanges,
  chunksInRound,
  FIRST_CHUNKS_PER_ROUND,
  MAX_CHUNKS_PER_ROUND,
} from '../../../src/fanout/fanout.dispatcher';

it('covers exactly the ids given, in contiguous ranges of at most chunkSize, numbered on', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.integer({ min: 1, max: 100_000 }), { maxLength: 300 }),
      fc.integer({ min: 0, max: 50 }),
      fc.integer({ min: 1, max: 40 }),
      (raw, seq, chunkSize) => {
        const ids = [...raw].sort((a, b) => a - b);
        const cursor = ids.length > 0 ? ids[0] - 1 : 0;
        const chunks = chunkRanges(ids, cursor, seq, chunkSize);
        expect(chunks).toHaveLength(Math.ceil(ids.length / chunkSize));
        let after = cursor;
        chunks.forEach((chunk, i) => {
          expect(chunk.seq).toBe(seq + i + 1);
          expect(chunk.afterUserId).toBe(after);
          const inside = ids.filter((id) => id > chunk.afterUserId && id <= chunk.throughUserId);
          expect(inside.length).toBeGreaterThan(0);
          expect(inside.length).toBeLessThanOrEqual(chunkSize);
          after = chunk.throughUserId;
        });
        if (ids.length > 0) expect(after).toBe(ids[ids.length - 1]);
      },
    ),
    { numRuns: 300 },
  );
});

it('starts a walk with a small round, grows each round fourfold, and never passes the cap', () => {
  expect(chunksInRound(0)).toBe(FIRST_CHUNKS_PER_ROUND);
  expect(FIRST_CHUNKS_PER_ROUND).toBeGreaterThan(1); // a task of one chunk learns in one read that it has no more
  for (let round = 1; round < 1000; round += 1) {
    const size = chunksInRound(round);
    expect(Number.isInteger(size)).toBe(true);
    expect(size).toBe(Math.min(MAX_CHUNKS_PER_ROUND, chunksInRound(round - 1) * 4));
  }
  expect(chunksInRound(1_000_000)).toBe(MAX_CHUNKS_PER_ROUND);
});
