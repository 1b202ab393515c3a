/**
 * Read replicas over WebSocket: queries and mutations sent on a graphql-ws socket are routed as
 * they are over HTTP (a reader who did not write reads the replica; a mutation reads the primary
 * and makes its viewer a recent writer, whose next reads, on either transport, go to the
 * primary), and a subscription's events, blogs just written, are read on the primary. Which
 * server served a read is counted on the servers (test/support/mariadb-pair.ts). Only in
 * `npm run test:replica`.
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import { MariaDbPair, startMariaDbPair } from '../../support/mariadb-pair';
import { follow, ok, publish, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';
import { LiveClient, liveClient } from '../../support/live-client';
import { waitFor } from '../../support/processes';

/** Small, so that waiting out a writer's window (REPLICA_MAX_LAG_MS + one check interval) costs little. */
const MAX_LAG_MS = 300;
const WRITER_WINDOW_MS = MAX_LAG_MS + 250;

const AUTHOR_BLOGS = 'query($id: ID!) { user(id: $id) { blogs(first: 10) { edges { node { id title } } } } }';
const PUBLISH = 'mutation($t: String!) { publishBlog(input: { title: $t, content: "over a socket" }) { id } }';

let pair: MariaDbPair;
let app: TestApp;
let author: TestUser;
let reader: TestUser;
const clients: LiveClient[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The SELECTs each server ran for `work`. */
async function selectsOf(work: () => Promise<unknown>): Promise<{ primary: number; replica: number }> {
  const before = await pair.selects();
  await work();
  const after = await pair.selects();
  return { primary: after.primary - before.primary, replica: after.replica - before.replica };
}

/** /readyz lists the replicas only to a bearer of METRICS_TOKEN. */
const METRICS_TOKEN = 'metrics-token-of-replica-websocket';

async function replicaIs(state: 'ok' | 'lagging'): Promise<boolean> {
  const response = await fetch(app.url.replace(/\/graphql$/, '/readyz'), {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  const body = (await response.json()) as { replicas: Array<{ state: string }> };
  return body.replicas[0].state === state;
}

/** The replica has every write, the health check has seen it, and nobody is a recent writer any more. */
async function quiet(): Promise<void> {
  await pair.synced();
  await waitFor('the replica to be ok', () => replicaIs('ok'));
  await sleep(WRITER_WINDOW_MS);
}

function socket(user: TestUser, query: string | null = null): LiveClient {
  const client = liveClient(app.url, user.token, query);
  clients.push(client);
  return client;
}

type AuthorBlogs = { user: { blogs: { edges: Array<{ node: { title: string } }> } } };
const titlesOf = (data: AuthorBlogs) => data.user.blogs.edges.map((edge) => edge.node.title);

/** The titles of the author's blogs, read over the socket (which must answer without errors). */
async function titlesOverSocket(client: LiveClient): Promise<string[]> {
  const result = await client.run<AuthorBlogs>(AUTHOR_BLOGS, { id: author.id });
  if (result.errors || !result.data) throw new Error(`expected success, got ${JSON.stringify(result)}`);
  return titlesOf(result.data);
}

beforeAll(async () => {
  pair = await startMariaDbPair();
  app = await startTestApp('replica_websocket', {
    mysqlUrl: pair.primaryUrl,
    env: {
      FEED_MODEL: 'pull',
      FANOUT_WORKERS: '0',
      DATABASE_REPLICA_URLS: `${pair.replicaUrl}/feed_test_${process.env.TEST_NAMESPACE ?? ''}replica_websocket`,
      REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
      METRICS_TOKEN,
    },
  });
  author = await signUp(app, 'author');
  reader = await signUp(app, 'reader');
  await follow(app, reader, author);
  await publish(app, author, 'first');
  await quiet();
}, 60_000);

afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.dispose()));
});

afterAll(async () => {
  await app?.close();
  await pair?.stop();
});

test('a query over a socket of a reader who did not write recently is read on the replica', async () => {
  const client = socket(reader);
  // Two reads first: at the first the process settles the hydration cache's debts (before it
  // trusts the cache), the second fills the cache, which reads the primary by design (a fill must
  // not store a row older than the last write). What this routes is the page's own read.
  for (let warm = 0; warm < 2; warm += 1) {
    expect(await titlesOverSocket(client)).toEqual(['first']);
    await app.services.hydration?.settle();
  }
  const reads = await selectsOf(async () => expect(await titlesOverSocket(client)).toEqual(['first']));
  expect(reads.primary).toBe(0);
  expect(reads.replica).toBeGreaterThan(0);
});

test('a mutation over a socket reads the primary and makes its viewer a recent writer, over the socket and over HTTP', async () => {
  const client = socket(author);
  expect((await client.run(PUBLISH, { t: 'second' })).errors).toBeUndefined();
  const overSocket = await selectsOf(async () => expect(await titlesOverSocket(client)).toEqual(['second', 'first']));
  expect(overSocket.replica).toBe(0);
  expect(overSocket.primary).toBeGreaterThan(0);
  const overHttp = await selectsOf(async () =>
    expect(titlesOf(ok(await app.gql(AUTHOR_BLOGS, { id: author.id }, author.token)))).toEqual(['second', 'first']),
  );
  expect(overHttp.replica).toBe(0);
  await quiet();
});

test('a writer over HTTP reads the primary over a socket', async () => {
  const client = socket(author);
  await publish(app, author, 'third');
  const reads = await selectsOf(async () => expect((await titlesOverSocket(client))[0]).toBe('third'));
  expect(reads.replica).toBe(0);
  await quiet();
});

test("a subscription's events, blogs just written, are read on the primary: a replica may not have them yet", async () => {
  const client = socket(reader, 'subscription { followFeedAdded { node { id title } } }');
  await waitFor(
    'the subscription to listen on the author',
    async () => (await app.services.liveBuses.authors.liveAmong([fromGlobalId(author.id).id])).length === 1,
  );
  // The replica is healthy (its lag within REPLICA_MAX_LAG_MS): a read routed to it would be taken there.
  const reads = await selectsOf(async () => {
    const id = await publish(app, author, 'live');
    const [edge] = await client.received(1);
    expect(edge.node).toEqual({ id, title: 'live' });
  });
  expect(client.errors).toEqual([]);
  expect(reads.replica).toBe(0);
  await quiet();
});
