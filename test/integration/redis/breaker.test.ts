/**
 * The circuit breaker's reading of a timeout (redis/breaker.ts): a command that times out while
 * this process was listening opens the breaker at once; one that times out because the event
 * loop was busy (its reply waiting in the socket) keeps it closed, unless a PING then fails too.
 * On redis-servers of the test's own: one that answers (for the busy loop), one frozen with
 * SIGSTOP (for a Redis that does not answer). Not on the suite's shared Redis: it also serves the
 * other test files running in parallel, whose scripts and bulk deletes can hold a reply longer
 * than a deadline and so make a PING that "Redis answers" fail.
 */
import { breakerOf } from '../../../src/redis/breaker';
import { createRedis, RedisClient } from '../../../src/redis/redis.client';
import { freePort, PrivateRedis, waitFor } from '../../support/processes';

/**
 * The deadline of the tests where Redis is frozen: it never answers, so each timeout costs the
 * whole deadline. Long enough that what else this process does on a loaded machine (a GC pause,
 * jest reporting a test) is less than half of one: with 100 ms, a CI run on Node 24 found the
 * loop busy for half the deadline before a timeout of a process that was waiting, so the breaker
 * checked instead of opening, as the rule says it should for a busy process.
 */
const TIMEOUT_MS = 300;

/**
 * The deadline of the test where Redis answers: its check PING must come back within it on a
 * loaded 2-core machine (other test files, MariaDB), so it has half a second of margin.
 */
const ANSWERED_TIMEOUT_MS = 500;

/** This process's event loop held for `ms`, as a long GC pause or a burst of work holds it. */
function holdTheLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * Lets the auto-pipelined commands of this tick go out: ioredis writes them on the next tick,
 * and starts their deadlines then.
 */
const sent = () => new Promise((resolve) => setImmediate(resolve));

/** Lets the loop idle for `ms` (timers and sockets run). */
const idle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect(url: string, warnings: string[], timeoutMs = TIMEOUT_MS): Promise<RedisClient> {
  const redis = createRedis({ redisUrl: url, redisClusterNodes: null, redisCommandTimeoutMs: timeoutMs }, (message) =>
    warnings.push(message),
  );
  await waitFor(`Redis at ${url}`, async () => redis.status === 'ready');
  // Long enough for the breaker's loop samples to cover a deadline of idle waiting.
  await idle(3 * timeoutMs);
  return redis;
}

const stateOf = (redis: RedisClient) => breakerOf(redis)!.state;

describe('a timeout while this process was busy', () => {
  let server: PrivateRedis;
  let redis: RedisClient;
  const warnings: string[] = [];
  beforeAll(async () => {
    server = new PrivateRedis(await freePort());
    await server.start();
    redis = await connect(server.url, warnings, ANSWERED_TIMEOUT_MS);
  });
  afterAll(async () => {
    await redis.quit();
    await server.stop();
  });

  it('is checked with a PING, which Redis answers: the breaker stays closed', async () => {
    const answer = redis.ping();
    await sent();
    holdTheLoop(4 * ANSWERED_TIMEOUT_MS);
    // The reply came within microseconds, but the deadline's timer ran before the socket was read.
    await expect(answer).rejects.toThrow('Command timed out');
    expect(stateOf(redis)).toBe('closed');
    await idle(3 * ANSWERED_TIMEOUT_MS);
    expect(stateOf(redis)).toBe('closed');
    expect(await redis.ping()).toBe('PONG');
    expect(warnings.filter((warning) => warning.includes('does not answer'))).toEqual([]);
  });
});

describe('a Redis that does not answer (SIGSTOP)', () => {
  let server: PrivateRedis;
  let redis: RedisClient;
  const warnings: string[] = [];
  beforeAll(async () => {
    server = new PrivateRedis(await freePort());
    await server.start();
    redis = await connect(server.url, warnings);
  });
  afterAll(async () => {
    server.resume();
    await redis.quit();
    await server.stop();
  });

  it('opens the breaker at its first timeout when this process was idle, and closes it once Redis answers', async () => {
    await idle(3 * TIMEOUT_MS);
    server.pause();
    await expect(redis.get('anything')).rejects.toThrow('Command timed out');
    expect(stateOf(redis)).toBe('open');
    expect(warnings.some((warning) => warning.includes('does not answer (Command timed out)'))).toBe(true);
    server.resume();
    await waitFor('the breaker to close', async () => stateOf(redis) === 'closed', 10_000);
  });

  it('opens it after the PING that checks a timeout of a busy stretch fails too', async () => {
    await idle(3 * TIMEOUT_MS);
    server.pause();
    const answer = redis.get('anything');
    await sent();
    holdTheLoop(4 * TIMEOUT_MS);
    await expect(answer).rejects.toThrow('Command timed out');
    expect(stateOf(redis)).toBe('closed'); // being checked: callers still use Redis
    await waitFor('the check to open the breaker', async () => stateOf(redis) === 'open', 5_000);
    server.resume();
    await waitFor('the breaker to close', async () => stateOf(redis) === 'closed', 10_000);
  });
});
