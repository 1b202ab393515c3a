/**
 * A fan-out worker process (`npm run worker`) is observable on WORKER_PORT: /healthz, /readyz
 * (ready or not for anyone, the details for a bearer of METRICS_TOKEN) and /metrics with the
 * fan-out's figures: queue depth by lane while chunks wait, inbox writes, the lag from publish
 * to the last inbox, the Redis breaker, job errors. On a redis-server of the test's own, which
 * it freezes to see the worker turn not ready and its breaker open.
 */
import { follow, publish, signUp, startTestApp, TestApp } from '../../support/harness';
import { freePort, PrivateRedis, startWorkerProcess, waitFor, WorkerProcess } from '../../support/processes';

const TOKEN = 'worker-probes-token-0123456789';
const FOLLOWERS = 6;

let redis: PrivateRedis;
let app: TestApp;
let worker: WorkerProcess;
let base: string;

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no ${name} in the worker's /metrics:\n${text.slice(0, 2000)}`);
  return Number(line.split(' ').pop());
}

const get = (path: string, authorization?: string) =>
  fetch(`${base}${path}`, { headers: authorization ? { authorization } : {} });
const scrape = async () => (await get('/metrics', `Bearer ${TOKEN}`)).text();

beforeAll(async () => {
  redis = new PrivateRedis(await freePort());
  await redis.start();
  // API only: the fan-out runs in the worker process.
  app = await startTestApp('worker_probes', {
    env: { REDIS_URL: redis.url, FANOUT_WORKERS: '0', FEED_MODEL: 'push', METRICS_TOKEN: TOKEN },
  });
  // One follower per chunk, one job a second: chunks wait in their lane long enough to be seen.
  worker = startWorkerProcess({
    ...app.env,
    FANOUT_CHUNK_SIZE: '1',
    FANOUT_JOBS_PER_SECOND: '2',
    REDIS_COMMAND_TIMEOUT_MS: '200',
  });
  await waitFor(
    'the worker to serve its probes',
    async () => /probes and metrics on (http:\/\/[\d.]+:\d+)/.test(worker.output()),
    30_000,
  );
  base = /probes and metrics on (http:\/\/[\d.]+:\d+)/.exec(worker.output())![1];
}, 60_000);

afterAll(async () => {
  redis?.resume();
  expect(await worker?.kill('SIGTERM')).toBe(0);
  await app?.close();
  await redis?.stop();
});

test('/healthz answers; /readyz says ready to anyone and shows what it checked to a bearer of METRICS_TOKEN', async () => {
  const health = await get('/healthz');
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'ok' });
  for (const authorization of [undefined, 'Bearer wrong-token-0123456789']) {
    const anonymous = await get('/readyz', authorization);
    expect(anonymous.status).toBe(200);
    expect(await anonymous.json()).toEqual({ status: 'ready' });
  }
  const detailed = await get('/readyz', `Bearer ${TOKEN}`);
  expect(await detailed.json()).toEqual({ status: 'ready', workers: 'running', mysql: 'ok', redis: 'ok' });
  expect((await get('/metrics')).status).toBe(401);
  expect((await get('/nothing')).status).toBe(404);
});

test('/metrics: chunks waiting in their lane, then the inbox writes and the lag of the fan-out, from publish to the last inbox', async () => {
  const author = await signUp(app, 'author');
  for (let i = 0; i < FOLLOWERS; i += 1) await follow(app, await signUp(app, `reader${i}`), author);
  await publish(app, author, 'to six readers, one chunk each');
  // Dispatch goes first, then the six chunks at two a second: some wait in the chunk lane.
  await waitFor(
    'chunks waiting in their lane',
    async () => metric(await scrape(), 'fanout_queue_waiting_jobs{lane="chunk"}') > 0,
    20_000,
  );
  const waiting = await scrape();
  expect(metric(waiting, 'fanout_queue_jobs{state="prioritized"}')).toBe(
    metric(waiting, 'fanout_queue_waiting_jobs{lane="chunk"}'),
  );
  expect(metric(waiting, 'fanout_queue_waiting_jobs{lane="dispatch"}')).toBe(0);

  await waitFor('the fan-out to finish', async () => metric(await scrape(), 'fanout_lag_seconds_count') === 1, 20_000);
  const done = await scrape();
  expect(metric(done, 'feed_inbox_writes_total')).toBe(FOLLOWERS);
  expect(metric(done, 'fanout_lag_seconds_sum')).toBeGreaterThan(0);
  expect(metric(done, 'fanout_lag_seconds_bucket{le="+Inf"}')).toBe(1);
  expect(metric(done, 'fanout_queue_waiting_jobs{lane="chunk"}')).toBe(0);
  expect(metric(done, 'redis_breaker_state{state="closed"}')).toBe(1);
  expect(done).toContain('# TYPE fanout_job_errors_total counter');
  expect(done).toContain('feed_process_cpu_user_seconds_total');
});

test('a Redis that stops answering makes the worker not ready and opens its breaker; it is ready again once Redis answers', async () => {
  redis.pause();
  try {
    await waitFor('the worker not ready', async () => (await get('/readyz')).status === 503, 20_000);
    expect(await (await get('/readyz')).json()).toEqual({ status: 'not ready' });
    const detailed = (await (await get('/readyz', `Bearer ${TOKEN}`)).json()) as Record<string, string>;
    expect(detailed).toMatchObject({ status: 'not ready', workers: 'running', mysql: 'ok' });
    expect(detailed.redis).not.toBe('ok');
    await waitFor(
      'the breaker open',
      async () => metric(await scrape(), 'redis_breaker_state{state="closed"}') === 0,
      20_000,
    );
  } finally {
    redis.resume();
  }
  await waitFor('the worker ready again', async () => (await get('/readyz')).status === 200, 20_000);
  expect(metric(await scrape(), 'redis_breaker_state{state="closed"}')).toBe(1);
});
