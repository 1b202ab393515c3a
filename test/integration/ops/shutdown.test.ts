/**
 * Bounded shutdown on real processes (node dist/src/server.js and worker.js, as `npm start` and
 * `npm run worker` run them): SIGTERM drains and exits 0 promptly even with keep-alive
 * connections open, and exits within SHUTDOWN_TIMEOUT_MS (plus a margin for the process to
 * start exiting) when its Redis hangs (a redis-server of the test's own, stopped with SIGSTOP).
 */
import http from 'node:http';
import { Redis } from 'ioredis';
import {
  deleteKeys,
  dropDatabase,
  MYSQL_URL,
  REDIS_URL,
  TEST_JWT_SECRET,
  testDatabase,
  testKeyPrefix,
} from '../../support/harness';
import {
  freePort,
  PrivateRedis,
  startNodeProcess,
  startWorkerProcess,
  waitFor,
  WorkerProcess,
} from '../../support/processes';

/** Time for a process to notice its deadline and exit, on a machine shared by the suite. */
const EXIT_MARGIN_MS = 5000;

const started: WorkerProcess[] = [];
afterAll(async () => {
  for (const child of started) await child.kill('SIGKILL');
});

async function serverEnv(
  name: string,
  env: Record<string, string>,
): Promise<{ env: Record<string, string>; port: number }> {
  await dropDatabase(testDatabase(name));
  const redis = new Redis(env.REDIS_URL ?? REDIS_URL);
  await deleteKeys(redis, `${testKeyPrefix(name)}*`);
  redis.disconnect();
  const port = await freePort();
  return {
    port,
    env: {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `${MYSQL_URL}/${testDatabase(name)}`,
      REDIS_URL,
      REDIS_KEY_PREFIX: testKeyPrefix(name),
      JWT_SECRET: TEST_JWT_SECRET,
      PASSWORD_HASH_COST: '1024',
      NODE_ENV: 'production',
      MIGRATE_ON_START: 'on',
      RATE_LIMITS: 'off',
      ...env,
    },
  };
}

async function startServer(
  name: string,
  env: Record<string, string>,
): Promise<{ server: WorkerProcess; port: number; env: Record<string, string> }> {
  const setup = await serverEnv(name, env);
  const server = startNodeProcess('server.js', setup.env);
  started.push(server);
  await waitFor('the server to listen', async () => (await fetch(`http://127.0.0.1:${setup.port}/healthz`)).ok, 30_000);
  return { server, ...setup };
}

/** POSTs one operation through `agent` (keep-alive: its sockets stay open after the answer). */
function post(agent: http.Agent, port: number, query: string, token?: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        path: '/graphql',
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      },
      (response) => {
        let body = '';
        response.on('data', (chunk) => (body += chunk)).on('end', () => resolve(JSON.parse(body)));
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify({ query }));
  });
}

/** Signs up `count` users through `agent`; their tokens. */
async function signUps(agent: http.Agent, port: number, prefix: string, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const answer = await post(
      agent,
      port,
      `mutation { signUp(nickName: "${prefix}${i}", password: "password-123") { token } }`,
    );
    tokens.push(answer.data.signUp.token);
  }
  return tokens;
}

/** Sends `signal` and resolves with the exit code and how long the process took to exit. */
async function signalled(child: WorkerProcess, signal: NodeJS.Signals): Promise<{ code: number | null; ms: number }> {
  const sent = Date.now();
  child.child.kill(signal);
  const code = await child.exited;
  return { code, ms: Date.now() - sent };
}

it('exits 0 promptly on SIGTERM after load, with keep-alive connections open', async () => {
  // The drain cuts connections still open halfway through the timeout: a prompt exit (well
  // before that) shows idle keep-alive connections were closed at once, not waited out.
  const timeoutMs = 20_000;
  const { server, port } = await startServer('shutdown_keepalive', { SHUTDOWN_TIMEOUT_MS: String(timeoutMs) });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const [author, reader] = await signUps(agent, port, 'keepalive', 2);
  const authorId = (await post(agent, port, '{ viewer { id } }', author)).data.viewer.id;
  await post(agent, port, `mutation { follow(userId: "${authorId}") { id } }`, reader);
  await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      i % 20 === 0
        ? post(agent, port, `mutation { publishBlog(input: { title: "t${i}", content: "c" }) { id } }`, author)
        : post(agent, port, '{ followFeed(first: 10) { edges { node { title author { nickName } } } } }', reader),
    ),
  );
  const open = Object.values(agent.freeSockets).flat().length;
  expect(open).toBeGreaterThan(0); // idle keep-alive connections to the server

  const { code, ms } = await signalled(server, 'SIGTERM');
  expect(code).toBe(0);
  expect(ms).toBeLessThan(timeoutMs / 2);
  expect(server.output()).toContain('shutdown finished');
  agent.destroy();
});

describe('with its Redis hung (SIGSTOP)', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
  });
  afterAll(async () => {
    redis.resume();
    await redis.stop();
  });

  it('the server and a worker exit within SHUTDOWN_TIMEOUT_MS of SIGTERM', async () => {
    const timeoutMs = 2000;
    const { server, port, env } = await startServer('shutdown_redis_hung', {
      REDIS_URL: redis.url,
      SHUTDOWN_TIMEOUT_MS: String(timeoutMs),
      FANOUT_WORKERS: '1',
    });
    const worker = startWorkerProcess(env);
    started.push(worker);
    await waitFor('the worker to start', async () => worker.output().includes('fan-out worker running'), 30_000);
    const agent = new http.Agent({ keepAlive: true });
    const [author, reader] = await signUps(agent, port, 'hung', 2);
    const authorId = (await post(agent, port, '{ viewer { id } }', author)).data.viewer.id;
    await post(agent, port, `mutation { follow(userId: "${authorId}") { id } }`, reader);
    for (let i = 0; i < 5; i += 1)
      await post(agent, port, `mutation { publishBlog(input: { title: "before ${i}", content: "c" }) { id } }`, author);

    redis.pause();
    // A publish while Redis hangs: recorded in MySQL, its fan-out job waiting on Redis.
    await post(agent, port, 'mutation { publishBlog(input: { title: "during", content: "c" }) { id } }', author);

    const [serverExit, workerExit] = await Promise.all([signalled(server, 'SIGTERM'), signalled(worker, 'SIGTERM')]);
    for (const exit of [serverExit, workerExit]) {
      expect([0, 1]).toContain(exit.code);
      expect(exit.ms).toBeLessThan(timeoutMs + EXIT_MARGIN_MS);
    }
    expect(server.output()).toContain('SIGTERM');
    agent.destroy();
  });
});

describe('with its Redis just restarted', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('a worker SIGTERMed while its connections still reconnect finishes its shutdown and exits 0', async () => {
    // BullMQ's close waits for an 'end' that a reconnecting blocking connection never emits;
    // the workers' stop bounds that wait once no job runs (WORKER_CLOSE_AFTER_JOBS_MS).
    const timeoutMs = 30_000;
    const { env } = await serverEnv('shutdown_redis_restarted', {
      REDIS_URL: redis.url,
      SHUTDOWN_TIMEOUT_MS: String(timeoutMs),
    });
    const worker = startWorkerProcess(env);
    started.push(worker);
    await waitFor('the worker to start', async () => worker.output().includes('fan-out worker running'), 30_000);
    await redis.stop();
    // Away long enough for ioredis's reconnect delay to reach its cap (1 s): the blocking
    // connection is then most likely between two attempts when the signal comes.
    await new Promise((resolve) => setTimeout(resolve, 6000));
    await redis.start();
    const { code } = await signalled(worker, 'SIGTERM');
    expect(worker.output()).toContain('shutdown finished');
    expect(code).toBe(0);
  });
});
