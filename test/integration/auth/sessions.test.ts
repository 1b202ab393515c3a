/**
 * Ending sessions across API processes: `logout` and `logoutEverywhere` taken by one process
 * hold in every other one, at once while Redis carries the news (pub/sub), and within
 * SESSION_RECHECK_SECONDS when it cannot; live subscriptions of an ended session are closed
 * with 4401; a request with a known session costs no SQL statement and no Redis command; and
 * news that may have been lost makes a process read its users again. (One process alone, in
 * both modes: auth.test.ts.)
 */
import { errorCode, ok, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';
import { liveClient, LiveClient } from '../../support/live-client';
import { freePort, PrivateRedis, waitFor } from '../../support/processes';

const VIEWER = '{ viewer { id } }';
const LOGIN = 'mutation($n: String!, $p: String!) { login(nickName: $n, password: $p) { token } }';
const PASSWORD = 'password-123';

const accepted = async (app: TestApp, token: string): Promise<boolean> => !(await app.gql(VIEWER, {}, token)).errors;
const login = async (app: TestApp, user: TestUser): Promise<string> =>
  ok(await app.gql(LOGIN, { n: user.nickName, p: PASSWORD })).login.token;

describe('across API processes', () => {
  let a: TestApp;
  let b: TestApp;
  const clients: LiveClient[] = [];

  beforeAll(async () => {
    a = await startTestApp('sessions');
    b = await startTestApp('sessions', { shareWith: a });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.dispose()));
    await b?.close();
    await a?.close();
  });

  it("logout in one process ends the token in the others, which had it cached; the user's other session goes on", async () => {
    const user = await signUp(a, 'roamer');
    const other = await login(b, user);
    expect(await accepted(b, user.token)).toBe(true);
    expect(await accepted(b, other)).toBe(true);
    ok(await a.gql('mutation { logout }', {}, user.token));
    expect(errorCode(await a.gql(VIEWER, {}, user.token))).toBe('UNAUTHENTICATED');
    // Far sooner than SESSION_RECHECK_SECONDS (30 s): the news came over Redis.
    await waitFor('process b to refuse the ended token', async () => !(await accepted(b, user.token)), 5000);
    expect(await accepted(b, other)).toBe(true);
    expect(await accepted(a, other)).toBe(true);
  });

  it('logoutEverywhere in one process ends every session in every process and closes their live subscriptions with 4401', async () => {
    const user = await signUp(a, 'everywhere');
    const tablet = await login(b, user);
    const watcher = await signUp(b, 'watcher');
    const live = liveClient(b.url, tablet);
    const unrelated = liveClient(b.url, watcher.token);
    clients.push(live, unrelated);
    await waitFor(
      'the live subscriptions to open',
      async () =>
        (await b.redis.exists(b.keys.live(dbId(user)))) + (await b.redis.exists(b.keys.live(dbId(watcher)))) === 2,
      10_000,
    );

    ok(await a.gql('mutation { logoutEverywhere }', {}, user.token));
    await waitFor('the live subscription of the ended session to be closed', async () => live.closed() !== null, 5000);
    expect(live.closed()!.code).toBe(4401);
    expect(live.closed()!.reason).toMatch(/^UNAUTHENTICATED: .*logged out/);
    for (const app of [a, b]) {
      for (const token of [user.token, tablet])
        expect(errorCode(await app.gql(VIEWER, {}, token))).toBe('UNAUTHENTICATED');
    }
    // Another viewer's subscription is untouched, and the user signs in again.
    expect(unrelated.closed()).toBeNull();
    expect(await accepted(b, await login(b, user))).toBe(true);
  });
});

describe('with Redis away', () => {
  let redis: PrivateRedis;
  let a: TestApp;
  let b: TestApp;
  let live: LiveClient | undefined;
  let redisStopped = false;

  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    const env = { REDIS_URL: redis.url, SESSION_RECHECK_SECONDS: '1' };
    a = await startTestApp('sessions_redis_away', { env });
    b = await startTestApp('sessions_redis_away', { shareWith: a, env });
  });
  afterAll(async () => {
    // The apps close their Redis connections cleanly only with a Redis to talk to.
    if (redisStopped) await redis.start();
    await live?.dispose();
    await b?.close();
    await a?.close();
    await redis.stop();
  });

  it('another process refuses an ended token, and closes its live subscription, within SESSION_RECHECK_SECONDS', async () => {
    const user = await signUp(a, 'offline');
    expect(await accepted(b, user.token)).toBe(true);
    live = liveClient(b.url, user.token);
    await waitFor(
      'the live subscription to open',
      async () => (await redis.client().exists(b.keys.live(dbId(user)))) === 1,
      10_000,
    );
    await redis.stop();
    redisStopped = true;
    // Nothing carries the news now: b finds out when its cached verdict is 1 s old.
    ok(await a.gql('mutation { logout }', {}, user.token));
    await waitFor('process b to refuse the ended token', async () => !(await accepted(b, user.token)), 10_000);
    await waitFor('the live subscription to be closed', async () => live!.closed() !== null, 10_000);
    expect(live.closed()!.code).toBe(4401);
  });
});

describe('what checking a session costs', () => {
  let redis: PrivateRedis;
  let app: TestApp;

  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    // No fan-out worker in this process: its queue's own polling would be counted.
    app = await startTestApp('sessions_cost', {
      env: { REDIS_URL: redis.url, SESSION_RECHECK_SECONDS: '1', FANOUT_WORKERS: '0' },
    });
    await waitFor(
      'the app to listen for session changes',
      async () => Number((await redis.client().pubsub('NUMSUB', app.keys.sessions()))[1]) === 1,
      10_000,
    );
  });
  afterAll(async () => {
    await app?.close();
    await redis.stop();
  });

  /** Commands the private Redis ran since its stats were reset; INFO and CONFIG (this test's) and PUBLISH (each process's heartbeat, every 5 s) left out. */
  async function redisCalls(): Promise<number> {
    const stats = await redis.client().info('commandstats');
    let calls = 0;
    for (const [, command, count] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (!['info', 'config', 'publish'].includes(command)) calls += Number(count);
    }
    return calls;
  }

  it('a request whose session is known costs no SQL statement and no Redis command, also past SESSION_RECHECK_SECONDS while the process listens', async () => {
    const user = await signUp(app, 'steady');
    const token = await login(app, user);
    const statements = app.sqlLog.statements;
    ok(await app.gql('{ __typename }', {}, token)); // the first request of the user in this process reads their sessions
    expect(app.sqlLog.statements - statements).toBe(1);
    // That request also pushed the user's inbox expiry back, in the background (at most once per
    // ACTIVITY_WRITE_INTERVAL_MS): the count starts once that is done.
    await waitFor('the activity write', async () => (await redis.client().pttl(app.keys.feedMeta(dbId(user)))) > 0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await redis.client().config('RESETSTAT');
    const before = await redisCalls();
    const known = app.sqlLog.statements;
    for (let i = 0; i < 20; i += 1) ok(await app.gql('{ __typename }', {}, token));
    // Older than SESSION_RECHECK_SECONDS (1 s), still trusted: the process hears every change.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    ok(await app.gql('{ __typename }', {}, token));
    expect(app.sqlLog.statements - known).toBe(0);
    expect((await redisCalls()) - before).toBe(0);
  });

  it('news that may have been lost (a skipped message number) makes the process read its users again', async () => {
    const user = await signUp(app, 'gap');
    const token = await login(app, user);
    ok(await app.gql('{ __typename }', {}, token));
    const channel = app.keys.sessions();
    // Another "process" is heard, then heard again with a number skipped: one of its messages was lost.
    await redis.client().publish(channel, 'elsewhere 1 0');
    ok(await app.gql('{ __typename }', {}, token));
    await redis.client().publish(channel, 'elsewhere 3 0');
    const statements = app.sqlLog.statements;
    await waitFor('the process to forget what it read', async () => {
      ok(await app.gql('{ __typename }', {}, token));
      return app.sqlLog.statements > statements;
    });
    // Read once again, then trusted again.
    const after = app.sqlLog.statements;
    ok(await app.gql('{ __typename }', {}, token));
    expect(app.sqlLog.statements).toBe(after);
  });
});

function dbId(user: TestUser): number {
  return Number(Buffer.from(user.id, 'base64').toString('utf8').split(':')[1]);
}
