/**
 * GET /readyz: a load balancer gets ready or not, nothing else; the details (each store's state,
 * the replicas, the errors) go only to a bearer of METRICS_TOKEN, and never with a password.
 * The app has a "replica" it cannot log in to (the test's own MariaDB with a wrong password), so
 * that the details hold a replica URL and a raw MySQL error naming user@host.
 */
import { MYSQL_URL, startTestApp, TestApp, testDatabase } from '../../support/harness';

const TOKEN = 'readiness-token-0123456789';
const WRONG_PASSWORD = 'not-the-password-42';

let app: TestApp;
let readyz: string;

beforeAll(async () => {
  const replica = new URL(`${MYSQL_URL}/${testDatabase('readiness')}`);
  replica.password = WRONG_PASSWORD;
  app = await startTestApp('readiness', { env: { METRICS_TOKEN: TOKEN, DATABASE_REPLICA_URLS: replica.toString() } });
  readyz = app.url.replace(/\/graphql$/, '/readyz');
});
afterAll(() => app.close());

const get = async (authorization?: string) => {
  const response = await fetch(readyz, { headers: authorization ? { authorization } : {} });
  const text = await response.text();
  return { status: response.status, text, body: JSON.parse(text) };
};

it('tells an anonymous caller only whether the instance is ready', async () => {
  for (const authorization of [undefined, 'Bearer wrong-token-0123456789', `Basic ${TOKEN}`]) {
    const answer = await get(authorization);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'ready' });
    for (const leak of ['root', '127.0.0.1', 'Access denied', WRONG_PASSWORD, 'mysql'])
      expect(answer.text).not.toContain(leak);
  }
});

it('gives a bearer of METRICS_TOKEN the details, with the replica shown without its password', async () => {
  const answer = await get(`Bearer ${TOKEN}`);
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ status: 'ready', mysql: 'ok', redis: 'ok' });
  expect(answer.body.replicas).toHaveLength(1);
  expect(answer.body.replicas[0]).toMatchObject({ state: 'down' });
  expect(answer.body.replicas[0].replica).toContain(':***@127.0.0.1');
  expect(answer.text).not.toContain(WRONG_PASSWORD);
});
