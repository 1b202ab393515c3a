/**
 * The DateTime scalar's output (src/kernel/scalars.ts): its shortcut for a valid Date answers
 * exactly what graphql-scalars' own serialisation does, and everything else still meets its checks.
 */
import fc from 'fast-check';
import { DateTimeResolver } from 'graphql-scalars';
import { DateTimeScalar } from '../../../src/kernel/scalars';

/** What the scalar wrote before its shortcut: graphql-scalars' checks, then ISO-8601. */
const throughGraphqlScalars = (value: unknown): string => DateTimeResolver.serialize(value).toISOString();

describe('DateTime output', () => {
  it('writes any valid Date as graphql-scalars does', () => {
    fc.assert(
      fc.property(fc.date({ noInvalidDate: true }), (date) => {
        expect(DateTimeScalar.serialize(date)).toBe(throughGraphqlScalars(date));
      }),
      { numRuns: 500 },
    );
  });

  it('writes an ISO-8601 string or epoch milliseconds as graphql-scalars does', () => {
    for (const value of ['2026-11-30T09:52:42.123Z', '2026-11-30T10:52:42.123+01:00', 1_764_496_362_123])
      expect(DateTimeScalar.serialize(value)).toBe(throughGraphqlScalars(value));
  });

  it('refuses an invalid Date and a string that is no instant, as graphql-scalars does', () => {
    for (const value of [new Date(Number.NaN), 'yesterday', {}]) {
      expect(() => throughGraphqlScalars(value)).toThrow();
      expect(() => DateTimeScalar.serialize(value)).toThrow();
    }
  });
});
