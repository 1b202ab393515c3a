/**
 * A delivery that trusts MySQL's list of followers instead of the inbox's followees
 * (Delivery.listed, deliver.lua's follows()): only where the inbox's followees were installed
 * before the list was read, in the same generation, and never for a pair the inbox knows a state
 * of (its a:<author>, a muted follow's included). On a cluster no install records a time, and
 * every delivery reads the followees: the rule is not tested there (the conformance test holds
 * both inboxes to the same answers in either case).
 */
import { Listing } from '../../../src/feed/inbox';
import { RedisInbox } from '../../../src/feed/inbox.redis';
import { RedisKeys } from '../../../src/redis/keys';
import { isCluster } from '../../../src/redis/redis.client';
import { startTestApp, TestApp } from '../../support/harness';

const READER = 7;
const AUTHOR = 3;
const EPOCH = 1;

let app: TestApp;
let inbox: RedisInbox;
let keys: RedisKeys;
beforeAll(async () => {
  app = await startTestApp('inbox_listing', { env: { FANOUT_WORKERS: '0' } });
  keys = new RedisKeys(`${app.config.redisKeyPrefix}listing:`);
  inbox = new RedisInbox({ redis: app.redis, keys, maxItems: 10, ttlSeconds: 3600 });
});
afterAll(() => app.close());

/**
 * A time on the inboxes' clock strictly between the installs before it and those after it. The
 * clock reads the same twice within a millisecond (and deliver.lua then does not trust the listing),
 * so it waits on both sides: waiting only after, a listing read in the millisecond of the rebuild
 * before it equalled its install (a CI run on Node 24 failed so).
 */
async function listingNow(epoch = EPOCH): Promise<Listing> {
  const pause = () => new Promise((resolve) => setTimeout(resolve, 2));
  await pause();
  const at = await inbox.clock();
  await pause();
  return { at, epoch };
}

/** Rebuilds the reader's inbox from a snapshot of version `version`. */
async function rebuild(version: number, follows: { followeeIds?: number[]; mutedIds?: number[] }) {
  await inbox.drop(READER);
  expect(await inbox.beginBuild(READER, 'token', EPOCH)).toBe(true);
  const snapshot = { version, followeeIds: [], mutedIds: [], entries: [], floor: 0, ...follows };
  expect(await inbox.finishBuild(READER, 'token', snapshot)).toBe('done');
}

async function delivered(blogId: number, listed?: Listing): Promise<boolean> {
  const entry = { id: blogId, score: 1000 + blogId };
  await inbox.deliver([READER], { entry, authorId: AUTHOR, ...(listed ? { listed } : {}) });
  return ((await inbox.blogIds(READER)) ?? []).includes(blogId);
}

const singleServer = () => !isCluster(app.redis);

it('trusts a listing only when it came after the inbox was installed', async () => {
  if (!singleServer()) return expect(await inbox.clock()).toBe(0);
  // Listed as a follower, then the reader unfollowed and the inbox was rebuilt without the author.
  const listedBefore = await listingNow();
  await rebuild(2, { followeeIds: [] });
  expect(await delivered(1, listedBefore)).toBe(false);
  // Listed after that rebuild: MySQL's list is as right as the followees (a follow since would be
  // pending or carry its version), so the inbox does not read them.
  expect(await delivered(2, await listingNow())).toBe(true);
  // Without a listing, the followees decide.
  expect(await delivered(3)).toBe(false);
});

it('trusts no listing of another generation', async () => {
  if (!singleServer()) return;
  await rebuild(2, { followeeIds: [] });
  expect(await delivered(4, await listingNow(EPOCH + 1))).toBe(false);
});

it("never trusts a listing over the pair's own state: a muted follow, an unfollow applied since", async () => {
  if (!singleServer()) return;
  // MySQL lists a muted follower; the rebuild recorded the mute as the pair's unfollow.
  await rebuild(4, { mutedIds: [AUTHOR] });
  expect(await delivered(5, await listingNow())).toBe(false);
  // Followed at the rebuild, unfollowed since (version 5): a listing from after both still loses.
  await rebuild(4, { followeeIds: [AUTHOR] });
  expect(await inbox.markUnfollow(READER, { version: 5, authorId: AUTHOR })).not.toBeNull();
  expect(await delivered(6, await listingNow())).toBe(false);
  // And a follow applied since is the pair's state too.
  await rebuild(6, { followeeIds: [] });
  expect(await inbox.applyFollow(READER, { version: 7, authorId: AUTHOR }, [], null)).toBe('applied');
  expect(await delivered(7)).toBe(true);
});

it("keeps the inboxes' clock from going back", async () => {
  if (!singleServer()) return;
  const ahead = Date.now() + 60_000;
  await app.redis.set(keys.inboxClock(), String(ahead));
  expect(await inbox.clock()).toBe(ahead);
  // An install now records that time, not Redis's earlier TIME: a listing taken before is older.
  const listed = { at: ahead, epoch: EPOCH };
  await rebuild(8, { followeeIds: [] });
  expect(await delivered(8, listed)).toBe(false);
  await app.redis.del(keys.inboxClock());
});
