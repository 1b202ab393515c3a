/** `npm run seed` (node dist/scripts/seed.js): demo users can sign in and scroll a feed. */
import { FEED_PAGE, ok, startTestApp, TestApp } from '../../support/harness';
import { startNodeProcess } from '../../support/processes';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp('seed');
});
afterAll(() => app.close());

it('seeds demo data with a feed to scroll, prints the login, and refuses to run twice', async () => {
  const seed = startNodeProcess('../scripts/seed.js', app.env, [
    '--users',
    '30',
    '--follows',
    '5',
    '--blogs',
    '4',
    '--likes',
    '50',
  ]);
  expect(await seed.exited).toBe(0);
  expect(seed.output()).toContain('Sign in as demo1 ... demo30');
  const login = ok(await app.gql('mutation { login(nickName: "demo1", password: "demo-password") { token } }'));
  const page = ok(await app.gql(FEED_PAGE, { first: 20 }, login.login.token)).followFeed;
  expect(page.edges).toHaveLength(20);
  const viewer = ok(await app.gql('{ viewer { followingCount } }', {}, login.login.token)).viewer;
  expect(viewer.followingCount).toBe(5);
  const again = startNodeProcess('../scripts/seed.js', app.env);
  expect(await again.exited).toBe(1);
  expect(again.output()).toContain('already exist');
});
