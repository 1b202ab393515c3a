/** Access tokens: verified once and remembered, but never past their expiry; each a session of its own. */
import jwt from 'jsonwebtoken';
import type { Session, SessionEnd } from '../../../src/auth/auth.sessions';
import { SessionCheck, TokenService } from '../../../src/auth/auth.tokens';

/** Sessions that end only when this test says so, in memory. */
class EndedSessions implements SessionCheck {
  readonly ended = new Map<string, SessionEnd>();
  readonly asked: Session[] = [];
  check(session: Session): SessionEnd | null {
    this.asked.push(session);
    return this.ended.get(session.sessionId) ?? null;
  }
}

afterEach(() => jest.useRealTimers());

it('answers a remembered token until its expiry, then rejects it as expired', async () => {
  jest.useFakeTimers({ now: new Date('2026-11-30T12:00:00Z') });
  const tokens = new TokenService('a-secret-for-the-unit-test', 60, new EndedSessions());
  const header = `Bearer ${tokens.issue(42, 0)}`;
  expect(await tokens.check(header)).toMatchObject({ kind: 'viewer', userId: 42 });
  expect(await tokens.check(header)).toMatchObject({ kind: 'viewer', userId: 42 }); // from the cache
  jest.setSystemTime(new Date('2026-11-30T12:01:10Z')); // 70 s later: past expiry and the 5 s tolerance
  expect(await tokens.check(header)).toEqual({ kind: 'rejected', reason: 'the token has expired; log in again' });
});

it('never remembers a rejection: a token signed with another secret stays rejected', async () => {
  const ours = new TokenService('our-secret', 60, new EndedSessions());
  const forged = `Bearer ${new TokenService('another-secret', 60, new EndedSessions()).issue(7, 0)}`;
  expect((await ours.check(forged)).kind).toBe('rejected');
  expect((await ours.check(forged)).kind).toBe('rejected');
});

it('gives every token an id of its own and the token version, and asks on every request whether its session ended', async () => {
  const sessions = new EndedSessions();
  const tokens = new TokenService('a-secret-for-the-unit-test', 60, sessions);
  const [first, second] = [tokens.issue(42, 3), tokens.issue(42, 3)];
  expect(first).not.toBe(second);
  const claims = jwt.decode(first) as jwt.JwtPayload;
  expect(claims).toMatchObject({ sub: '42', tv: 3 });
  expect(claims.jti).toMatch(/^[A-Za-z0-9_-]{22}$/);

  const viewer = await tokens.check(`Bearer ${first}`);
  expect(viewer).toMatchObject({ kind: 'viewer', userId: 42, tokenVersion: 3, sessionId: claims.jti });
  sessions.ended.set(claims.jti!, 'logout');
  expect(await tokens.check(`Bearer ${first}`)).toEqual({
    kind: 'rejected',
    reason: 'this session has ended (logged out); log in again',
  });
  expect((await tokens.check(`Bearer ${second}`)).kind).toBe('viewer');
  expect(sessions.asked).toHaveLength(3);
});

it('reads a token without an id or version (issued before they existed) as version 0, named by its own text', async () => {
  const sessions = new EndedSessions();
  const tokens = new TokenService('a-secret-for-the-unit-test', 60, sessions);
  const legacy = jwt.sign({}, 'a-secret-for-the-unit-test', { algorithm: 'HS256', subject: '9', expiresIn: 60 });
  const viewer = await tokens.check(`Bearer ${legacy}`);
  expect(viewer).toMatchObject({ kind: 'viewer', userId: 9, tokenVersion: 0 });
  expect(viewer.kind === 'viewer' && viewer.sessionId).toMatch(/^h\.[A-Za-z0-9_-]{32}$/);
  // Claims of the wrong shape are not this API's.
  for (const claims of [{ tv: -1 }, { tv: 'one' }, { jti: 'with space' }, { jti: 'x'.repeat(65) }]) {
    const odd = jwt.sign(claims, 'a-secret-for-the-unit-test', { algorithm: 'HS256', subject: '9', expiresIn: 60 });
    expect(await tokens.check(`Bearer ${odd}`)).toEqual({
      kind: 'rejected',
      reason: 'the token is not one this API issued',
    });
  }
});
