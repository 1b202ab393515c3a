/** bench:mixed's pure parts (bench/mixed.model.ts) against brute-force models (property tests). */
import fc from 'fast-check';
import { percentile } from '../../../bench/bench.support';
import {
  dueBetween,
  OPERATIONS,
  parseShares,
  partsCapacity,
  pickOperation,
  seededRandom,
  summarize,
  tailWindows,
  zipfSampler,
} from '../../../bench/mixed.model';

/** Brute force: the first rank whose cumulative weight passes u * total, by a linear scan. */
function zipfByScan(n: number, s: number, u: number): number {
  const weights = Array.from({ length: n }, (_, rank) => 1 / Math.pow(rank + 1, s));
  const total = weights.reduce((sum, w) => sum + w, 0);
  let acc = 0;
  for (let rank = 0; rank < n; rank += 1) {
    acc += weights[rank];
    if (acc > u * total) return rank;
  }
  return n - 1;
}

it('draws the Zipf rank that a linear scan of the cumulative weights finds', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 300 }),
      fc.double({ min: 0, max: 2, noNaN: true }),
      fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 20 }),
      (n, s, draws) => {
        let next = 0;
        const sample = zipfSampler(n, s, () => draws[next++]);
        for (const u of draws) expect(sample()).toBe(zipfByScan(n, s, u));
      },
    ),
    { numRuns: 300 },
  );
});

it('gives rank r a share near 1 / ((r + 1) * H(n)) for exponent 1', () => {
  const n = 1000;
  const draws = 200_000;
  const sample = zipfSampler(n, 1, seededRandom(7));
  const counts = new Array<number>(n).fill(0);
  for (let i = 0; i < draws; i += 1) counts[sample()] += 1;
  let harmonic = 0;
  for (let k = 1; k <= n; k += 1) harmonic += 1 / k;
  for (const rank of [0, 1, 9]) {
    const expected = draws / ((rank + 1) * harmonic);
    expect(Math.abs(counts[rank] - expected) / expected).toBeLessThan(0.05);
  }
});

it('picks each operation for the slice of [0, 1) its share covers', () => {
  fc.assert(
    fc.property(
      fc.record(
        Object.fromEntries(OPERATIONS.map((operation) => [operation, fc.integer({ min: 0, max: 50 })])) as Record<
          (typeof OPERATIONS)[number],
          fc.Arbitrary<number>
        >,
      ),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (shares, u) => {
        const total = OPERATIONS.reduce((sum, operation) => sum + shares[operation], 0);
        fc.pre(total > 0);
        // Brute force: the slices laid end to end, in OPERATIONS order.
        let start = 0;
        let expected: string | undefined;
        for (const operation of OPERATIONS) {
          const end = start + shares[operation] / total;
          if (shares[operation] > 0 && u >= start && u < end) expected = operation;
          start = end;
        }
        // A u in the rounding gap at the very top goes to the last operation with a share.
        expected ??= [...OPERATIONS].reverse().find((operation) => shares[operation] > 0);
        expect(pickOperation(shares, u)).toBe(expected);
      },
    ),
    { numRuns: 500 },
  );
});

it('predicts the mix as the requests of its parts served one after another', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 5000 })), {
        minLength: 1,
        maxLength: OPERATIONS.length,
      }),
      (parts) => {
        const shares = Object.fromEntries(parts.map(([count], i) => [OPERATIONS[i], count]));
        const rates = Object.fromEntries(parts.map(([, perSecond], i) => [OPERATIONS[i], perSecond]));
        // Brute force: `count` requests of each part, each taking 1 / rate seconds.
        let seconds = 0;
        let requests = 0;
        for (const [count, perSecond] of parts) {
          for (let k = 0; k < count; k += 1) seconds += 1 / perSecond;
          requests += count;
        }
        expect(partsCapacity(shares, rates)).toBeCloseTo(requests / seconds, 6);
      },
    ),
    { numRuns: 200 },
  );
  // The example: 60% pages at 1,578/s, 30% profiles at 1,654/s, 10% publishes at 453/s.
  expect(
    Math.round(partsCapacity({ first: 60, profile: 30, publish: 10 }, { first: 1578, profile: 1654, publish: 453 })),
  ).toBe(1278);
});

it('sends the open-loop requests due by now and before the end, from the next one on', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 10_000 }),
      fc.integer({ min: 1, max: 5000 }),
      fc.integer({ min: 0, max: 200 }),
      fc.integer({ min: 0, max: 3000 }),
      fc.integer({ min: 0, max: 3000 }),
      (start, rate, next, elapsed, duration) => {
        const now = start + elapsed;
        const end = start + duration;
        const expected: number[] = [];
        for (let i = next; i < next + 20_000; i += 1) {
          const at = start + (i * 1000) / rate;
          if (at <= now && at < end) expected.push(i);
        }
        expect(dueBetween(start, rate, next, now, end)).toEqual(expected);
      },
    ),
    { numRuns: 300 },
  );
});

it('summarizes latencies with the percentiles of bench.support', () => {
  fc.assert(
    fc.property(
      fc.array(fc.double({ min: 0, max: 5000, noNaN: true }), { minLength: 1, maxLength: 400 }),
      (samples) => {
        const summary = summarize(samples);
        expect(summary).toEqual({
          count: samples.length,
          p50: percentile(samples, 50),
          p99: percentile(samples, 99),
          max: Math.max(...samples),
        });
      },
    ),
    { numRuns: 300 },
  );
});

it('counts the slowest 1% by the window they were due in, as a scan of every window finds', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ dueMs: fc.integer({ min: 0, max: 15_000 }), latencyMs: fc.integer({ min: 0, max: 400 }) }), {
        maxLength: 600,
      }),
      fc.constantFrom(100, 250, 1000),
      fc.integer({ min: 1, max: 5 }),
      (samples, windowMs, top) => {
        const p99 =
          samples.length === 0
            ? 0
            : percentile(
                samples.map((s) => s.latencyMs),
                99,
              );
        const slowest = samples.filter((s) => s.latencyMs >= p99);
        const windows: Array<{ atMs: number; count: number; maxMs: number }> = [];
        for (let atMs = 0; atMs <= 15_000; atMs += windowMs) {
          const inside = slowest.filter((s) => s.dueMs >= atMs && s.dueMs < atMs + windowMs);
          if (inside.length > 0)
            windows.push({ atMs, count: inside.length, maxMs: Math.max(...inside.map((s) => s.latencyMs)) });
        }
        // Most first; among equals the earlier first (the scan went in time order and the sort is stable).
        const busiest = [...windows].sort((a, b) => b.count - a.count).slice(0, top);
        expect(tailWindows(samples, windowMs, top)).toEqual({
          p99,
          count: slowest.length,
          windows: windows.length,
          busiest,
        });
      },
    ),
    { numRuns: 300 },
  );
});

it('finds a stall: the requests due while it lasted are the tail, in its windows', () => {
  // 15 s at 100/s, 5 ms each, but the 20 due from 6.40 s waited for a stall that ended at 6.65 s:
  // 250 ms down to 60. The p99 (the 1,485th of 1,500) is 110 ms, so the tail is the 15 due from
  // 6.40 to 6.54 s: 10 in the window from 6.25 s, 5 in the one from 6.50 s.
  const samples = Array.from({ length: 1500 }, (_, i) => {
    const dueMs = i * 10;
    return { dueMs, latencyMs: dueMs >= 6400 && dueMs < 6600 ? 6650 - dueMs : 5 };
  });
  expect(tailWindows(samples, 250, 3)).toEqual({
    p99: 110,
    count: 15,
    windows: 2,
    busiest: [
      { atMs: 6250, count: 10, maxMs: 250 },
      { atMs: 6500, count: 5, maxMs: 150 },
    ],
  });
});

it('parses MIXED_SHARES and refuses unknown names and bad numbers', () => {
  expect(parseShares('first=60, profile=30,publish=10')).toEqual({
    first: 60,
    deeper: 0,
    profile: 30,
    publish: 10,
    like: 0,
    follow: 0,
  });
  expect(() => parseShares('first=60,pages=40')).toThrow(/unknown operation "pages"/);
  expect(() => parseShares('first=-1')).toThrow(/first must be a number >= 0/);
  expect(() => parseShares('first=0')).toThrow(/at least one share/);
});
