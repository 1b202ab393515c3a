/**
 * Hybrid: the blogs of big followees that no inbox holds are kept per process between pages
 * (feed/pulled-blogs.ts), under each author's pulled-blog token, and read again exactly when a
 * blog of that author that was not fanned out is published or deleted (by whichever process),
 * and after Redis lost the tokens. Two API processes on one MySQL and Redis: one writes, the
 * other reads, and every page equals the truth; statements are counted on the reading process,
 * where a steady first page runs none.
 */
import {
  countStatements,
  deleteKeys,
  FEED_PAGE,
  feedTruth,
  follow,
  ok,
  publish,
  settleHybridPair,
  signUp,
  TestApp,
  TestUser,
  startHybridPair,
  pageWithStatements,
} from '../../support/harness';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { PULLED_BLOGS_KEPT, PULLED_FILLS_PER_PAGE } from '../../../src/feed/pulled-blogs';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

let writer: TestApp;
let reader: TestApp;
let viewer: TestUser;
let big: TestUser;
let other: TestUser;

beforeAll(async () => {
  ({ writer, reader } = await startHybridPair('pulled_blogs'));
  viewer = await signUp(writer, 'viewer');
  big = await signUp(writer, 'big');
  other = await signUp(writer, 'other');
  for (const fan of [await signUp(writer, 'fan1'), await signUp(writer, 'fan2')]) {
    await follow(writer, fan, big);
    await follow(writer, fan, other);
  }
  await follow(writer, viewer, big);
  await follow(writer, viewer, other);
  for (let i = 1; i <= 3; i += 1) {
    await publish(writer, big, `big ${i}`); // 3 followers: not fanned out
    await publish(writer, other, `other ${i}`);
  }
  await settle();
});

afterAll(async () => {
  await reader?.close();
  await writer?.close();
});

const settle = () => settleHybridPair({ writer, reader });

const page = () => pageWithStatements(reader, viewer);

/** Pages until one runs no statement (the lists and the hydration cache filled), at most `tries`. */
async function steadyPage(tries = 5): Promise<{ ids: string[]; sql: number }> {
  let last = await page();
  for (let i = 1; i < tries && last.sql > 0; i += 1) {
    await reader.services.feed.idle();
    last = await page();
  }
  return last;
}

async function deleteBlog(author: TestUser, blogId: string): Promise<void> {
  ok(await writer.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: blogId }, author.token));
}

const truth = () => feedTruth(writer, dbId(viewer));

it('serves a steady first page of big followees without a statement', async () => {
  const first = await page();
  expect(first.ids).toEqual(await truth());
  expect(first.ids).toHaveLength(6);
  const steady = await steadyPage();
  expect(steady.ids).toEqual(first.ids);
  expect(steady.sql).toBe(0);
});

it("reads one author's list again after their publish through another process, at once", async () => {
  await steadyPage();
  const blog = await publish(writer, big, 'big 4');
  const after = await page();
  expect(after.ids[0]).toBe(blog);
  expect(after.ids).toEqual(await truth());
  // big's list again; other's is kept (the new blog came with the publish into the hydration cache).
  expect(after.sql).toBe(1);
  expect((await page()).sql).toBe(0);
});

it('reads the list again after a delete through another process', async () => {
  const before = await steadyPage();
  const gone = before.ids[0];
  await deleteBlog(big, gone);
  const after = await page();
  expect(after.ids).not.toContain(gone);
  expect(after.ids).toEqual(await truth());
  expect(after.ids).toHaveLength(before.ids.length - 1);
  // A full page: the deleted blog left the kept list, it is not merely hidden from a short page.
  const two = ok(await reader.gql(FEED_PAGE, { first: 2 }, viewer.token));
  expect(two.followFeed.edges.map((edge: any) => edge.node.id)).toEqual(after.ids.slice(0, 2));
  const steady = await steadyPage();
  expect(steady.ids).toEqual(after.ids);
  expect(steady.sql).toBe(0);
});

it('while pages are read, shows a blog on every page that starts after its publish returns', async () => {
  await steadyPage();
  let publishedAt = Infinity;
  let stop = false;
  const pages: Array<{ startedAt: number; ids: string[] }> = [];
  const reading = (async () => {
    while (!stop) {
      const startedAt = Date.now();
      pages.push({ startedAt, ids: (await page()).ids });
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const blog = await publish(writer, other, 'other during pages');
  publishedAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 300));
  stop = true;
  await reading;
  const after = pages.filter((p) => p.startedAt > publishedAt);
  expect(after.length).toBeGreaterThan(0);
  for (const p of after) expect(p.ids[0]).toBe(blog);
  expect(pages.some((p) => p.startedAt < publishedAt && !p.ids.includes(blog))).toBe(true);
});

it('scrolls below what a list keeps from MySQL, every blog once and in order', async () => {
  for (let i = 0; i < PULLED_BLOGS_KEPT + 6; i += 1) await publish(writer, big, `many ${i}`);
  await settle();
  await steadyPage();
  const ids: string[] = [];
  const statements: number[] = [];
  let after: string | null = null;
  for (let more = true; more;) {
    const { result: data, statements: sql } = await countStatements(reader, async () =>
      ok(await reader.gql(FEED_PAGE, { first: 20, after }, viewer.token)),
    );
    ids.push(...data.followFeed.edges.map((edge: any) => edge.node.id));
    statements.push(sql);
    more = data.followFeed.pageInfo.hasNextPage;
    after = data.followFeed.pageInfo.endCursor;
  }
  expect(ids).toEqual(await truth());
  expect(ids.length).toBeGreaterThan(PULLED_BLOGS_KEPT + 6);
  // The first page from the kept lists; the last lies below big's kept list and reads MySQL.
  expect(statements[0]).toBe(0);
  expect(statements[statements.length - 1]).toBeGreaterThan(0);
});

it('fills at most PULLED_FILLS_PER_PAGE lists a page for a reader of many big authors, every page exact', async () => {
  const heavy = await signUp(writer, 'many');
  const fan = await signUp(writer, 'manyfan');
  const count = PULLED_FILLS_PER_PAGE * 2;
  for (let i = 0; i < count; i += 1) {
    const author = await signUp(writer, `many${i}`);
    await follow(writer, heavy, author);
    await follow(writer, fan, author);
    await publish(writer, author, `many ${i}`); // 2 followers: not fanned out
  }
  await settle();
  const expected = await feedTruth(writer, dbId(heavy));
  // The blogs and authors into the hydration cache through the other process, whose lists are its own.
  expect((await pageWithStatements(writer, heavy, 50)).ids).toEqual(expected);
  const pages: Array<{ ids: string[]; sql: number }> = [];
  for (let i = 0; i < 4; i += 1) {
    pages.push(await pageWithStatements(reader, heavy, 50));
    await reader.services.feed.idle();
  }
  for (const p of pages) expect(p.ids).toEqual(expected);
  // The first page: the viewer's session (their first request to this process), the list of big
  // followees, PULLED_FILLS_PER_PAGE fills and one statement for the other authors; the second
  // fills the rest; then none.
  expect(pages.map((p) => p.sql)).toEqual([PULLED_FILLS_PER_PAGE + 3, PULLED_FILLS_PER_PAGE, 0, 0]);
});

it('trusts no list after Redis lost the tokens', async () => {
  await steadyPage();
  await deleteKeys(writer.redis, writer.keys.all());
  // Lost: the next publish sets a token again, which no kept list has.
  const blog = await publish(writer, big, 'after the loss');
  await settle();
  for (let i = 0; i < 3; i += 1) {
    const { ids } = await page();
    expect(ids[0]).toBe(blog);
    expect(ids).toEqual((await truth()).slice(0, 20));
    await reader.services.feed.idle();
  }
});
