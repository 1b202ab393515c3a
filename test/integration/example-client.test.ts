/** The typed example client (examples/client.ts, built from the codegen output) pages through a feed and lists followers. */
import { startTestApp, TestApp } from '../support/harness';
import { startNodeProcess } from '../support/processes';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp('example_client');
});
afterAll(() => app.close());

it('signs up, follows, publishes, pages through the feed two at a time, and lists the followers', async () => {
  const client = startNodeProcess('../examples/client.js', { API_URL: app.url });
  expect(await client.exited).toBe(0);
  const lines = client.output().trim().split('\n');
  expect(lines[0]).toMatch(/^page 1: Example post 5 by author-\w+, Example post 4 by author-\w+$/);
  expect(lines[1]).toMatch(/^page 2: Example post 3 by author-\w+, Example post 2 by author-\w+$/);
  expect(lines[2]).toMatch(/^page 3: Example post 1 by author-\w+$/);
  expect(lines[3]).toMatch(/^followers of author-(\w+): reader-\1$/);
  expect(lines[4]).toMatch(/^live: Example post 6 by author-\w+$/);
  expect(lines[5]).toBe('done');
});
