/**
 * The feed stays exact through what operators do, on real servers: a Redis of the test's own
 * restarted from an older dump, frozen (SIGSTOP) while people publish and follow, its keys
 * evicted, or run with a policy that evicts; API processes of different feed models serving
 * the same data in a rolling deploy; a process that stops before it could apply a follow.
 * After each, every feed equals MySQL, with no error shown to a reader.
 */
import { randomUUID } from 'node:crypto';
import { RedisInbox } from '../../../src/feed/inbox.redis';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { TestClock } from '../../support/clock';
import {
  currentGeneration,
  FEED_PAGE,
  feedTruth,
  follow,
  ok,
  postGraphQL,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';
import { freePort, PrivateRedis, startNodeProcess, TcpProxy, waitFor, WorkerProcess } from '../../support/processes';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every reader's feed, read through `app`, equals MySQL. */
async function expectFeedsExact(app: TestApp, readers: readonly TestUser[], via = app): Promise<void> {
  for (const reader of readers) {
    const truth = await feedTruth(app, dbId(reader));
    expect({ reader: reader.nickName, feed: await scrollFeed(via, reader, 3) }).toEqual({
      reader: reader.nickName,
      feed: truth,
    });
  }
}

/** The inbox's entries, newest first, as global ids (the sentinel left out). */
async function inboxIds(app: TestApp, reader: TestUser): Promise<string[]> {
  const members = await app.redis.zrevrangebyscore(app.keys.feed(dbId(reader)), '(+inf', '-inf');
  return members.map((member) => Buffer.from(`Blog:${Number(member)}`).toString('base64'));
}

/** Gives /readyz's details (behind METRICS_TOKEN). */
const METRICS_TOKEN = 'metrics-token-of-feed-operations';
const readyz = async (app: TestApp) =>
  (await (
    await fetch(app.url.replace('/graphql', '/readyz'), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  ).json()) as Record<string, unknown>;

describe('Redis restarted from an older dump', () => {
  const clock = new TestClock();
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort(), 'rdb');
    await redis.start();
    app = await startTestApp('ops_dump', {
      now: clock.now,
      env: { REDIS_URL: redis.url, FEED_MODEL: 'push', NODE_ENV: 'production' },
    });
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it('trusts nothing the dump brought back: every feed equals MySQL at once and after, and the inboxes are rebuilt', async () => {
    const a = await signUp(app, 'a');
    const c = await signUp(app, 'c');
    const readers: TestUser[] = [];
    for (let i = 0; i < 12; i += 1) readers.push(await signUp(app, `reader${i}`));
    for (const reader of readers) await follow(app, reader, a);
    const b1 = await publish(app, a, 'b1');
    clock.tick();
    const c1 = await publish(app, c, 'c1');
    await app.services.fanout?.idle();
    await redis.client().save();
    clock.tick();
    const b2 = await publish(app, a, 'b2');
    clock.tick();
    const b3 = await publish(app, a, 'b3');
    for (const reader of readers) await follow(app, reader, c);
    await app.services.fanout?.idle();
    for (const reader of readers) expect(await scrollFeed(app, reader, 3)).toEqual([b3, b2, c1, b1]);

    // Killed, and started again on its folder: it loads the dump of the SAVE.
    const before = await currentGeneration(app);
    await redis.stop();
    await redis.start();
    expect(await redis.client().zcard(app.keys.feed(dbId(readers[0])))).toBeGreaterThan(0); // the old inboxes are back
    await expectFeedsExact(app, readers);
    await waitFor('the new generation', async () => (await currentGeneration(app)) > before);
    // Pages go on being exact while the inboxes are rebuilt, and after.
    for (let round = 0; round < 3; round += 1) {
      await expectFeedsExact(app, readers);
      await app.services.feed.idle();
      await sleep(200);
    }
    for (const reader of readers) expect(await inboxIds(app, reader)).toEqual([b3, b2, c1, b1]);
  });
});

describe('the feed model switched in a rolling deploy', () => {
  const clock = new TestClock();
  const env = { BIG_V_FOLLOWERS: '3' };
  let apps: TestApp[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  it('pull, then pull and hybrid at once, then hybrid and push at once, then push and pull: every feed exact through every process', async () => {
    const pull = await startTestApp('ops_models', { now: clock.now, env: { ...env, FEED_MODEL: 'pull' } });
    apps = [pull];
    const small = await signUp(pull, 'small');
    const big = await signUp(pull, 'big');
    const readers: TestUser[] = [];
    for (let i = 0; i < 6; i += 1) readers.push(await signUp(pull, `reader${i}`));
    for (const reader of readers) await follow(pull, reader, big);
    for (const reader of readers.slice(0, 2)) await follow(pull, reader, small);
    const published = async (app: TestApp, author: TestUser, title: string) => {
      clock.tick();
      return publish(app, author, title);
    };
    await published(pull, small, 's1');
    await published(pull, big, 'g1');
    await expectFeedsExact(pull, readers);

    // A hybrid process joins: both serve, and both publish and follow.
    const hybrid = await startTestApp('ops_models', {
      shareWith: pull,
      now: clock.now,
      env: { ...env, FEED_MODEL: 'hybrid' },
    });
    apps.push(hybrid);
    for (const app of [pull, hybrid]) await expectFeedsExact(pull, readers, app);
    await published(hybrid, small, 's2');
    await published(pull, big, 'g2');
    await published(hybrid, big, 'g3');
    await follow(pull, readers[2], small);
    await follow(hybrid, readers[0], big, false);
    for (const app of [pull, hybrid]) await expectFeedsExact(pull, readers, app);
    await hybrid.services.fanout?.idle();
    for (const app of [pull, hybrid]) await expectFeedsExact(pull, readers, app);

    // The pull process goes, a push process comes.
    await pull.close();
    apps = [hybrid];
    const push = await startTestApp('ops_models', {
      shareWith: hybrid,
      now: clock.now,
      env: { ...env, FEED_MODEL: 'push' },
    });
    apps.push(push);
    for (const app of [hybrid, push]) await expectFeedsExact(hybrid, readers, app);
    await published(push, big, 'g4');
    await published(hybrid, big, 'g5');
    await published(push, small, 's3');
    await follow(push, readers[3], small);
    for (const app of [hybrid, push]) await expectFeedsExact(hybrid, readers, app);
    await push.services.fanout?.idle();
    await hybrid.services.fanout?.idle();
    for (const app of [hybrid, push]) await expectFeedsExact(hybrid, readers, app);

    // And back: the hybrid process goes, a pull process joins the push one.
    await hybrid.close();
    apps = [push];
    const pullAgain = await startTestApp('ops_models', {
      shareWith: push,
      now: clock.now,
      env: { ...env, FEED_MODEL: 'pull' },
    });
    apps.push(pullAgain);
    await published(pullAgain, small, 's4');
    await follow(pullAgain, readers[1], small, false);
    await published(push, big, 'g6');
    for (const app of [push, pullAgain]) await expectFeedsExact(push, readers, app);
    await push.services.fanout?.idle();
    for (const app of [push, pullAgain]) await expectFeedsExact(push, readers, app);
  });
});

describe('Redis that hangs while people publish', () => {
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    // No fan-out worker and so no relay: nothing delivers, or repairs, behind the pages' backs.
    app = await startTestApp('ops_hang', {
      env: {
        REDIS_URL: redis.url,
        FEED_MODEL: 'push',
        FANOUT_WORKERS: '0',
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

  it('shows a blog published while the breaker was open on every page once Redis answers again', async () => {
    const author = await signUp(app, 'author');
    const reader = await signUp(app, 'reader');
    await publish(app, author, 'before');
    await follow(app, reader, author); // the backfill brings it into the inbox
    // Its fan-out is done as a worker would record it: nothing is in flight.
    await app.db.query("UPDATE tb_fanout_task SET status = 'done'");
    await app.services.feed.maintainWatermark();
    redis.pause();
    // A page meets the hang first: its command times out and the breaker opens, so the publish
    // below sends nothing to Redis (a command sent into the hang would still land when it ends).
    await scrollFeed(app, reader, 10);
    const during = await publish(app, author, 'during');
    expect((await scrollFeed(app, reader, 10))[0]).toBe(during); // from MySQL meanwhile
    redis.resume();
    await waitFor('Redis answering again', async () => (await readyz(app)).redis === 'ok');
    // Its fan-out has not run (no worker): only the watermark can make a page read it.
    for (let round = 0; round < 5; round += 1) {
      expect((await scrollFeed(app, reader, 10))[0]).toBe(during);
      await sleep(100);
    }
  });
});

describe('a process killed after it committed a follow it could not apply', () => {
  let redis: PrivateRedis;
  let proxy: TcpProxy;
  let app: TestApp;
  let killed: WorkerProcess | undefined;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    proxy = new TcpProxy('127.0.0.1', redis.port);
    await proxy.start();
    app = await startTestApp('ops_killed', { env: { REDIS_URL: redis.url, FEED_MODEL: 'push', METRICS_TOKEN } });
  });
  afterAll(async () => {
    await killed?.kill('SIGKILL');
    await app.close();
    await proxy.stop();
    await redis.stop();
  });

  it('has the follow applied from the outbox by another process: the feed converges to MySQL', async () => {
    const author = await signUp(app, 'author');
    const other = await signUp(app, 'other');
    const reader = await signUp(app, 'reader');
    await follow(app, reader, author);
    await publish(app, author, "author's");
    await publish(app, other, "other's");
    await app.services.fanout?.idle();
    expect(await scrollFeed(app, reader, 10)).toEqual(await feedTruth(app, dbId(reader)));
    // A second API process, as `npm start` runs it, reaching Redis through a proxy the test cuts.
    const port = await freePort();
    const env = {
      ...app.env,
      REDIS_URL: `redis://127.0.0.1:${proxy.port}/0`,
      PORT: String(port),
      HOST: '127.0.0.1',
      FANOUT_WORKERS: '0',
    };
    killed = startNodeProcess('server.js', env);
    const url = `http://127.0.0.1:${port}/graphql`;
    await waitFor(
      'the second process to listen',
      async () => (await fetch(url.replace('/graphql', '/healthz'))).ok,
      30_000,
    );
    // Redis is away for it alone: its follow commits and cannot reach the inbox; then it dies.
    proxy.block();
    expect((await postGraphQL(url, FEED_PAGE, { first: 10 }, reader.token)).errors).toBeUndefined();
    const followed = await postGraphQL(
      url,
      'mutation($u: ID!) { follow(userId: $u) { id } }',
      { u: other.id },
      reader.token,
    );
    expect(followed.errors).toBeUndefined();
    await killed.kill('SIGKILL');
    proxy.unblock();
    await waitFor(
      'the feed to equal MySQL',
      async () =>
        JSON.stringify(await scrollFeed(app, reader, 10)) === JSON.stringify(await feedTruth(app, dbId(reader))),
      15_000,
    );
    await waitFor('the follow in the inbox', async () => (await inboxIds(app, reader)).length === 2);
    // And it stays so.
    for (let round = 0; round < 3; round += 1) {
      expect(await scrollFeed(app, reader, 10)).toEqual(await feedTruth(app, dbId(reader)));
      await sleep(200);
    }
  });
});

describe('inboxes Redis evicts, builds a dead process left', () => {
  let app: TestApp;
  let reader: TestUser;
  beforeAll(async () => {
    app = await startTestApp('ops_evict', { env: { FEED_MODEL: 'push', BUILD_STALE_MS: '1000' } });
    const author = await signUp(app, 'author');
    reader = await signUp(app, 'reader');
    await follow(app, reader, author);
    for (let i = 0; i < 3; i += 1) await publish(app, author, `post ${i}`);
    await app.services.fanout?.idle();
  });
  afterAll(() => app.close());

  it('does not trust an inbox whose entries Redis evicted while its hash stayed: the page is exact, the inbox rebuilt', async () => {
    expect(await inboxIds(app, reader)).toHaveLength(3);
    await app.redis.del(app.keys.feed(dbId(reader)));
    expect(await scrollFeed(app, reader, 10)).toEqual(await feedTruth(app, dbId(reader)));
    await app.services.feed.idle();
    expect(await inboxIds(app, reader)).toEqual(await feedTruth(app, dbId(reader)));
  });

  it('takes over a rebuild its process left unfinished, after BUILD_STALE_MS, on the next read', async () => {
    await app.redis.del(
      app.keys.feed(dbId(reader)),
      app.keys.feedMeta(dbId(reader)),
      app.keys.feedFollowees(dbId(reader)),
    );
    const dead = new RedisInbox({
      redis: app.redis,
      keys: app.keys,
      maxItems: app.config.feedMaxItems,
      ttlSeconds: 3600,
    });
    expect(await dead.beginBuild(dbId(reader), `dead:${randomUUID()}`, await currentGeneration(app))).toBe(true);
    expect(await scrollFeed(app, reader, 10)).toEqual(await feedTruth(app, dbId(reader)));
    await app.services.feed.idle();
    expect(await app.redis.hexists(app.keys.feedMeta(dbId(reader)), 'building')).toBe(1); // not stale yet
    await sleep(1100);
    expect(await scrollFeed(app, reader, 10)).toEqual(await feedTruth(app, dbId(reader)));
    await app.services.feed.idle();
    expect(await app.redis.hexists(app.keys.feedMeta(dbId(reader)), 'building')).toBe(0);
    expect(await inboxIds(app, reader)).toEqual(await feedTruth(app, dbId(reader)));
  });
});

describe("Redis's maxmemory-policy", () => {
  it('refuses a policy that may evict any key, naming it; warns of one that evicts only keys with a time to live', async () => {
    const allKeys = new PrivateRedis(await freePort(), false, ['--maxmemory-policy', 'allkeys-lru']);
    const volatile = new PrivateRedis(await freePort(), false, ['--maxmemory-policy', 'volatile-lru']);
    await Promise.all([allKeys.start(), volatile.start()]);
    try {
      await expect(startTestApp('ops_policy', { env: { REDIS_URL: allKeys.url } })).rejects.toThrow(
        /maxmemory-policy is allkeys-lru/,
      );
      const warnings: string[] = [];
      const warn = jest
        .spyOn(console, 'warn')
        .mockImplementation((message: unknown) => void warnings.push(String(message)));
      const app = await startTestApp('ops_policy', { env: { REDIS_URL: volatile.url } }).finally(() =>
        warn.mockRestore(),
      );
      try {
        expect(warnings.some((message) => message.includes('maxmemory-policy is volatile-lru'))).toBe(true);
        const user = await signUp(app, 'someone');
        expect(ok(await app.gql('{ viewer { nickName } }', {}, user.token)).viewer.nickName).toBe('someone');
      } finally {
        await app.close();
      }
    } finally {
      await Promise.all([allKeys.stop(), volatile.stop()]);
    }
  });
});

describe('a Redis that refuses writes (maxmemory reached, noeviction) while follow changes wait in the outbox', () => {
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    // No fan-out worker and so no relay of its own: the test runs the passes.
    app = await startTestApp('ops_refusing', {
      env: { REDIS_URL: redis.url, FEED_MODEL: 'push', FANOUT_WORKERS: '0' },
    });
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it('fails each pass once, without reading the same changes again and again, and applies them all when Redis takes writes again', async () => {
    const author = await signUp(app, 'author');
    // More changes than one batch of a pass, of many readers, as processes that could not reach
    // Redis leave them (written a minute ago: past the relay's grace).
    const changes = 450;
    const writtenAt = new Date(Date.now() - 60_000);
    await app.query('INSERT INTO tb_feed_change (reader_id, author_id, follow, version, created_at) VALUES ?', [
      Array.from({ length: changes }, (_, i) => [1_000_000 + i, dbId(author), true, 1, writtenAt]),
    ]);
    const waiting = async () =>
      Number((await app.query<{ n: string }>('SELECT COUNT(*) AS n FROM tb_feed_change'))[0].n);
    await redis.client().config('SET', 'maxmemory', '1');
    try {
      // Every change's first write (its pending mark) is refused: the pass ends, saying so.
      await expect(app.services.feed.relayFollowChanges()).rejects.toThrow(
        /could not be applied \(0 were; the first failure: .*OOM.*\); they stay in the outbox/,
      );
      expect(await waiting()).toBe(changes);
    } finally {
      await redis.client().config('SET', 'maxmemory', '0');
    }
    expect(await app.services.feed.relayFollowChanges()).toBe(changes);
    expect(await waiting()).toBe(0);
  });
});
