/**
 * GraphiQL end to end in a real browser: Debian's Chromium (/usr/bin/chromium, which .ci/run
 * installs when missing) driven by playwright-core (never a downloaded browser). The page loads
 * from the service itself, runs followFeed with a token in the Authorization header, and shows
 * the result. The server runs with NODE_ENV=production, as deployed: introspection stays on
 * there, so the docs explorer shows the schema.
 */
import { Browser, chromium } from 'playwright-core';
import { follow, publish, signUp, startTestApp, TestApp } from '../../support/harness';
import { waitFor } from '../../support/processes';

// What the page functions below touch of the browser (they run there, not in Node).
declare const document: { body: { innerText: string }; querySelector(selector: string): { innerText: string } | null };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let app: TestApp;
let browser: Browser;

beforeAll(async () => {
  app = await startTestApp('graphiql', { env: { NODE_ENV: 'production' } });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Headless, as root, and without the background connections this closed network refuses.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await app.close();
});

it('serves GraphiQL to a browser and runs followFeed with a bearer token', async () => {
  const author = await signUp(app, 'author');
  const reader = await signUp(app, 'reader');
  await follow(app, reader, author);
  await publish(app, author, 'Seen through GraphiQL');
  await app.services.fanout?.idle();

  const page = await browser.newPage();
  const external: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(app.url.replace('/graphql', ''))) external.push(request.url());
  });
  const query = encodeURIComponent('{ followFeed(first: 5) { edges { node { title author { nickName } } } } }');
  const headers = encodeURIComponent(JSON.stringify({ Authorization: `Bearer ${reader.token}` }));
  const response = await page.goto(`${app.url}?query=${query}&headers=${headers}`);
  expect(response?.headers()['content-type']).toContain('text/html');
  await page.waitForSelector('.graphiql-execute-button', { timeout: 30_000 });
  await page.click('.graphiql-execute-button');
  // Monaco renders spaces as non-breaking ones.
  await page.waitForFunction(
    () => document.body.innerText.replace(/\u00a0/g, ' ').includes('"title": "Seen through GraphiQL"'),
    undefined,
    {
      timeout: 30_000,
    },
  );
  expect(external).toEqual([]); // everything came from the service: no CDN
  // The schema loaded by introspection: the docs explorer lists the root types and their fields.
  await page.getByLabel('Show Documentation Explorer').click();
  await page.waitForFunction(
    () => (document.querySelector('.graphiql-doc-explorer')?.innerText ?? '').includes('mutation: Mutation'),
    undefined,
    {
      timeout: 30_000,
    },
  );
  await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).first().click();
  await page.waitForFunction(
    () => (document.querySelector('.graphiql-doc-explorer')?.innerText ?? '').includes('followFeed'),
    undefined,
    { timeout: 10_000 },
  );
  // The Headers tab is prefilled for a bearer token when the URL gives none.
  const fresh = await browser.newPage();
  await fresh.goto(app.url);
  await fresh.waitForSelector('.graphiql-execute-button', { timeout: 30_000 });
  await fresh.getByText('Headers', { exact: true }).click();
  await fresh.waitForFunction(
    () => document.body.innerText.replace(/\u00a0/g, ' ').includes('"Authorization": "Bearer "'),
    undefined,
    { timeout: 10_000 },
  );
}, 90_000);

it('runs the live subscription from GraphiQL over graphql-ws, the Headers tab as its connection_init payload', async () => {
  const author = await signUp(app, 'live-author');
  const reader = await signUp(app, 'live-reader');
  await follow(app, reader, author);
  const page = await browser.newPage();
  const query = encodeURIComponent('subscription { followFeedAdded { node { title } } }');
  const headers = encodeURIComponent(JSON.stringify({ Authorization: `Bearer ${reader.token}` }));
  await page.goto(`${app.url}?query=${query}&headers=${headers}`);
  await page.waitForSelector('.graphiql-execute-button', { timeout: 30_000 });
  await page.click('.graphiql-execute-button');
  const readerId = Number(Buffer.from(reader.id, 'base64').toString().split(':')[1]);
  await waitFor(
    'the subscription to be live',
    async () => (await app.services.liveBuses.readers.liveAmong([readerId])).length === 1,
    30_000,
  );
  await publish(app, author, 'Arrived in GraphiQL');
  await page.waitForFunction(
    () => document.body.innerText.replace(/\u00a0/g, ' ').includes('"title": "Arrived in GraphiQL"'),
    undefined,
    {
      timeout: 30_000,
    },
  );
}, 90_000);

it('still answers JSON clients at the same address', async () => {
  const response = await fetch(app.url, { headers: { accept: 'application/json' } });
  expect(response.headers.get('content-type') ?? '').not.toContain('text/html');
});
