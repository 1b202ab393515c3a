/**
 * `npm start` on a machine with nothing but Node: with none of DATABASE_URL, REDIS_URL and
 * REDIS_CLUSTER_NODES the server (node dist/src/server.js, as `npm start` runs it) creates and
 * migrates a SQLite file, says so in its first log line, serves the API with the pull model,
 * counts rate limits in its own memory, and keeps its data across restarts. The core scenario
 * files run in this mode too (`npm run test:embedded`).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorCode, FEED_PAGE, ok, postGraphQL } from '../../support/harness';
import { freePort, startNodeProcess, waitFor, WorkerProcess } from '../../support/processes';

const dir = mkdtempSync(join(tmpdir(), 'feed-embedded-'));
// In a folder that does not exist yet: the server creates it.
const file = join(dir, 'data', 'feed.sqlite');
let port: number;
let server: WorkerProcess;

/** Only what a newcomer's shell would have: no database or Redis settings at all. */
function embeddedEnv(): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    EMBEDDED_DB_FILE: file,
    // No JWT_SECRET: the server keeps a generated one here (by default data/jwt-secret).
    JWT_SECRET_FILE: join(dir, 'jwt-secret'),
    PASSWORD_HASH_COST: '1024',
    RATE_LIMIT_LOGIN_PER_NICKNAME: '3/900',
  };
}

async function startServer(): Promise<WorkerProcess> {
  const started = startNodeProcess('server.js', embeddedEnv());
  await waitFor(
    'the embedded server to listen',
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok === true,
    30_000,
  );
  return started;
}

const gql = (query: string, variables?: Record<string, unknown>, token?: string) =>
  postGraphQL(`http://127.0.0.1:${port}/graphql`, query, variables, token);

const SIGN_UP = 'mutation($n: String!) { signUp(nickName: $n, password: "password-123") { token user { id } } }';
const LOGIN = 'mutation($n: String!, $p: String!) { login(nickName: $n, password: $p) { token } }';

beforeAll(async () => {
  port = await freePort();
  server = await startServer();
});

afterAll(async () => {
  await server.kill('SIGKILL');
});

let readerToken: string;
let feedIds: string[];

it('says so in its first log line, and reports the SQLite store ready', async () => {
  const first = JSON.parse(server.output().split('\n')[0]);
  expect(first.msg).toContain(`embedded mode: SQLite at ${file}, FEED_MODEL=pull, rate limits in process memory`);
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toEqual({ status: 'ready' });
});

it('serves sign-up, follow, publish, like and a scrolled feed from the file', async () => {
  const reader = ok(await gql(SIGN_UP, { n: 'reader' })).signUp;
  const author = ok(await gql(SIGN_UP, { n: 'author' })).signUp;
  ok(await gql('mutation($u: ID!) { follow(userId: $u) { id } }', { u: author.user.id }, reader.token));
  const published: string[] = [];
  for (let i = 0; i < 5; i += 1) {
    published.unshift(
      ok(
        await gql(
          'mutation($t: String!) { publishBlog(input: { title: $t, content: "c" }) { id } }',
          { t: `post ${i}` },
          author.token,
        ),
      ).publishBlog.id,
    );
  }
  const liked = ok(
    await gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount isLiked } }', { b: published[0] }, reader.token),
  ).likeBlog;
  expect(liked).toEqual({ likeCount: 1, isLiked: true });
  const seen: string[] = [];
  let after: string | null = null;
  for (;;) {
    const page: any = ok(await gql(FEED_PAGE, { first: 2, after }, reader.token)).followFeed;
    seen.push(...page.edges.map((edge: any) => edge.node.id));
    if (!page.pageInfo.hasNextPage) break;
    after = page.pageInfo.endCursor;
  }
  expect(seen).toEqual(published);
  readerToken = reader.token;
  feedIds = seen;
});

it('counts rate limits in its own memory', async () => {
  for (let i = 0; i < 3; i += 1)
    expect(errorCode(await gql(LOGIN, { n: 'author', p: 'wrong-password' }))).toBe('UNAUTHENTICATED');
  const limited = await gql(LOGIN, { n: 'author', p: 'wrong-password' });
  expect(errorCode(limited)).toBe('RATE_LIMITED');
  expect(limited.errors![0].extensions?.retryAfterSeconds).toBeGreaterThan(0);
});

it('keeps everything across a restart', async () => {
  expect(await server.kill('SIGTERM')).toBe(0);
  server = await startServer();
  const login = ok(await gql(LOGIN, { n: 'reader', p: 'password-123' })).login;
  const page: any = ok(await gql(FEED_PAGE, { first: 10 }, login.token)).followFeed;
  expect(page.edges.map((edge: any) => edge.node.id)).toEqual(feedIds);
  // The token of the first run still holds (the same generated secret, kept in JWT_SECRET_FILE).
  expect(ok(await gql('{ viewer { nickName } }', {}, readerToken)).viewer.nickName).toBe('reader');
});

it('refuses FEED_MODEL=push without Redis, a worker, an unusable file and a taken port, naming why', async () => {
  const second = startNodeProcess('server.js', embeddedEnv()); // the running server has this PORT
  expect(await second.exited).toBe(1);
  expect(second.output()).toContain(`cannot listen on 127.0.0.1:${port} (PORT, HOST): it is in use`);
  const push = startNodeProcess('server.js', { ...embeddedEnv(), PORT: '0', FEED_MODEL: 'push' });
  expect(await push.exited).toBe(1);
  expect(push.output()).toContain(
    'FEED_MODEL=push keeps inboxes in Redis, but no REDIS_URL or REDIS_CLUSTER_NODES is set',
  );
  const worker = startNodeProcess('worker.js', embeddedEnv());
  expect(await worker.exited).toBe(1);
  expect(worker.output()).toContain('a fan-out worker needs Redis and MySQL');
  // A folder that cannot be made: its parent is a file (the SQLite file itself).
  const unusableFile = join(file, 'feed.sqlite');
  const unusable = startNodeProcess('server.js', { ...embeddedEnv(), PORT: '0', EMBEDDED_DB_FILE: unusableFile });
  expect(await unusable.exited).toBe(1);
  expect(unusable.output()).toContain(`cannot open the embedded database EMBEDDED_DB_FILE (${unusableFile})`);
});
