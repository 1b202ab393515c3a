/**
 * The live bus (src/live/) on real Redis, no mocks: one suite of its semantics over both
 * implementations (RedisLiveBus as two processes, each with its own client, and MemoryLiveBus
 * as the embedded mode's one process), then what only Redis has: the mark's time to live and
 * its fields per process, the commands a publish costs (INFO commandstats), resubscribing after
 * a cut connection, and Redis failures. The cluster pass (TEST_REDIS_CLUSTER_NODES, see
 * test/support/global-setup.ts) runs all of it on a Redis Cluster, except the failure test,
 * which freezes a redis-server of its own. Readers are numbered from 1001 up, new in each test,
 * so no test sees another's marks.
 */
import { LIVE_BUFFER_EVENTS, LiveBus, LiveEvent, LiveSubscription } from '../../../src/live/live.bus';
import { MemoryLiveBus } from '../../../src/live/live.memory';
import { RedisLiveBus, RedisLiveBusOptions } from '../../../src/live/live.redis';
import { RedisKeys } from '../../../src/redis/keys';
import { createRedis, isCluster, RedisClient } from '../../../src/redis/redis.client';
import { deleteKeys, REDIS_URL, testKeyPrefix } from '../../support/harness';
import { freePort, PrivateRedis, waitFor } from '../../support/processes';

const CLUSTER_NODES = process.env.TEST_REDIS_CLUSTER_NODES;
const keys = new RedisKeys(testKeyPrefix('live_bus'));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let lastReader = 1000;
const newReader = () => (lastReader += 1);

const added = (blogId: number): LiveEvent => ({
  kind: 'added',
  blogId,
  score: 1_700_000_000_000 + blogId,
  authorId: 7,
});

/** A client as the service makes it (deadline, breaker, auto-pipelining), on the suite's Redis or another server. */
async function connectClient(
  warnings: string[],
  redisUrl = REDIS_URL,
  cluster = redisUrl === REDIS_URL ? CLUSTER_NODES : undefined,
): Promise<RedisClient> {
  const redisClusterNodes = cluster
    ? cluster.split(',').map((address) => {
        const [host, port] = address.split(':');
        return { host, port: Number(port) };
      })
    : null;
  const redis = createRedis({ redisUrl, redisClusterNodes, redisCommandTimeoutMs: 1000 }, (message) =>
    warnings.push(message),
  );
  if (redis.status !== 'ready') await waitFor(`Redis at ${cluster ?? redisUrl}`, async () => redis.status === 'ready');
  return redis;
}

async function quit(redis: RedisClient): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}

/** Reads a subscription in the background, as graphql-js would. */
function collect(subscription: LiveSubscription): { events: LiveEvent[]; done: Promise<void> } {
  const events: LiveEvent[] = [];
  const done = (async () => {
    for await (const event of subscription) events.push(event);
  })();
  return { events, done };
}

async function eventually(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  await waitFor(what, async () => check(), 10_000);
}

/** Subscriptions to a reader's channel on the server (all masters of a cluster), however many processes hold them. */
async function channelSubscriptions(redis: RedisClient, readerId: number): Promise<number> {
  const channel = keys.liveChannel(readerId);
  if (!isCluster(redis)) return Number(((await redis.pubsub('NUMSUB', channel)) as [string, number])[1]);
  let total = 0;
  for (const node of redis.nodes('master'))
    total += Number(((await node.pubsub('SHARDNUMSUB', channel)) as [string, number])[1]);
  return total;
}

/** The calls of each command since the last CONFIG RESETSTAT, summed over the masters of a cluster. */
async function commandCalls(redis: RedisClient): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    for (const [, command, count] of (await node.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      calls[command] = (calls[command] ?? 0) + Number(count);
    }
  }
  return calls;
}

async function resetStats(redis: RedisClient): Promise<void> {
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) await node.config('RESETSTAT');
}

let admin: RedisClient;
const adminWarnings: string[] = [];
beforeAll(async () => {
  admin = await connectClient(adminWarnings);
  await deleteKeys(admin, keys.all());
});
afterAll(() => quit(admin));

// ---------------------------------------------------------------------------------------------
// The semantics, over both implementations

interface World {
  /** The process that publishes (the fan-out's). */
  publisher: LiveBus;
  /** The process that holds the readers' subscriptions (an API process). */
  subscriber: LiveBus;
  warnings: string[];
  /** Redis subscriptions to the reader's channel; undefined where there are none (memory). */
  channelSubscriptions?: (readerId: number) => Promise<number>;
  close(): Promise<void>;
}

const implementations: Array<[string, () => Promise<World>]> = [
  [
    'RedisLiveBus, two processes',
    async () => {
      const warnings: string[] = [];
      const [a, b] = [await connectClient(warnings), await connectClient(warnings)];
      const subscriber = new RedisLiveBus({ redis: a, keys, warn: (message) => warnings.push(message) });
      const publisher = new RedisLiveBus({ redis: b, keys, warn: (message) => warnings.push(message) });
      return {
        publisher,
        subscriber,
        warnings,
        channelSubscriptions: (readerId) => channelSubscriptions(admin, readerId),
        async close() {
          await Promise.all([subscriber.close(), publisher.close()]);
          await Promise.all([quit(a), quit(b)]);
        },
      };
    },
  ],
  [
    'MemoryLiveBus',
    async () => {
      const warnings: string[] = [];
      const bus = new MemoryLiveBus((message) => warnings.push(message));
      return { publisher: bus, subscriber: bus, warnings, close: () => bus.close() };
    },
  ],
];

describe.each(implementations)('%s', (_name, makeWorld) => {
  let world: World;
  beforeEach(async () => {
    world = await makeWorld();
  });
  afterEach(() => world.close());

  test('delivers what another process publishes to a connected reader, in order, and to nobody else', async () => {
    const [reader, offline] = [newReader(), newReader()];
    const subscription = await world.subscriber.connect(reader);
    const got = collect(subscription);

    expect(await world.publisher.liveAmong([offline, reader, reader])).toEqual([reader]);
    expect(await world.publisher.publish([reader, offline], added(1))).toBe(1);
    expect(await world.publisher.publish([offline, reader], added(2))).toBe(1);
    expect(await world.publisher.publish([reader], { kind: 'follows' })).toBe(1);
    await eventually('three events', () => got.events.length === 3);
    expect(got.events).toEqual([added(1), added(2), { kind: 'follows' }]);

    await subscription.close();
    await got.done;
    expect(world.warnings).toEqual([]);
  });

  test('readers who are not connected: nobody is live, nothing is sent', async () => {
    const offline = Array.from({ length: 50 }, newReader);
    expect(await world.publisher.liveAmong(offline)).toEqual([]);
    expect(await world.publisher.liveAmong([])).toEqual([]);
    expect(await world.publisher.publish(offline, added(1))).toBe(0);
    expect(await world.publisher.publish([], added(1))).toBe(0);
  });

  test('subscriptions of one reader share one channel; the reader stays live until the last one closes', async () => {
    const reader = newReader();
    const [first, second] = await Promise.all([world.subscriber.connect(reader), world.subscriber.connect(reader)]);
    const [gotFirst, gotSecond] = [collect(first), collect(second)];
    if (world.channelSubscriptions) expect(await world.channelSubscriptions(reader)).toBe(1);

    expect(await world.publisher.publish([reader], added(1))).toBe(1);
    await eventually('both copies', () => gotFirst.events.length === 1 && gotSecond.events.length === 1);

    await first.close();
    await gotFirst.done;
    expect(await world.publisher.liveAmong([reader])).toEqual([reader]);
    if (world.channelSubscriptions) expect(await world.channelSubscriptions(reader)).toBe(1);
    expect(await world.publisher.publish([reader], added(2))).toBe(1);
    await eventually('the second event on the open subscription', () => gotSecond.events.length === 2);
    expect(gotFirst.events).toEqual([added(1)]);
    expect(gotSecond.events).toEqual([added(1), added(2)]);

    await second.close();
    await gotSecond.done;
    expect(await world.publisher.liveAmong([reader])).toEqual([]);
    if (world.channelSubscriptions) expect(await world.channelSubscriptions(reader)).toBe(0);
    expect(await world.publisher.publish([reader], added(3))).toBe(0);
  });

  test('close() and return() end the iteration and stop delivery', async () => {
    const [reader, other] = [newReader(), newReader()];
    const subscription = await world.subscriber.connect(reader);
    const pending = subscription.next();
    await subscription.close();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(await subscription.next()).toEqual({ value: undefined, done: true });
    await subscription.close(); // idempotent
    expect(await world.publisher.liveAmong([reader])).toEqual([]);
    expect(await world.publisher.publish([reader], added(1))).toBe(0);
    expect(await subscription.next()).toEqual({ value: undefined, done: true });

    // graphql-js stops a source with return().
    const source = await world.subscriber.connect(other);
    expect(await source.return!()).toEqual({ value: undefined, done: true });
    expect(await world.publisher.liveAmong([other])).toEqual([]);
    if (world.channelSubscriptions) expect(await world.channelSubscriptions(other)).toBe(0);
  });

  test('a reader who closes and connects again at once is subscribed (the close runs first)', async () => {
    const reader = newReader();
    const before = await world.subscriber.connect(reader);
    const closing = before.close();
    const after = await world.subscriber.connect(reader);
    await closing;
    const got = collect(after);
    expect(await world.publisher.liveAmong([reader])).toEqual([reader]);
    if (world.channelSubscriptions) expect(await world.channelSubscriptions(reader)).toBe(1);
    expect(await world.publisher.publish([reader], added(1))).toBe(1);
    await eventually('the event', () => got.events.length === 1);
    await after.close();
  });

  test(`a subscription that is not read keeps its newest ${LIVE_BUFFER_EVENTS} events, with one warning per overflow`, async () => {
    const reader = newReader();
    const subscription = await world.subscriber.connect(reader);
    for (let blogId = 1; blogId <= LIVE_BUFFER_EVENTS + 5; blogId += 1)
      await world.publisher.publish([reader], added(blogId));
    await eventually('five drops', () => subscription.dropped === 5);
    const overflowWarnings = () => world.warnings.filter((warning) => warning.includes(`reader ${reader} is not read`));
    expect(overflowWarnings()).toHaveLength(1);

    const read: number[] = [];
    for (let i = 0; i < LIVE_BUFFER_EVENTS; i += 1)
      read.push(((await subscription.next()).value as Extract<LiveEvent, { kind: 'added' }>).blogId);
    expect(read).toEqual(Array.from({ length: LIVE_BUFFER_EVENTS }, (_, i) => i + 6));

    // Caught up, then behind again: a new episode, a new warning.
    const pending = subscription.next();
    await world.publisher.publish([reader], added(1000));
    expect((await pending).value).toEqual(added(1000));
    for (let blogId = 1; blogId <= LIVE_BUFFER_EVENTS + 1; blogId += 1)
      await world.publisher.publish([reader], added(2000 + blogId));
    await eventually('one more drop', () => subscription.dropped === 6);
    expect(overflowWarnings()).toHaveLength(2);
    expect(((await subscription.next()).value as Extract<LiveEvent, { kind: 'added' }>).blogId).toBe(2002);
    await subscription.close();
  });

  test('listen: the channels of several readers feed one sink, and each close lets go of its own channel only', async () => {
    const [first, second] = [newReader(), newReader()];
    const got: LiveEvent[] = [];
    let ended = 0;
    const sink = { push: (event: LiveEvent) => got.push(event), end: () => (ended += 1) };
    const [onFirst, onSecond] = await Promise.all([
      world.subscriber.listen(first, sink),
      world.subscriber.listen(second, sink),
    ]);
    expect(world.subscriber.held().sort()).toEqual([first, second].sort());
    expect(await world.publisher.publish([first], added(1))).toBe(1);
    expect(await world.publisher.publish([second], added(2))).toBe(1);
    await eventually('both events in the one sink', () => got.length === 2);
    expect(got).toEqual([added(1), added(2)]);

    await onFirst.close();
    await onFirst.close(); // idempotent
    expect(world.subscriber.held()).toEqual([second]);
    expect(await world.publisher.liveAmong([first, second])).toEqual([second]);
    if (world.channelSubscriptions) expect(await world.channelSubscriptions(first)).toBe(0);
    expect(await world.publisher.publish([first], added(3))).toBe(0);

    // The bus closing tells the sink of every listener it still has.
    await world.subscriber.close();
    expect(ended).toBe(1);
    expect(world.subscriber.held()).toEqual([]);
    await onSecond.close();
    expect(got).toEqual([added(1), added(2)]);
  });

  test("closing the bus ends the process's subscriptions", async () => {
    const reader = newReader();
    const subscription = await world.subscriber.connect(reader);
    const got = collect(subscription);
    await world.subscriber.close();
    await got.done;
    expect(await world.publisher.liveAmong([reader])).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Redis only

describe('RedisLiveBus', () => {
  const clients: RedisClient[] = [];
  const buses: RedisLiveBus[] = [];
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);

  async function makeBus(
    options: RedisLiveBusOptions = {},
    redisUrl?: string,
  ): Promise<{ bus: RedisLiveBus; redis: RedisClient }> {
    const redis = await connectClient(warnings, redisUrl);
    const bus = new RedisLiveBus({ redis, keys, warn, ...options });
    clients.push(redis);
    buses.push(bus);
    return { bus, redis };
  }

  /** Closes the test's buses, then their clients (before a test stops its server). */
  async function closeAll(): Promise<void> {
    await Promise.all(buses.splice(0).map((bus) => bus.close()));
    await Promise.all(clients.splice(0).map(quit));
  }

  afterEach(async () => {
    await closeAll();
    warnings.length = 0;
  });

  const fields = async (readerId: number) => (await admin.hkeys(keys.live(readerId))).sort();

  test('the mark: a field per process holding the reader, refreshed while held, deleted by the last close', async () => {
    const options = { ttlMs: 600, refreshMs: 150 };
    const [{ bus: a }, { bus: b }] = [await makeBus(options), await makeBus(options)];
    const reader = newReader();

    const onA = await a.connect(reader);
    expect(await fields(reader)).toEqual([a.processId]);
    const ttl = await admin.pttl(keys.live(reader));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
    const onB = await b.connect(reader);
    expect(await fields(reader)).toEqual([a.processId, b.processId].sort());

    await sleep(1500); // longer than the time to live: only the refreshes keep the mark
    expect(await fields(reader)).toEqual([a.processId, b.processId].sort());
    expect(await b.liveAmong([reader])).toEqual([reader]);

    await onA.close(); // B still holds the reader
    expect(await fields(reader)).toEqual([b.processId]);
    expect(await a.liveAmong([reader])).toEqual([reader]);
    await onB.close();
    expect(await admin.exists(keys.live(reader))).toBe(0);
    expect(warnings).toEqual([]);
  });

  test('a process that dies without closing: its marks expire, or the next refresh of another process drops them', async () => {
    const options = { ttlMs: 600, refreshMs: 150 };
    // A client that is gone fails nothing on a cluster (commands wait for it): the dying bus's
    // close at the end waits only this long for Redis.
    const [{ bus: dying, redis: dyingRedis }, { bus: survivor }] = [
      await makeBus({ ...options, stepTimeoutMs: 2000 }),
      await makeBus(options),
    ];
    const [alone, shared] = [newReader(), newReader()];
    await dying.connect(alone);
    await dying.connect(shared);
    const onSurvivor = await survivor.connect(shared);
    expect(await fields(shared)).toEqual([dying.processId, survivor.processId].sort());

    dyingRedis.disconnect(); // no more refreshes, and no unmark
    await sleep(1200);
    expect(await admin.exists(keys.live(alone))).toBe(0);
    expect(await survivor.liveAmong([alone, shared])).toEqual([shared]);
    expect(await fields(shared)).toEqual([survivor.processId]);
    await onSurvivor.close();
    expect(await admin.exists(keys.live(shared))).toBe(0);
  });

  test('a chunk of 1000 readers who are not connected costs one lookup and no PUBLISH; one live reader, one', async () => {
    // INFO commandstats counts the whole server: a redis-server of the test's own, in the cluster
    // pass too (the pass's cluster serves every test file at once, whose fan-outs look up live
    // readers as well).
    const server = new PrivateRedis(await freePort());
    await server.start();
    try {
      const { bus, redis } = await makeBus({}, server.url);
      const { bus: holder } = await makeBus({}, server.url);
      const chunk = Array.from({ length: 1000 }, newReader);
      await bus.liveAmong(chunk); // loads the script, so the counts below are one call's
      await resetStats(redis);
      expect(await bus.publish(chunk, added(1))).toBe(0);
      const offline = await commandCalls(redis);
      expect(offline.publish ?? 0).toBe(0);
      expect(offline.spublish ?? 0).toBe(0);
      expect(offline.exists).toBe(1000);
      if (!isCluster(redis)) expect(offline.evalsha).toBe(1); // one script call: one round trip

      const subscription = await holder.connect(chunk[500]);
      const got = collect(subscription);
      await resetStats(redis);
      expect(await bus.publish(chunk, added(2))).toBe(1);
      const oneLive = await commandCalls(redis);
      expect((oneLive.publish ?? 0) + (oneLive.spublish ?? 0)).toBe(1);
      expect(oneLive[isCluster(redis) ? 'spublish' : 'publish']).toBe(1);
      await eventually('the event', () => got.events.length === 1);
    } finally {
      await closeAll();
      await server.stop();
    }
  });

  test('a cut subscriber connection reconnects, resubscribes and marks its readers again', async () => {
    const { bus: holder } = await makeBus(); // the default refresh (a minute) is not what brings the mark back
    const { bus: publisher } = await makeBus();
    const reader = newReader();
    const subscription = await holder.connect(reader);
    const got = collect(subscription);
    expect(await publisher.publish([reader], added(1))).toBe(1);
    await eventually('the first event', () => got.events.length === 1);

    // Redis restarted empty, as far as this reader is concerned, and the connection was cut.
    await admin.del(keys.live(reader));
    let cut = 0;
    for (const node of isCluster(admin) ? admin.nodes('master') : [admin]) {
      const list = (await node.client('LIST')) as string;
      const subscribers = list
        .split('\n')
        .filter((entry) => entry.includes(`live-${holder.processId}`) && /\bs?sub=[1-9]/.test(entry));
      for (const line of subscribers) {
        const id = /\bid=(\d+)/.exec(line)![1];
        await node.client('KILL', 'ID', id);
        cut += 1;
      }
    }
    expect(cut).toBeGreaterThan(0);

    await eventually('the mark is back', async () => (await publisher.liveAmong([reader])).length === 1);
    let blogId = 1;
    await eventually('delivery resumes', async () => {
      await publisher.publish([reader], added((blogId += 1)));
      await sleep(100);
      return got.events.length > 1;
    });
    expect(got.events[0]).toEqual(added(1));

    // A message on the channel that is not an event is dropped with a warning; delivery goes on.
    const count = got.events.length;
    if (isCluster(admin)) await admin.spublish(keys.liveChannel(reader), 'not json');
    else await admin.publish(keys.liveChannel(reader), 'not json');
    await publisher.publish([reader], added(999));
    await eventually('the event after the garbage', () => got.events.length === count + 1);
    expect(got.events[count]).toEqual(added(999));
    expect(warnings.some((warning) => warning.includes('not a live event'))).toBe(true);
    await subscription.close();
  });

  test('with Redis not answering, publish and liveAmong resolve (with a warning) and connect fails', async () => {
    const server = new PrivateRedis(await freePort());
    await server.start();
    try {
      const { bus } = await makeBus({}, server.url);
      const reader = newReader();
      const subscription = await bus.connect(reader);
      expect(await bus.liveAmong([reader])).toEqual([reader]);

      server.pause();
      expect(await bus.publish([reader], added(1))).toBe(0);
      expect(warnings.some((warning) => warning.includes('live feed: looking up 1 live readers failed'))).toBe(true);
      expect(await bus.liveAmong([reader])).toEqual([]); // the breaker is open now: no waiting
      await expect(bus.connect(newReader())).rejects.toThrow();

      server.resume();
      await eventually('Redis answers again', async () => (await bus.liveAmong([reader])).length === 1);
      const again = await bus.connect(newReader());
      await again.close();
      await subscription.close();
    } finally {
      await closeAll();
      await server.stop();
    }
  });
});
