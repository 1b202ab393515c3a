/**
 * A Redis that does not answer is treated like a Redis that is down: a redis-server of the
 * test's own is frozen with SIGSTOP (its connections stay open, nothing answers) and resumed
 * with SIGCONT. Every operation answers meanwhile; afterwards everything converges.
 * And a sign-up while Redis is down (killed) succeeds; the inbox is built later.
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import {
  FEED_PAGE,
  errorCode,
  follow,
  inboxScores,
  ok,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';
import { freePort, PrivateRedis, waitFor } from '../../support/processes';

/** What the issue asks: each operation answers within about a second; 2 s leaves room for a busy machine. */
const ANSWER_WITHIN_MS = 2000;

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await work();
  return { result, ms: Math.round(performance.now() - started) };
}

/** /readyz shows Redis's state only to a bearer of METRICS_TOKEN. */
const METRICS_TOKEN = 'redis-hang-token-0123456789';

const readyz = async (app: TestApp) => {
  const response = await fetch(app.url.replace('/graphql', '/readyz'), {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
};

describe('Redis that hangs (SIGSTOP)', () => {
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    app = await startTestApp('redis_hang', {
      env: {
        REDIS_URL: redis.url,
        RATE_LIMITS: 'on',
        FEED_MODEL: 'push',
        REDIS_COMMAND_TIMEOUT_MS: '300',
        METRICS_TOKEN,
      },
    });
  });
  afterAll(async () => {
    redis.resume();
    await app.close();
    await redis.stop();
  });

  it('answers feed, login, like, publish, sign-up and follow within 2 s, and converges after SIGCONT', async () => {
    const author = await signUp(app, 'author');
    const reader = await signUp(app, 'reader');
    await follow(app, reader, author);
    const before = await publish(app, author, 'before');
    await app.services.fanout?.idle();
    expect(await scrollFeed(app, reader, 10)).toEqual([before]);

    redis.pause();
    const times: Record<string, number[]> = { feed: [], login: [], like: [], publish: [], signUp: [], follow: [] };
    const published: string[] = [];
    const newcomers: TestUser[] = [];
    // Twice each: the first meets a Redis that has just stopped answering (the command
    // timeout opens the breaker), the second an open breaker.
    for (let round = 0; round < 2; round += 1) {
      const feed = await timed(() => app.gql(FEED_PAGE, { first: 10 }, reader.token));
      expect(ok(feed.result).followFeed.edges.map((edge: any) => edge.node.id)).toEqual(
        [...published].reverse().concat(before),
      );
      times.feed.push(feed.ms);
      const login = await timed(() =>
        app.gql('mutation { login(nickName: "reader", password: "password-123") { token } }'),
      );
      ok(login.result);
      times.login.push(login.ms);
      const like = await timed(() =>
        app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount } }', { b: before }, reader.token),
      );
      expect(ok(like.result).likeBlog.likeCount).toBe(1);
      times.like.push(like.ms);
      const publishing = await timed(() => publish(app, author, `during ${round}`));
      published.push(publishing.result);
      times.publish.push(publishing.ms);
      const joining = await timed(() => signUp(app, `newcomer${round}`));
      times.signUp.push(joining.ms);
      newcomers.push(joining.result);
      times.follow.push((await timed(() => follow(app, joining.result, author))).ms);
    }
    console.log(`answer times (ms) while Redis hangs, first / second round: ${JSON.stringify(times)}`);
    for (const [operation, ms] of Object.entries(times)) {
      for (const each of ms)
        expect({ operation, ms: each, within: each <= ANSWER_WITHIN_MS }).toEqual({
          operation,
          ms: each,
          within: true,
        });
    }
    // Still ready (MySQL answers), but degraded.
    const degraded = await readyz(app);
    expect(degraded.status).toBe(200);
    expect(degraded.body).toMatchObject({ mysql: 'ok', redis: 'degraded' });

    redis.resume();
    // The events recorded while Redis hung reach the inbox (the relay queues them), and the
    // breaker closes: the feed is read from the inbox again, with every blog.
    await app.services.fanout?.idle(60_000);
    const readerId = Number(fromGlobalId(reader.id).id);
    for (const id of published) expect(await inboxScores(app, [readerId], id)).not.toEqual([null]);
    await waitFor('the breaker to close', async () => (await readyz(app)).body.redis === 'ok', 10_000);
    expect(await scrollFeed(app, reader, 1)).toEqual([...published].reverse().concat(before));
    // The newcomers, who joined and followed while Redis hung, see the same feed.
    for (const newcomer of newcomers)
      expect(await scrollFeed(app, newcomer, 3)).toEqual([...published].reverse().concat(before));
    // The likes counted while Redis hung were counted: nothing lost, nothing doubled.
    const [{ liked }] = await app.query('SELECT liked FROM tb_blog WHERE id = ?', [fromGlobalId(before).id]);
    expect(Number(liked)).toBe(1);
  });
});

describe('sign-up while Redis is down', () => {
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort(), true);
    await redis.start();
    app = await startTestApp('redis_down_signup', { env: { REDIS_URL: redis.url, FEED_MODEL: 'push', METRICS_TOKEN } });
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it('creates the account and answers with a token; the inbox is built on the first feed read', async () => {
    const author = await signUp(app, 'author');
    const first = await publish(app, author, 'first');
    await app.services.fanout?.idle();
    await redis.stop();
    const newcomer = await signUp(app, 'newcomer');
    expect(ok(await app.gql('{ viewer { nickName } }', {}, newcomer.token)).viewer.nickName).toBe('newcomer');
    // A retry is refused as taken: the first answer was the truth.
    expect(
      errorCode(await app.gql('mutation { signUp(nickName: "newcomer", password: "password-123") { token } }')),
    ).toBe('BAD_USER_INPUT');
    await follow(app, newcomer, author);
    expect(await scrollFeed(app, newcomer, 10)).toEqual([first]);

    await redis.start();
    await waitFor('Redis to be available again', async () => (await readyz(app)).body.redis === 'ok', 10_000);
    // A restarted Redis is another server: the process trusts inboxes again once it has checked
    // the Redis generation and caught up (feed/generation.ts).
    await app.services.feed.ready();
    // The inbox did not exist: the first read serves MySQL and builds it.
    const newcomerId = Number(fromGlobalId(newcomer.id).id);
    expect(await app.redis.exists(app.keys.feed(newcomerId))).toBe(0);
    expect(await scrollFeed(app, newcomer, 10)).toEqual([first]);
    await app.services.feed.idle();
    expect(await inboxScores(app, [newcomerId], first)).not.toEqual([null]);
    const second = await publish(app, author, 'second');
    await app.services.fanout?.idle(60_000);
    expect(await scrollFeed(app, newcomer, 10)).toEqual([second, first]);
  });
});
