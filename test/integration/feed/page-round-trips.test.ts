/**
 * A warm feed page's Redis round trips (issue 22: at low concurrency each round trip costs the API
 * process a socket write, a wake-up of Redis and a callback, and a page's latency is its round
 * trips in a row). A reader who follows a big author (hybrid) has a page of two on a single
 * server: the inbox read with the kept big followees' pulled-blog tokens (one script,
 * read-page.lua), then the blogs with their authors and the viewer's follow checks, when the
 * process has seen those blogs before (blog/blog.authors.ts). Before, four: read, tokens, blogs,
 * authors. On a Redis Cluster the tokens live in other slots than the inbox and are read after
 * it: three. A page with a blog the process has not seen reads its authors after it, once. And
 * the page still equals the truth when the guess is wrong. Counted on the reading process's Redis connections (each node's on a cluster): a round is
 * the writes made in one turn of the event loop (ioredis sends a tick's commands together, to each
 * node its own).
 */
import { Redis } from 'ioredis';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { isCluster } from '../../../src/redis/redis.client';
import {
  feedTruth,
  follow,
  pageWithStatements,
  publish,
  settleHybridPair,
  signUp,
  startHybridPair,
  TestApp,
  TestUser,
} from '../../support/harness';

let writer: TestApp;
let reader: TestApp;
let viewer: TestUser;
let big: TestUser;
let small: TestUser;

beforeAll(async () => {
  ({ writer, reader } = await startHybridPair('page_round_trips'));
  viewer = await signUp(writer, 'viewer');
  big = await signUp(writer, 'big');
  small = await signUp(writer, 'small');
  for (const fan of [await signUp(writer, 'fan1'), await signUp(writer, 'fan2')]) await follow(writer, fan, big);
  await follow(writer, viewer, big);
  await follow(writer, viewer, small);
  await publish(writer, big, 'big 1'); // a big author's: pulled by the page
  await publish(writer, small, 'small 1'); // one follower: in the inbox
  await settle();
});

afterAll(async () => {
  await reader?.close();
  await writer?.close();
});

const settle = () => settleHybridPair({ writer, reader });

const truth = async () => feedTruth(writer, Number(fromGlobalId(viewer.id).id));

/** Counts the rounds of writes on the app's Redis connections while `work` runs. */
async function roundsOf<T>(app: TestApp, work: () => Promise<T>): Promise<{ result: T; rounds: number }> {
  const clients: Redis[] = isCluster(app.redis) ? app.redis.nodes('all') : [app.redis];
  const streams = clients.map(
    (client) => (client as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream,
  );
  const writes = streams.map((stream) => stream.write);
  let rounds = 0;
  let inRound = false;
  streams.forEach((stream, i) => {
    stream.write = function (this: unknown, ...args: unknown[]) {
      if (!inRound) {
        rounds += 1;
        inRound = true;
        // Writes until the loop's check phase are of this round (a cluster flushes each node's
        // pipeline apart, in its own tick); a reply, and so the next round, comes in a later turn.
        setImmediate(() => (inRound = false));
      }
      return writes[i].apply(this, args);
    };
  });
  try {
    return { result: await work(), rounds };
  } finally {
    streams.forEach((stream, i) => (stream.write = writes[i]));
  }
}

/** The fewest rounds of three warm pages (the process's own timers may write during one), each equal to the truth. */
async function warmPageRounds(): Promise<number> {
  const counts: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const { result, rounds } = await roundsOf(reader, () => pageWithStatements(reader, viewer));
    expect(result.ids).toEqual(await truth());
    expect(result.sql).toBe(0);
    counts.push(rounds);
  }
  return Math.min(...counts);
}

async function warmUp(): Promise<void> {
  for (let i = 0; i < 3; i += 1) await pageWithStatements(reader, viewer);
  await settle();
}

/** A warm page's rounds: the tokens come with the inbox read on a single server only. */
const warmRounds = () => (isCluster(reader.redis) ? 3 : 2);

it('reads a warm page in two Redis round trips: the inbox with the pulled-blog tokens, the blogs with their authors', async () => {
  await warmUp();
  const page = await pageWithStatements(reader, viewer);
  expect(page.ids).toHaveLength(2);
  expect(await warmPageRounds()).toBe(warmRounds());
});

it('still equals the truth when the guess is wrong: after a follow (a new version) and a new author', async () => {
  await warmUp();
  const other = await signUp(writer, 'other');
  await publish(writer, other, 'other 1');
  // The reader's kept list of big followees is now of an older follow version: the guess misses,
  // and the page reads the list and its tokens after the inbox.
  await follow(writer, viewer, other);
  await settle();
  const page = await pageWithStatements(reader, viewer);
  expect(page.ids).toEqual(await truth());
  expect(page.ids).toHaveLength(3);
  await warmUp();
  expect(await warmPageRounds()).toBe(warmRounds());
});

it('reads the authors of a blog this process has not seen after the blog, one round trip more, once', async () => {
  await warmUp();
  await publish(writer, small, 'small 2');
  await settle();
  // The writer's page stores the new blog in the shared cache: the reader's page reads no SQL.
  await pageWithStatements(writer, viewer);
  const unseen = await roundsOf(reader, () => pageWithStatements(reader, viewer));
  expect(unseen.result.ids).toEqual(await truth());
  expect(unseen.result.sql).toBe(0);
  expect(unseen.rounds).toBe(warmRounds() + 1);
  expect(await warmPageRounds()).toBe(warmRounds());
});
