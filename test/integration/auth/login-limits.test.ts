/**
 * Login rate limits that stop guessing without letting a stranger lock a user out: every
 * attempt counts per (nickName, address) pair, and failures count per nickName from all
 * addresses, which then refuses only the addresses that failed. The client addresses come from
 * X-Forwarded-For, which the app reads because the test's own address is a trusted proxy.
 */
import { ok, signUp, startTestApp, TestApp } from '../../support/harness';

/** Attempts per (nickName, address) pair. */
const PER_PAIR = 3;
/** Failures per nickName, from all addresses. */
const FAILURES_PER_NICKNAME = 10;

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('login_limits', {
    env: {
      RATE_LIMITS: 'on',
      TRUSTED_PROXIES: '127.0.0.1/32,::1',
      RATE_LIMIT_SIGNUP_PER_IP: '1000/600',
      RATE_LIMIT_LOGIN_PER_IP: '1000/600',
      RATE_LIMIT_LOGIN_PER_NICKNAME_IP: `${PER_PAIR}/600`,
      RATE_LIMIT_LOGIN_PER_NICKNAME: `${FAILURES_PER_NICKNAME}/600`,
    },
  });
});
afterAll(() => app.close());

interface Outcome {
  code: string;
  limit?: unknown;
  retryAfterSeconds?: unknown;
}

/** A login from the client address `from`: 'ok', or the error's code and limit. */
async function loginFrom(from: string, nickName: string, password: string): Promise<Outcome> {
  const response = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
    body: JSON.stringify({
      query: 'mutation($n: String!, $p: String!) { login(nickName: $n, password: $p) { token } }',
      variables: { n: nickName, p: password },
    }),
  });
  const body = (await response.json()) as { errors?: Array<{ extensions: Record<string, unknown> }> };
  if (!body.errors) return { code: 'ok' };
  const { code, limit, retryAfterSeconds } = body.errors[0].extensions;
  return { code: String(code), ...(limit === undefined ? {} : { limit, retryAfterSeconds }) };
}

it("a stranger's failures from other addresses do not lock the user out", async () => {
  await signUp(app, 'target', 'target-password');
  // Strangers guess from four addresses, each until refused: past the nickName's failures.
  let failures = 0;
  for (const stranger of ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4']) {
    for (let attempt = 0; ; attempt += 1) {
      const outcome = await loginFrom(stranger, 'target', `guess-${attempt}`);
      if (outcome.code === 'RATE_LIMITED') break;
      expect(outcome.code).toBe('UNAUTHENTICATED');
      failures += 1;
    }
  }
  expect(failures).toBeGreaterThanOrEqual(FAILURES_PER_NICKNAME);
  // The user, from an address that has not failed, signs in, and again from another one.
  expect(await loginFrom('203.0.113.10', 'target', 'target-password')).toEqual({ code: 'ok' });
  expect(await loginFrom('2001:db8:77::1', 'target', 'target-password')).toEqual({ code: 'ok' });
});

it('the pair limit stops one address guessing, its right password included, while other addresses keep their own count', async () => {
  await signUp(app, 'guessed', 'guessed-password');
  for (let i = 0; i < PER_PAIR; i += 1)
    expect((await loginFrom('198.51.100.20', 'guessed', `wrong-${i}`)).code).toBe('UNAUTHENTICATED');
  const refused = await loginFrom('198.51.100.20', 'guessed', 'guessed-password');
  expect(refused).toMatchObject({ code: 'RATE_LIMITED', limit: 'loginPerNickNameIp' });
  expect(refused.retryAfterSeconds).toBeGreaterThan(0);
  // The same address may still try another nickName, and another address this one.
  expect((await loginFrom('198.51.100.20', 'someone-else', 'whatever-1')).code).toBe('UNAUTHENTICATED');
  expect(await loginFrom('198.51.100.21', 'guessed', 'guessed-password')).toEqual({ code: 'ok' });
});

it('past the failures per nickName, addresses that failed are refused (right password too), addresses that did not are let in', async () => {
  await signUp(app, 'besieged', 'besieged-password');
  // Ten failures from five addresses, two each: under the pair limit, at the nickName's limit.
  const attackers = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4', '192.0.2.5'];
  for (const attacker of attackers) {
    for (let i = 0; i < 2; i += 1)
      expect((await loginFrom(attacker, 'besieged', `attempt-${i}`)).code).toBe('UNAUTHENTICATED');
  }
  const backoff = await loginFrom(attackers[0], 'besieged', 'besieged-password');
  expect(backoff).toMatchObject({ code: 'RATE_LIMITED', limit: 'loginPerNickName' });
  expect(backoff.retryAfterSeconds).toBeGreaterThan(0);
  // A new attacker gets one guess, then is an address that failed.
  expect((await loginFrom('192.0.2.99', 'besieged', 'attempt-x')).code).toBe('UNAUTHENTICATED');
  expect(await loginFrom('192.0.2.99', 'besieged', 'attempt-y')).toMatchObject({
    code: 'RATE_LIMITED',
    limit: 'loginPerNickName',
  });
  // The user's own address never failed: the right password works.
  expect(await loginFrom('203.0.113.50', 'besieged', 'besieged-password')).toEqual({ code: 'ok' });
  ok(await app.gql('{ __typename }'));
});
