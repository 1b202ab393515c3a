/** Access tokens: verified once and remembered, but never past their expiry. */
import { TokenService } from '../../src/auth/auth.tokens';

afterEach(() => jest.useRealTimers());

it('answers a remembered token until its expiry, then rejects it as expired', () => {
  jest.useFakeTimers({ now: new Date('2026-11-30T12:00:00Z') });
  const tokens = new TokenService('a-secret-for-the-unit-test', 60);
  const header = `Bearer ${tokens.issue(42)}`;
  expect(tokens.check(header)).toMatchObject({ kind: 'viewer', userId: 42 });
  expect(tokens.check(header)).toMatchObject({ kind: 'viewer', userId: 42 }); // from the cache
  jest.setSystemTime(new Date('2026-11-30T12:01:10Z')); // 70 s later: past expiry and the 5 s tolerance
  expect(tokens.check(header)).toEqual({ kind: 'rejected', reason: 'the token has expired; log in again' });
});

it('never remembers a rejection: a token signed with another secret stays rejected', () => {
  const ours = new TokenService('our-secret', 60);
  const forged = `Bearer ${new TokenService('another-secret', 60).issue(7)}`;
  expect(ours.check(forged).kind).toBe('rejected');
  expect(ours.check(forged).kind).toBe('rejected');
});
