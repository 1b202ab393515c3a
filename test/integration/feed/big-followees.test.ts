/**
 * Hybrid: a reader's list of big followees is kept between pages (feed/big-followees.ts), per
 * process, and read again exactly when it may have changed: after the reader follows or
 * unfollows (the inbox's follow version), after an author's first not-fanned-out blog (the
 * big-author generation, replaced by whichever process published it), and after Redis lost
 * everything. (The big followees' blogs are kept too: pulled-blogs.test.ts.) Two API processes on the same MySQL and Redis: one publishes and follows, the
 * other reads, and every page equals the truth. Statements are counted on the reading process.
 */
import {
  feedTruth,
  follow,
  publish,
  signUp,
  TestApp,
  TestUser,
  deleteKeys,
  startHybridPair,
  pageWithStatements,
} from '../../support/harness';
import { fromGlobalId } from '../../../src/kernel/global-id';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

let writer: TestApp;
let reader: TestApp;
let viewer: TestUser;
let rising: TestUser;
let big: TestUser;

beforeAll(async () => {
  ({ writer, reader } = await startHybridPair('big_followees'));
  viewer = await signUp(writer, 'viewer');
  rising = await signUp(writer, 'rising');
  big = await signUp(writer, 'big');
  const fans = [await signUp(writer, 'fan1'), await signUp(writer, 'fan2')];
  for (const fan of fans) await follow(writer, fan, big);
  await publish(writer, big, 'big 1'); // big already: not fanned out
  await follow(writer, viewer, rising);
  await publish(writer, rising, 'rising 1'); // one follower: fanned out
  await settle();
});

afterAll(async () => {
  await reader?.close();
  await writer?.close();
});

async function settle(): Promise<void> {
  await writer.services.fanout?.idle();
  await writer.services.feed.idle();
}

const page = () => pageWithStatements(reader, viewer);

const truth = () => feedTruth(writer, dbId(viewer));

it('reads the list once, then keeps it while nothing changes', async () => {
  await page(); // records the viewer's activity and sets the big-author generation
  const first = await page();
  expect(first.ids).toEqual(await truth());
  const again = await page();
  expect(again.ids).toEqual(first.ids);
  // No big followee, and the page's data (blogs, authors, likes, follows) from the hydration cache: no statement.
  expect(again.sql).toBe(0);
  expect(first.sql).toBeGreaterThanOrEqual(again.sql);
});

it('sees a followee become big through another process at once', async () => {
  await page();
  const fan = await signUp(writer, 'fan3');
  await follow(writer, fan, rising); // now 2 followers: the next blog is not fanned out
  const pulled = await publish(writer, rising, 'rising 2');
  const after = await page();
  expect(after.ids[0]).toBe(pulled);
  expect(after.ids).toEqual(await truth());
  // The list again and the big followee's blogs (the publish stored the new blog in the hydration cache).
  expect(after.sql).toBe(2);
  const kept = await page();
  expect(kept.ids).toEqual(after.ids);
  // Nothing: the list and the big followee's blogs are kept (feed/pulled-blogs.ts).
  expect(kept.sql).toBe(0);
});

it('while pages are read, shows a new big author on every page that starts after their publish returns', async () => {
  const fan = await signUp(writer, 'fan5');
  const riser = await signUp(writer, 'riser');
  await follow(writer, viewer, riser);
  await follow(writer, fan, riser); // 2 followers: the next blog is not fanned out
  await settle();
  await page(); // the viewer's list is kept without riser
  let publishedAt = Infinity;
  let pulled = '';
  let stop = false;
  const pages: Array<{ startedAt: number; ids: string[] }> = [];
  const reading = (async () => {
    while (!stop) {
      const startedAt = Date.now();
      pages.push({ startedAt, ids: (await page()).ids });
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 50));
  pulled = await publish(writer, riser, 'riser 1');
  publishedAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 300));
  stop = true;
  await reading;
  const after = pages.filter((p) => p.startedAt > publishedAt);
  expect(after.length).toBeGreaterThan(0);
  for (const p of after) expect(p.ids[0]).toBe(pulled);
  expect(pages.some((p) => p.startedAt < publishedAt)).toBe(true);
});

it("reads the list again after the viewer's follow and unfollow on another process", async () => {
  await follow(writer, viewer, big);
  await settle();
  const following = await page();
  expect(following.ids).toEqual(await truth());
  expect(following.ids.length).toBeGreaterThan(0);
  // The list, the big followees' blogs, and the big author's blogs and the author into the hydration cache.
  expect(following.sql).toBe(5);
  await follow(writer, viewer, big, false);
  await settle();
  const unfollowed = await page();
  expect(unfollowed.ids).toEqual(await truth());
  // The list alone (the big followee's blogs are kept, the page's data is cached).
  expect(unfollowed.sql).toBe(1);
  expect((await page()).sql).toBe(0);
});

it('trusts no kept list after Redis lost everything', async () => {
  await follow(writer, viewer, big);
  await settle();
  await page();
  await deleteKeys(writer.redis, writer.keys.all());
  // Redis lost the generation too: while the inboxes and the watermark are rebuilt, every page
  // equals the truth, and the author who becomes big meanwhile is in it.
  const fan = await signUp(writer, 'fan4');
  const newcomer = await signUp(writer, 'newcomer');
  await follow(writer, viewer, newcomer);
  await follow(writer, fan, newcomer);
  await follow(writer, big, newcomer);
  const pulled = await publish(writer, newcomer, 'newcomer 1');
  await settle();
  for (let i = 0; i < 3; i += 1) {
    const { ids } = await page();
    expect(ids[0]).toBe(pulled);
    expect(ids).toEqual(await truth());
    await reader.services.feed.idle();
  }
});
