/**
 * The typed example client (examples/client.ts, built from the codegen output) finds a user,
 * follows, pages through a feed, lists followers, counts and loads newer posts, and resumes the
 * live feed from its newest cursor: sending documents whole to a server that
 * runs any, and sending only their ids (the client preset's manifest) to one that runs only those.
 */
import { join } from 'node:path';
import { startTestApp, TestApp } from '../../support/harness';
import { startNodeProcess } from '../../support/processes';

const MANIFEST = join(__dirname, '..', '..', '..', 'examples', 'generated', 'persisted-documents.json');

let app: TestApp;
let trusted: TestApp;
beforeAll(async () => {
  app = await startTestApp('example_client');
  trusted = await startTestApp('example_client_trusted', {
    env: { PERSISTED_DOCUMENTS: 'only', PERSISTED_DOCUMENTS_MANIFEST: MANIFEST },
  });
});
afterAll(async () => {
  await app.close();
  await trusted.close();
});

async function runsTheExample(target: TestApp, env: Record<string, string> = {}): Promise<void> {
  const client = startNodeProcess('../examples/client.js', { API_URL: target.url, ...env });
  expect(await client.exited).toBe(0);
  const lines = client.output().trim().split('\n');
  expect(lines[0]).toMatch(/^search "AUTHOR-(\w+)": author-\1$/i);
  expect(lines[1]).toMatch(/^author-\w+ has 1 follower\(s\); the reader follows 1$/);
  expect(lines[2]).toMatch(/^page 1: Example post 5 by author-\w+, Example post 4 by author-\w+$/);
  expect(lines[3]).toMatch(/^page 2: Example post 3 by author-\w+, Example post 2 by author-\w+$/);
  expect(lines[4]).toMatch(/^page 3: Example post 1 by author-\w+$/);
  expect(lines[5]).toMatch(/^followers of author-(\w+): reader-\1$/);
  expect(lines[6]).toBe('new posts: 1');
  expect(lines[7]).toMatch(/^newer: Example post 6 by author-\w+$/);
  expect(lines[8]).toMatch(/^resumed: Example post 7 by author-\w+$/);
  expect(lines[9]).toMatch(/^live: Example post 8 by author-\w+$/);
  expect(lines[10]).toBe('done');
}

it('signs up, finds the author by nickName, follows, publishes, pages through the feed two at a time, lists the followers, loads newer posts and resumes the live feed', async () => {
  await runsTheExample(app);
});

it('does the same sending only the ids of its trusted documents to a server that runs nothing else', async () => {
  await runsTheExample(trusted, { DOCUMENT_IDS: 'on' });
});
