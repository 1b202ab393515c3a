/**
 * `npm start` without JWT_SECRET outside production: the server generates a random secret once
 * into JWT_SECRET_FILE (mode 0600), says where at start, and signs with it across restarts; it
 * listens on loopback only; and a placeholder or short JWT_SECRET stops it, in production and in
 * development alike. Run in the embedded mode (nothing but Node and a SQLite file).
 */
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ok, postGraphQL } from '../../support/harness';
import { freePort, startNodeProcess, waitFor, WorkerProcess } from '../../support/processes';

const dir = mkdtempSync(join(tmpdir(), 'feed-jwt-secret-'));
const secretFile = join(dir, 'secrets', 'jwt-secret');
let port: number;
let server: WorkerProcess | undefined;

/** A newcomer's environment: no JWT_SECRET, no HOST, no NODE_ENV. */
function developmentEnv(): Record<string, string> {
  return {
    PORT: String(port),
    EMBEDDED_DB_FILE: join(dir, 'feed.sqlite'),
    JWT_SECRET_FILE: secretFile,
    PASSWORD_HASH_COST: '1024',
  };
}

async function startServer(env: Record<string, string>): Promise<WorkerProcess> {
  const started = startNodeProcess('server.js', env);
  await waitFor(
    'the server to listen',
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok === true,
    30_000,
  );
  return started;
}

const gql = (query: string, variables?: Record<string, unknown>, token?: string) =>
  postGraphQL(`http://127.0.0.1:${port}/graphql`, query, variables, token);

beforeAll(async () => {
  port = await freePort();
});
afterAll(async () => {
  await server?.kill('SIGKILL');
});

it('generates a secret into JWT_SECRET_FILE (mode 0600), names the file at start, and keeps signing with it after a restart', async () => {
  server = await startServer(developmentEnv());
  const secret = readFileSync(secretFile, 'utf8').trim();
  expect(Buffer.from(secret, 'base64url').length).toBeGreaterThanOrEqual(32);
  expect(statSync(secretFile).mode & 0o777).toBe(0o600);
  expect(server.output()).toContain(secretFile);
  expect(server.output()).not.toContain(secret);
  const { token } = ok(
    await gql('mutation { signUp(nickName: "newcomer", password: "password-123") { token } }'),
  ).signUp;

  expect(await server.kill('SIGTERM')).toBe(0);
  server = await startServer(developmentEnv());
  expect(readFileSync(secretFile, 'utf8').trim()).toBe(secret);
  expect(ok(await gql('{ viewer { nickName } }', {}, token)).viewer.nickName).toBe('newcomer');
});

it('listens on 127.0.0.1 when HOST is not set outside production', async () => {
  expect(server!.output()).toContain(`listening on http://127.0.0.1:${port}/graphql`);
});

it('refuses placeholder and short secrets, in production and in development', async () => {
  await server?.kill('SIGTERM');
  server = undefined;
  const cases: Array<[Record<string, string>, string]> = [
    [{ NODE_ENV: 'production', JWT_SECRET: 'change-me-to-a-long-random-secret' }, 'JWT_SECRET'],
    [{ JWT_SECRET: 'dev-only-insecure-secret-change-me' }, 'JWT_SECRET'],
    [{ NODE_ENV: 'production', JWT_SECRET: 'sixteen-chars-ok' }, 'JWT_SECRET must be at least 32 bytes (got 16)'],
  ];
  for (const [env, message] of cases) {
    const refused = startNodeProcess('server.js', { ...developmentEnv(), PORT: '0', ...env });
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toContain(`configuration error: ${message}`);
  }
});
