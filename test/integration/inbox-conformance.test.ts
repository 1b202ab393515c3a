/**
 * The Redis inbox (Lua scripts, src/feed/inbox.redis.ts) against its specification, the memory
 * inbox (src/feed/inbox.memory.ts): fast-check generates sequences of every operation, with
 * small numbers so that ties, trimming, stale versions, builds taken over and floors happen
 * often; both run each sequence, and every answer and the whole state after every step must be
 * equal. The feed model test (test/unit/feed-model.test.ts) relies on this equality: what it
 * proves of the memory inbox holds of Redis.
 */
import fc from 'fast-check';
import { FeedPosition, ScoredId } from '../../src/kernel/pagination/cursor';
import { buildToken, FeedSnapshot, Inbox } from '../../src/feed/inbox';
import { MemoryInbox } from '../../src/feed/inbox.memory';
import { RedisInbox } from '../../src/feed/inbox.redis';
import { blogIdOfMember, RedisKeys } from '../../src/redis/keys';
import { isCluster, RedisClient } from '../../src/redis/redis.client';
import { deleteKeys, startTestApp, TestApp } from '../support/harness';

const MAX_ITEMS = 5;
const READERS = [1, 2, 3];
const AUTHORS = [1, 2, 3];

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp('inbox_conformance', { env: { FANOUT_WORKERS: '0' } });
});
afterAll(() => app.close());

// ---------------------------------------------------------------------------------------------
// Operations

const blogArb = fc.record({ id: fc.integer({ min: 1, max: 25 }), score: fc.integer({ min: 1, max: 8 }) });
const readerArb = fc.constantFrom(...READERS);
const readersArb = fc.subarray(READERS, { minLength: 1 });
const authorArb = fc.constantFrom(...AUTHORS);
const versionArb = fc.integer({ min: 1, max: 8 });
const timeArb = fc.integer({ min: 0, max: 4 });
const changeArb = fc.record({ version: versionArb, authorId: authorArb });
const tokenArb = fc
  .record({ owner: fc.constantFrom('a', 'b'), startedAt: fc.constantFrom(0, 10_000, 40_000, 80_000) })
  .map(({ owner, startedAt }) => buildToken(owner, startedAt));
const positionArb: fc.Arbitrary<FeedPosition> = fc.oneof(
  fc.constant({ maxScore: null, offset: 0, afterId: null }),
  fc.record({ maxScore: fc.integer({ min: 0, max: 9 }), offset: fc.integer({ min: 0, max: 4 }), afterId: fc.constant(null) }),
  fc.record({ maxScore: fc.integer({ min: 0, max: 9 }), offset: fc.integer({ min: 0, max: 4 }), afterId: fc.integer({ min: 1, max: 26 }) }),
);
const snapshotArb: fc.Arbitrary<FeedSnapshot> = fc.record({
  version: fc.integer({ min: 0, max: 8 }),
  followeeIds: fc.subarray(AUTHORS),
  entries: fc.uniqueArray(blogArb, { selector: (blog) => blog.id, maxLength: MAX_ITEMS }),
  floor: fc.integer({ min: 0, max: 9 }),
});

type Op =
  | { op: 'read'; reader: number; from: FeedPosition; limit: number }
  | { op: 'deliver'; readers: number[]; blog: ScoredId; authorId: number; readAt: number }
  | { op: 'retractUnfollowed'; reader: number; blogId: number; change: { version: number; authorId: number }; readAt: number }
  | { op: 'retract'; readers: number[]; blogId: number }
  | { op: 'applyFollow'; reader: number; change: { version: number; authorId: number }; entries: ScoredId[]; floor: number | null; stale: number[] }
  | { op: 'markUnfollow'; reader: number; change: { version: number; authorId: number } }
  | { op: 'blogIds'; reader: number }
  | { op: 'removeUnfollowed'; reader: number; change: { version: number; authorId: number }; blogIds: number[] }
  | { op: 'create'; reader: number; version: number }
  | { op: 'markPending'; reader: number; at: number }
  | { op: 'clearPending'; reader: number }
  | { op: 'beginBuild'; reader: number; token: string; since: number }
  | { op: 'finishBuild'; reader: number; token: string; snapshot: FeedSnapshot }
  | { op: 'drop'; reader: number }
  | { op: 'markInFlight'; taskId: number; score: number }
  | { op: 'clearInFlight'; taskIds: number[] }
  | { op: 'syncInFlight'; tasks: Array<{ taskId: number; score: number }>; complete: boolean }
  | { op: 'unsyncWatermark' };

const taskArb = fc.record({ taskId: fc.integer({ min: 1, max: 6 }), score: fc.integer({ min: 1, max: 8 }) });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('read' as const), reader: readerArb, from: positionArb, limit: fc.integer({ min: 0, max: 6 }) }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('deliver' as const), readers: readersArb, blog: blogArb, authorId: authorArb, readAt: timeArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('retractUnfollowed' as const),
      reader: readerArb,
      blogId: fc.integer({ min: 1, max: 25 }),
      change: changeArb,
      readAt: timeArb,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('retract' as const), readers: readersArb, blogId: fc.integer({ min: 1, max: 25 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('applyFollow' as const),
      reader: readerArb,
      change: changeArb,
      entries: fc.uniqueArray(blogArb, { selector: (blog) => blog.id, maxLength: 4 }),
      floor: fc.option(fc.integer({ min: 0, max: 9 }), { nil: null }),
      stale: fc.uniqueArray(fc.integer({ min: 1, max: 25 }), { maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('markUnfollow' as const), reader: readerArb, change: changeArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('blogIds' as const), reader: readerArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('removeUnfollowed' as const),
      reader: readerArb,
      change: changeArb,
      blogIds: fc.uniqueArray(fc.integer({ min: 1, max: 25 }), { maxLength: 5 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('create' as const), reader: readerArb, version: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('markPending' as const), reader: readerArb, at: fc.integer({ min: 1, max: 9 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('clearPending' as const), reader: readerArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('beginBuild' as const), reader: readerArb, token: tokenArb, since: timeArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('finishBuild' as const), reader: readerArb, token: tokenArb, snapshot: snapshotArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('drop' as const), reader: readerArb }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('markInFlight' as const), taskId: fc.integer({ min: 1, max: 6 }), score: fc.integer({ min: 1, max: 8 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('clearInFlight' as const), taskIds: fc.uniqueArray(fc.integer({ min: 1, max: 6 }), { maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('unsyncWatermark' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('syncInFlight' as const), tasks: fc.array(taskArb, { maxLength: 3 }), complete: fc.boolean() }) },
);

/** Runs one operation; what it answers, in a form that does not depend on reply order. */
async function run(inbox: Inbox, op: Op): Promise<unknown> {
  switch (op.op) {
    case 'read': {
      const answer = await inbox.read(op.reader, op.from, op.limit);
      return answer;
    }
    case 'deliver':
      return inbox.deliver(op.readers, { entry: op.blog, authorId: op.authorId, readAt: op.readAt });
    case 'retractUnfollowed':
      return inbox.retractUnfollowed(op.reader, op.blogId, op.change, op.readAt);
    case 'retract':
      return inbox.retract(op.readers, op.blogId);
    case 'applyFollow':
      return inbox.applyFollow(op.reader, op.change, op.entries, op.floor, op.stale);
    case 'blogIds': {
      const ids = await inbox.blogIds(op.reader);
      return ids === null ? null : [...ids].sort((a, b) => a - b);
    }
    case 'markUnfollow': {
      const ids = await inbox.markUnfollow(op.reader, op.change);
      return ids === null ? null : [...ids].sort((a, b) => a - b);
    }
    case 'removeUnfollowed':
      return inbox.removeUnfollowed(op.reader, op.change, op.blogIds);
    case 'create':
      return inbox.create(op.reader, op.version);
    case 'markPending':
      return inbox.markPending(op.reader, op.at);
    case 'clearPending':
      return inbox.clearPending(op.reader);
    case 'beginBuild':
      return inbox.beginBuild(op.reader, op.token, op.since);
    case 'finishBuild':
      return inbox.finishBuild(op.reader, op.token, op.snapshot);
    case 'drop':
      return inbox.drop(op.reader);
    case 'markInFlight':
      return inbox.markInFlight(op.taskId, op.score);
    case 'clearInFlight':
      return inbox.clearInFlight(op.taskIds);
    case 'syncInFlight':
      return inbox.syncInFlight(op.tasks, op.complete);
    case 'unsyncWatermark':
      return inbox.unsyncWatermark();
  }
}

// ---------------------------------------------------------------------------------------------
// States, read back in one shape from both

interface ReaderState {
  entries: Array<[number, number]>;
  fields: Record<string, string>;
}

function memoryState(inbox: MemoryInbox, reader: number): ReaderState | null {
  const state = inbox.states.get(reader);
  if (!state) return null;
  const fields: Record<string, string> = {
    floor: String(state.floor),
    base: String(state.base),
    maxver: String(state.maxver),
    since: String(state.since),
    pending: String(state.pending),
    pendingAt: String(state.pendingAt),
  };
  if (state.building !== null) fields.building = state.building;
  for (const [author, version] of state.follows) fields[`a:${author}`] = String(version);
  for (const [id, author] of state.delivered) fields[`d:${id}`] = String(author);
  for (const id of state.retracted) fields[`r:${id}`] = '1';
  return { entries: [...state.entries].sort((a, b) => a[0] - b[0]), fields };
}

async function redisState(redis: RedisClient, keys: RedisKeys, reader: number): Promise<ReaderState | null> {
  const hash = await redis.hgetall(keys.feedMeta(reader));
  if (Object.keys(hash).length === 0) {
    expect(await redis.exists(keys.feed(reader))).toBe(0); // never a sorted set without its hash
    return null;
  }
  const flat = await redis.zrange(keys.feed(reader), '0', '-1', 'WITHSCORES');
  const entries: Array<[number, number]> = [];
  for (let i = 0; i < flat.length; i += 2) entries.push([blogIdOfMember(flat[i]), Number(flat[i + 1])]);
  // The hash names blogs by their padded member; the memory inbox by number.
  const fields: Record<string, string> = { pending: '0', pendingAt: '0' };
  for (const [field, value] of Object.entries(hash)) {
    if (field === 'exp') continue; // when the keys expire: the memory inbox has no clock
    const kind = field.slice(0, 2);
    fields[kind === 'd:' || kind === 'r:' ? `${kind}${blogIdOfMember(field.slice(2))}` : field] = value;
  }
  return { entries: entries.sort((a, b) => a[0] - b[0]), fields };
}

function sortedTasks(watermark: { synced: boolean; tasks: Array<{ taskId: number; score: number }> }) {
  return { synced: watermark.synced, tasks: [...watermark.tasks].sort((a, b) => a.taskId - b.taskId) };
}

let runNumber = 0;

it('does exactly what the memory inbox does, answer by answer and state by state', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60 }), async (ops) => {
      runNumber += 1;
      const keys = new RedisKeys(`${app.config.redisKeyPrefix}conf${runNumber}:`);
      const redisInbox = new RedisInbox(app.redis, keys, MAX_ITEMS, 3600);
      const memory = new MemoryInbox(MAX_ITEMS);
      try {
        for (const [step, op] of ops.entries()) {
          const where = `step ${step}: ${JSON.stringify(op)}`;
          const expected = await run(memory, op);
          const actual = await run(redisInbox, op);
          expect({ where, answer: actual }).toEqual({ where, answer: expected });
          for (const reader of READERS) {
            expect({ where, reader, state: await redisState(app.redis, keys, reader) }).toEqual({ where, reader, state: memoryState(memory, reader) });
          }
          expect({ where, watermark: sortedTasks(await redisInbox.inFlight()) }).toEqual({ where, watermark: sortedTasks(await memory.inFlight()) });
        }
      } finally {
        // The run's keys by name: a SCAN per run would read the whole (shared) keyspace.
        await Promise.all([...READERS.flatMap((reader) => [keys.feed(reader), keys.feedMeta(reader)]), keys.fanoutInFlight()].map((key) => app.redis.del(key)));
      }
    }),
    { numRuns: isCluster(app.redis) ? 80 : 200 },
  );
}, 300_000);

it('keeps both keys of an inbox in one cluster slot and expiring together', async () => {
  const keys = new RedisKeys(`${app.config.redisKeyPrefix}ttl:`);
  const inbox = new RedisInbox(app.redis, keys, MAX_ITEMS, 3600);
  await inbox.create(7, 0);
  await inbox.deliver([7], { entry: { id: 1, score: 5 }, authorId: 1, readAt: 0 });
  const [entriesTtl, metaTtl] = [await app.redis.pttl(keys.feed(7)), await app.redis.pttl(keys.feedMeta(7))];
  expect(entriesTtl).toBeGreaterThan(3_500_000);
  expect(Math.abs(entriesTtl - metaTtl)).toBeLessThan(1000);
  expect(keys.feed(7)).toContain('{7}');
  expect(keys.feedMeta(7)).toContain('{7}');
  await deleteKeys(app.redis, keys.all());
});
