/** GET /metrics and the request id: what an operator scrapes and greps. */
import { dropInbox, follow, ok, publish, scrollFeed, signUp, startTestApp, TestApp } from '../support/harness';
import { waitFor } from '../support/processes';

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
  await app.services.fanout.idle();
  expect(await scrollFeed(app, reader, 5)).toHaveLength(12); // 10 from the inbox, then the cold path
  await dropInbox(app, Number(Buffer.from(reader.id, 'base64').toString().split(':')[1]));
  ok(await app.gql('query ReaderFeed { followFeed(first: 3) { edges { cursor } } }', {}, reader.token)); // pull: no inbox

  const scrape = () => fetch(app.url.replace('/graphql', '/metrics'));
  const response = await scrape();
  expect(response.headers.get('content-type')).toContain('text/plain');
  // A fan-out's lag is observed a moment after its task is marked done: wait for the last one.
  await waitFor('every fan-out lag observed', async () => metric(await (await scrape()).text(), 'fanout_lag_seconds_count') === 12, 5000);
  const text = await (await scrape()).text();
  expect(metric(text, 'graphql_request_duration_seconds_count{operation="ReaderFeed"}')).toBe(1);
  expect(metric(text, 'graphql_request_duration_seconds_count{operation="anonymous"}')).toBeGreaterThan(15);
  expect(metric(text, 'feed_page_reads_total{source="inbox"}')).toBeGreaterThanOrEqual(1);
  expect(metric(text, 'feed_page_reads_total{source="cold"}')).toBeGreaterThanOrEqual(1);
  expect(metric(text, 'feed_page_reads_total{source="pull"}')).toBeGreaterThanOrEqual(1);
  expect(metric(text, 'feed_inbox_writes_total')).toBe(12);
  expect(metric(text, 'fanout_lag_seconds_count')).toBe(12);
  expect(metric(text, 'fanout_queue_jobs{state="failed"}')).toBe(0);
  expect(text).toContain('feed_process_cpu_user_seconds_total');
});

it('echoes the caller\'s request id, or makes one', async () => {
  const given = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'trace-123' },
    body: JSON.stringify({ query: '{ viewer { id } }' }),
  });
  expect(given.headers.get('x-request-id')).toBe('trace-123');
  const made = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ viewer { id } }' }) });
  expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
});
