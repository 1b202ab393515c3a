/**
 * The server as `npm start` runs it (node dist/src/server.js): it creates its database and
 * migrates it, serves GraphQL, answers unreadable bodies with JSON errors, refuses a bad
 * configuration naming the variable, and exits 0 on SIGTERM.
 */
import { createConnection } from 'mysql2/promise';
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
import { freePort, startNodeProcess, waitFor, WorkerProcess } from '../../support/processes';

const DATABASE = testDatabase('server_process');
const KEY_PREFIX = testKeyPrefix('server_process');
let port: number;
let server: WorkerProcess;
let url: string;

beforeAll(async () => {
  await dropDatabase(DATABASE);
  // Its own key prefix, emptied: rate-limit counters of an earlier run must not carry over.
  const redis = new Redis(REDIS_URL);
  await deleteKeys(redis, `${KEY_PREFIX}*`);
  redis.disconnect();
  port = await freePort();
  url = `http://127.0.0.1:${port}/graphql`;
  server = startNodeProcess('server.js', {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `${MYSQL_URL}/${DATABASE}`,
    REDIS_URL,
    REDIS_KEY_PREFIX: KEY_PREFIX,
    JWT_SECRET: TEST_JWT_SECRET,
    PASSWORD_HASH_COST: '1024',
    NODE_ENV: 'production',
    // Production does not migrate by default (npm run migrate does); this server is told to.
    MIGRATE_ON_START: 'on',
  });
  await waitFor('the server to listen', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 30_000);
});

afterAll(async () => {
  await server.kill('SIGKILL');
});

const post = (body: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

it('created and migrated its database, and serves GraphQL', async () => {
  const connection = await createConnection({ uri: `${MYSQL_URL}/${DATABASE}` });
  try {
    const [tables] = await connection.query('SHOW TABLES');
    expect((tables as Array<Record<string, string>>).map((row) => Object.values(row)[0]).sort()).toEqual(
      expect.arrayContaining(['tb_blog', 'tb_blog_like', 'tb_fanout_chunk', 'tb_fanout_task', 'tb_follow', 'tb_user']),
    );
  } finally {
    await connection.end();
  }
  const response = await post(
    JSON.stringify({
      query: 'mutation Join { signUp(nickName: "proc", password: "password-1") { user { nickName } } }',
    }),
  );
  expect(await response.json()).toEqual({ data: { signUp: { user: { nickName: 'proc' } } } });
  // One structured log line per request, with its id, operation and duration.
  const requestId = response.headers.get('x-request-id');
  const logLine = () =>
    server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((entry) => entry.requestId === requestId);
  await waitFor('the request to be logged', async () => logLine() !== undefined, 5000); // the pipe may lag
  const line = logLine();
  expect(line).toMatchObject({ operation: 'Join', rootField: 'signUp', viewerId: null, service: 'follow-feed' });
  expect(typeof line.durationMs).toBe('number');
});

it('answers introspection under NODE_ENV=production (GraphiQL and codegen need it)', async () => {
  const response = await post(JSON.stringify({ query: '{ __schema { queryType { name } mutationType { name } } }' }));
  expect(await response.json()).toEqual({
    data: { __schema: { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } } },
  });
});

it('answers a body that is not JSON with a JSON error', async () => {
  const response = await post('{"query": ');
  expect(response.status).toBe(400);
  const body: any = await response.json();
  expect(body.errors[0].extensions.code).toBe('BAD_REQUEST');
  expect(JSON.stringify(body)).not.toMatch(/stack|at .*\.js/);
});

it('answers an oversized body with PAYLOAD_TOO_LARGE', async () => {
  const response = await post(JSON.stringify({ query: '{ viewer { id } }', variables: { pad: 'x'.repeat(200_000) } }));
  expect(response.status).toBe(413);
  expect(((await response.json()) as any).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
});

it('refuses to start with a bad setting, naming the variable', async () => {
  const bad = startNodeProcess('server.js', { PORT: 'eighty', DATABASE_URL: `${MYSQL_URL}/${DATABASE}` });
  expect(await bad.exited).toBe(1);
  expect(bad.output()).toContain('PORT must be a whole number (got "eighty")');
  const noSecret = startNodeProcess('server.js', { NODE_ENV: 'production', DATABASE_URL: `${MYSQL_URL}/${DATABASE}` });
  expect(await noSecret.exited).toBe(1);
  expect(noSecret.output()).toContain('JWT_SECRET is required');
});

it('refuses to start without a reachable MySQL, naming DATABASE_URL', async () => {
  const nowhere = await freePort();
  const orphan = startNodeProcess('server.js', {
    DATABASE_URL: `mysql://root:secret@127.0.0.1:${nowhere}/feed`,
    PORT: '0',
  });
  expect(await orphan.exited).toBe(1);
  expect(orphan.output()).toContain('cannot open the database of DATABASE_URL');
  expect(orphan.output()).not.toContain('secret'); // the password is redacted
});

it('exits 0 on SIGTERM, still serving until then', async () => {
  expect((await fetch(`http://127.0.0.1:${port}/healthz`)).ok).toBe(true);
  expect(await server.kill('SIGTERM')).toBe(0);
  expect(server.output()).toContain('SIGTERM');
});
