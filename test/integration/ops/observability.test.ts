/** GET /metrics and the request id: what an operator scrapes and greps. */
import { createConnection } from 'mysql2/promise';
import {
  dropInbox,
  FEED_PAGE,
  follow,
  MYSQL_URL,
  ok,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  testDatabase,
} from '../../support/harness';
import { buildFeedSchema } from '../../../src/graphql/schema';
import { liveClient } from '../../support/live-client';
import { waitFor } from '../../support/processes';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp('observability', { env: { FEED_MODEL: 'push', FEED_MAX_ITEMS: '10' } });
});
afterAll(() => app.close());

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(name));
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line.split(' ').pop());
}

it('counts requests by operation, fan-out, inbox writes and where feed pages came from', async () => {
  const author = await signUp(app, 'author');
  const reader = await signUp(app, 'reader');
  await follow(app, reader, author);
  for (let i = 0; i < 12; i += 1) await publish(app, author, `post ${i}`);
  await app.services.fanout?.idle();
  expect(await scrollFeed(app, reader, 5)).toHaveLength(12); // 10 from the inbox, then the cold path
  // A page up is read from MySQL (pull); a page that finds no inbox waits for its rebuild and reads it (inbox).
  const top = ok(await app.gql('query ReaderFeed { followFeed(first: 1) { edges { cursor } } }', {}, reader.token));
  const before = top.followFeed.edges[0].cursor;
  ok(
    await app.gql(
      'query($b: String) { followFeed(last: 3, before: $b) { edges { cursor } } }',
      { b: before },
      reader.token,
    ),
  );

  const scrape = () => fetch(app.url.replace('/graphql', '/metrics'));
  const response = await scrape();
  expect(response.headers.get('content-type')).toContain('text/plain');
  // A fan-out's lag is observed a moment after its task is marked done: wait for the last one.
  await waitFor(
    'every fan-out lag observed',
    async () => metric(await (await scrape()).text(), 'fanout_lag_seconds_count') === 12,
    5000,
  );
  const text = await (await scrape()).text();
  // Labelled by root field, not by the client's operation names.
  expect(metric(text, 'graphql_request_duration_seconds_count{operation="publishBlog"}')).toBe(12);
  expect(metric(text, 'graphql_request_duration_seconds_count{operation="signUp"}')).toBe(2);
  expect(text).not.toContain('operation="ReaderFeed"');
  expect(metric(text, 'graphql_request_duration_seconds_count{operation="followFeed"}')).toBeGreaterThanOrEqual(2);
  expect(metric(text, 'feed_page_reads_total{source="inbox"}')).toBeGreaterThanOrEqual(1);
  expect(metric(text, 'feed_page_reads_total{source="cold"}')).toBeGreaterThanOrEqual(1);
  expect(metric(text, 'feed_page_reads_total{source="pull"}')).toBeGreaterThanOrEqual(1);
  expect(metric(text, 'feed_inbox_writes_total')).toBe(12);
  expect(metric(text, 'fanout_lag_seconds_count')).toBe(12);
  expect(metric(text, 'fanout_queue_jobs{state="failed"}')).toBe(0);
  expect(text).toContain('feed_process_cpu_user_seconds_total');
});

it("keeps the operation label to the schema's root fields, introspection and other, whatever names clients send", async () => {
  for (let i = 0; i < 300; i += 1) ok(await app.gql(`query MadeUp${i} { viewer { id } }`));
  ok(await app.gql('query Typename { __typename }'));
  ok(await app.gql('{ __schema { queryType { name } } }'));
  expect((await app.gql('{ noSuchField }')).status).toBe(400);
  expect((await app.gql('{ viewer { id ')).status).toBe(400);
  const text = await (await fetch(app.url.replace('/graphql', '/metrics'))).text();
  const labels = new Set(
    [...text.matchAll(/graphql_request_duration_seconds_count\{operation="([^"]*)"\}/g)].map((match) => match[1]),
  );
  expect(labels.has('viewer')).toBe(true);
  expect(labels.has('introspection')).toBe(true);
  expect(labels.has('other')).toBe(true);
  const schema = buildFeedSchema();
  const rootFields = [
    ...Object.keys(schema.getQueryType()!.getFields()),
    ...Object.keys(schema.getMutationType()!.getFields()),
  ];
  expect(
    [...labels].filter((label) => !rootFields.includes(label) && label !== 'introspection' && label !== 'other'),
  ).toEqual([]);
  expect(metric(text, 'graphql_request_duration_seconds_count{operation="viewer"}')).toBeGreaterThanOrEqual(300);
});

it('counts errors by code, open sockets and subscriptions, inbox rebuilds in flight and the Redis breaker', async () => {
  const scrape = async () => (await fetch(app.url.replace('/graphql', '/metrics'))).text();
  const errors = (text: string, code: string) =>
    text.includes(`graphql_errors_total{code="${code}"}`) ? metric(text, `graphql_errors_total{code="${code}"}`) : 0;
  const before = await scrape();
  expect((await app.gql('{ noSuchField }')).status).toBe(400);
  expect((await app.gql('{ viewer { id ')).status).toBe(400);
  await app.gql(FEED_PAGE, { first: 10 });
  const reader = await signUp(app, 'metrics_reader');
  await app.gql(FEED_PAGE, { first: 1000 }, reader.token);
  await app.gql(FEED_PAGE, { first: -1 }, reader.token);
  const after = await scrape();
  expect(errors(after, 'GRAPHQL_VALIDATION_FAILED') - errors(before, 'GRAPHQL_VALIDATION_FAILED')).toBe(1);
  expect(errors(after, 'GRAPHQL_PARSE_FAILED') - errors(before, 'GRAPHQL_PARSE_FAILED')).toBe(1);
  expect(errors(after, 'UNAUTHENTICATED') - errors(before, 'UNAUTHENTICATED')).toBe(1);
  expect(errors(after, 'BAD_USER_INPUT') - errors(before, 'BAD_USER_INPUT')).toBe(2);
  expect(metric(after, 'redis_breaker_state{state="closed"}')).toBe(1);
  expect(metric(after, 'redis_breaker_state{state="open"}')).toBe(0);

  expect(metric(after, 'graphql_ws_sockets_open')).toBe(0);
  const live = liveClient(app.url, reader.token);
  try {
    await waitFor(
      'one open subscription',
      async () => metric(await scrape(), 'graphql_subscriptions_open') === 1,
      10_000,
    );
    expect(metric(await scrape(), 'graphql_ws_sockets_open')).toBe(1);
  } finally {
    await live.dispose();
  }
  await waitFor('the socket closed', async () => metric(await scrape(), 'graphql_ws_sockets_open') === 0, 10_000);
  expect(metric(await scrape(), 'graphql_subscriptions_open')).toBe(0);

  // A reader without an inbox gets one rebuilt from MySQL; holding tb_blog holds the rebuild. The
  // reader follows someone: a rebuild for a reader who follows nobody reads no blog at all.
  const author = await signUp(app, 'metrics_author');
  await follow(app, reader, author);
  await publish(app, author, 'held by the lock');
  await app.services.fanout?.idle();
  await app.services.feed.idle();
  expect(metric(await scrape(), 'feed_inbox_rebuilds_in_flight')).toBe(0);
  await dropInbox(app, Number(Buffer.from(reader.id, 'base64').toString().split(':')[1]));
  const lock = await createConnection({ uri: `${MYSQL_URL}/${testDatabase('observability')}` });
  await lock.query('LOCK TABLES tb_blog WRITE');
  let page: Promise<unknown> | undefined;
  try {
    page = app.gql(FEED_PAGE, { first: 5 }, reader.token);
    await waitFor(
      'a rebuild in flight',
      async () => metric(await scrape(), 'feed_inbox_rebuilds_in_flight') === 1,
      10_000,
    );
  } finally {
    await lock.query('UNLOCK TABLES');
    await lock.end();
  }
  ok((await page) as never);
  await app.services.feed.idle();
  expect(metric(await scrape(), 'feed_inbox_rebuilds_in_flight')).toBe(0);
});

describe('METRICS_TOKEN', () => {
  const TOKEN = 'metrics-scrape-token-42';
  let guarded: TestApp;
  beforeAll(async () => {
    guarded = await startTestApp('observability_token', { env: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(() => guarded.close());

  it('serves /metrics only to a bearer of the token', async () => {
    const scrape = (authorization?: string) =>
      fetch(guarded.url.replace('/graphql', '/metrics'), { headers: authorization ? { authorization } : {} });
    expect((await scrape()).status).toBe(401);
    expect((await scrape(`Bearer ${TOKEN.slice(0, -1)}`)).status).toBe(401);
    expect((await scrape(`Bearer ${TOKEN}x`)).status).toBe(401);
    expect((await scrape(TOKEN)).status).toBe(401);
    const refused = await scrape('Bearer wrong');
    expect(refused.headers.get('www-authenticate')).toContain('Bearer');
    expect(await refused.text()).not.toContain('graphql_request_duration_seconds');
    const allowed = await scrape(`Bearer ${TOKEN}`);
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('graphql_request_duration_seconds');
    expect((await scrape(`bearer ${TOKEN}`)).status).toBe(200);
    // The rest of the service does not ask for it.
    expect((await fetch(guarded.url.replace('/graphql', '/healthz'))).status).toBe(200);
  });
});

it("echoes the caller's request id, or makes one", async () => {
  const given = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'trace-123' },
    body: JSON.stringify({ query: '{ viewer { id } }' }),
  });
  expect(given.headers.get('x-request-id')).toBe('trace-123');
  const made = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ viewer { id } }' }),
  });
  expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
});
