/**
 * The Redis inbox (Lua scripts, src/feed/inbox.redis.ts) against its specification, the memory
 * inbox (src/feed/inbox.memory.ts): fast-check generates sequences of every operation, with
 * small numbers so that ties, trimming, stale versions, builds taken over and floors happen
 * often; both run each sequence, and every answer and the whole state after every step must be
 * equal. The feed model test (test/unit/feed/feed-rules-model.test.ts) relies on this equality: what it
 * proves of the memory inbox holds of Redis.
 */
import fc from 'fast-check';
import { FeedPosition, ScoredId } from '../../../src/kernel/pagination/cursor';
import { FeedSnapshot, Inbox } from '../../../src/feed/inbox';
import { MemoryInbox } from '../../../src/feed/inbox.memory';
import { INBOX_SENTINEL, RedisInbox } from '../../../src/feed/inbox.redis';
import { blogIdOfMember, RedisKeys } from '../../../src/redis/keys';
import { isCluster, RedisClient } from '../../../src/redis/redis.client';
import { deleteKeys, startTestApp, TestApp } from '../../support/harness';

const MAX_ITEMS = 5;
const READERS = [1, 2, 3];
const AUTHORS = [1, 2, 3];

let app: TestApp;
beforeAll(async () => {
  // It compares answers, not latency: on the Redis Cluster pass, under the whole suite's load, a
  // script call once took longer than the default 300 ms (REDIS_COMMAND_TIMEOUT_MS) and failed it.
  app = await startTestApp('inbox_conformance', { env: { FANOUT_WORKERS: '0', REDIS_COMMAND_TIMEOUT_MS: '5000' } });
});
afterAll(() => app.close());

// ---------------------------------------------------------------------------------------------
// Operations

const blogArb = fc.record({ id: fc.integer({ min: 1, max: 25 }), score: fc.integer({ min: 1, max: 8 }) });
const readerArb = fc.constantFrom(...READERS);
const readersArb = fc.subarray(READERS, { minLength: 1 });
const authorArb = fc.constantFrom(...AUTHORS);
const versionArb = fc.integer({ min: 1, max: 8 });
const changeArb = fc.record({ version: versionArb, authorId: authorArb });
const tokenArb = fc.constantFrom('a:1', 'b:2');
// Two generations, so that inboxes and markers of another one are met (mostly the same one, so
// that valid inboxes and a synced watermark are common too).
const epochArb = fc.oneof({ weight: 5, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constant(2) });
const changeIdArb = fc.integer({ min: 1, max: 4 });
const positionArb: fc.Arbitrary<FeedPosition> = fc.oneof(
  fc.constant({ maxScore: null, offset: 0, afterId: null }),
  fc.record({
    maxScore: fc.integer({ min: 0, max: 9 }),
    offset: fc.integer({ min: 0, max: 4 }),
    afterId: fc.constant(null),
  }),
  fc.record({
    maxScore: fc.integer({ min: 0, max: 9 }),
    offset: fc.integer({ min: 0, max: 4 }),
    afterId: fc.integer({ min: 1, max: 26 }),
  }),
);
// Each author followed, followed but muted, or neither: a snapshot's followees and muted follows never meet.
const followsArb = fc.array(fc.constantFrom('followee', 'muted', 'none'), {
  minLength: AUTHORS.length,
  maxLength: AUTHORS.length,
});
const snapshotArb: fc.Arbitrary<FeedSnapshot> = fc
  .record({
    version: fc.integer({ min: 0, max: 8 }),
    follows: followsArb,
    entries: fc.uniqueArray(blogArb, { selector: (blog) => blog.id, maxLength: MAX_ITEMS }),
    floor: fc.integer({ min: 0, max: 9 }),
  })
  .map(({ follows, ...snapshot }) => ({
    ...snapshot,
    followeeIds: AUTHORS.filter((_, i) => follows[i] === 'followee'),
    mutedIds: AUTHORS.filter((_, i) => follows[i] === 'muted'),
  }));
/**
 * When a delivery's readers were listed: not known, before every install so far, or after them
 * (the two clocks differ: each store turns these into times of its own).
 */
type ListedWhen = 'unknown' | 'before' | 'after';

type Op =
  | { op: 'read'; reader: number; from: FeedPosition; limit: number; epoch: number }
  | { op: 'deliver'; readers: number[]; blog: ScoredId; authorId: number; listed: ListedWhen; epoch: number }
  | { op: 'retractUnfollowed'; reader: number; blogId: number; change: { version: number; authorId: number } }
  | { op: 'retract'; readers: number[]; blogId: number }
  | {
      op: 'applyFollow';
      reader: number;
      change: { version: number; authorId: number };
      entries: ScoredId[];
      floor: number | null;
      stale: number[];
    }
  | { op: 'markUnfollow'; reader: number; change: { version: number; authorId: number } }
  | { op: 'blogIds'; reader: number }
  | { op: 'removeUnfollowed'; reader: number; change: { version: number; authorId: number }; blogIds: number[] }
  | { op: 'create'; reader: number; version: number; epoch: number }
  | { op: 'markPending'; reader: number; changeId: number }
  | { op: 'clearPending'; reader: number; changeId: number }
  | { op: 'pendingChanges'; reader: number }
  | { op: 'beginBuild'; reader: number; token: string; epoch: number }
  | { op: 'finishBuild'; reader: number; token: string; snapshot: FeedSnapshot }
  | { op: 'drop'; reader: number }
  | { op: 'evict'; reader: number; key: 'entries' | 'followees' }
  | { op: 'live'; reader: number; live: boolean }
  | { op: 'markInFlight'; task: { taskId: number; authorId: number; score: number } }
  | { op: 'clearInFlight'; tasks: Array<{ taskId: number; authorId: number }> }
  | {
      op: 'syncInFlight';
      tasks: Array<{ taskId: number; authorId: number; score: number }>;
      complete: boolean;
      epoch: number;
    }
  | { op: 'unsyncWatermark' }
  | { op: 'renewBigAuthors'; reason: 'changing' | 'changed' | 'missing'; epoch: number };

// A task always has the same author and score (its blog's), as in the outbox.
const taskArb = fc
  .integer({ min: 1, max: 6 })
  .map((taskId) => ({ taskId, authorId: 1 + (taskId % 3), score: 1 + ((taskId * 3) % 8) }));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('read' as const),
      reader: readerArb,
      from: positionArb,
      limit: fc.integer({ min: 0, max: 6 }),
      epoch: epochArb,
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('deliver' as const),
      readers: readersArb,
      blog: blogArb,
      authorId: authorArb,
      listed: fc.constantFrom<ListedWhen>('unknown', 'before', 'after'),
      epoch: epochArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('retractUnfollowed' as const),
      reader: readerArb,
      blogId: fc.integer({ min: 1, max: 25 }),
      change: changeArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('retract' as const),
      readers: readersArb,
      blogId: fc.integer({ min: 1, max: 25 }),
    }),
  },
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
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('markUnfollow' as const), reader: readerArb, change: changeArb }),
  },
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
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      reader: readerArb,
      version: fc.integer({ min: 0, max: 3 }),
      epoch: epochArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('markPending' as const), reader: readerArb, changeId: changeIdArb }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('clearPending' as const), reader: readerArb, changeId: changeIdArb }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('pendingChanges' as const), reader: readerArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('beginBuild' as const),
      reader: readerArb,
      token: tokenArb,
      epoch: epochArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('finishBuild' as const),
      reader: readerArb,
      token: tokenArb,
      snapshot: snapshotArb,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('drop' as const), reader: readerArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('evict' as const),
      reader: readerArb,
      key: fc.constantFrom('entries' as const, 'followees' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('live' as const), reader: readerArb, live: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('markInFlight' as const), task: taskArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('clearInFlight' as const),
      tasks: fc
        .uniqueArray(taskArb, { selector: (task) => task.taskId, maxLength: 3 })
        .map((tasks) => tasks.map(({ taskId, authorId }) => ({ taskId, authorId }))),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('unsyncWatermark' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('syncInFlight' as const),
      tasks: fc.array(taskArb, { maxLength: 3 }),
      complete: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      epoch: epochArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('renewBigAuthors' as const),
      reason: fc.constantFrom('changing' as const, 'changed' as const, 'missing' as const),
      epoch: epochArb,
    }),
  },
);

/**
 * Runs one operation; what it answers, in a form that does not depend on reply order or on the
 * clocks (the memory inbox's never moves, Redis's does: ages are compared as present or not,
 * tokens by their epoch and whether they are settled).
 */
interface Store {
  /** Redis evicts one of the inbox's keys. */
  evict(reader: number, key: 'entries' | 'followees'): Promise<void>;
  /** The live bus marks the reader live, or not. */
  live(reader: number, live: boolean): Promise<void>;
  /** A time on this inbox's clock before every install so far, or after them all. */
  clockAt(when: 'before' | 'after'): number;
}

async function run(inbox: Inbox, op: Op, store: Store): Promise<unknown> {
  switch (op.op) {
    case 'read': {
      const { view, watermark, bigAuthors } = await inbox.read(op.reader, op.from, op.limit, op.epoch);
      const shownView = view.state === 'building' || view.state === 'pending' ? { state: view.state } : view;
      const shownWatermark =
        watermark.synced && 'followees' in watermark
          ? { synced: true, followees: [...watermark.followees].sort((a, b) => a.authorId - b.authorId) }
          : watermark;
      return {
        view: shownView,
        watermark: shownWatermark,
        bigAuthors: bigAuthors === null ? null : bigAuthors.split(':')[0],
      };
    }
    case 'deliver': {
      const listed = op.listed === 'unknown' ? {} : { listed: { at: store.clockAt(op.listed), epoch: op.epoch } };
      const outcome = await inbox.deliver(op.readers, { entry: op.blog, authorId: op.authorId, ...listed });
      const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);
      return { written: sorted(outcome.written), unsure: sorted(outcome.unsure), live: sorted(outcome.live) };
    }
    case 'retractUnfollowed':
      return inbox.retractUnfollowed(op.reader, op.blogId, op.change);
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
      return inbox.create(op.reader, op.version, op.epoch);
    case 'markPending':
      return inbox.markPending(op.reader, op.changeId);
    case 'clearPending':
      return inbox.clearPending(op.reader, op.changeId);
    case 'pendingChanges':
      return (await inbox.pendingChanges(op.reader)).sort((a, b) => a - b);
    case 'beginBuild':
      return inbox.beginBuild(op.reader, op.token, op.epoch);
    case 'finishBuild':
      return inbox.finishBuild(op.reader, op.token, op.snapshot);
    case 'drop':
      return inbox.drop(op.reader);
    case 'evict':
      return store.evict(op.reader, op.key);
    case 'live':
      return store.live(op.reader, op.live);
    case 'markInFlight':
      return inbox.markInFlight(op.task);
    case 'clearInFlight':
      return inbox.clearInFlight(op.tasks);
    case 'syncInFlight':
      return inbox.syncInFlight(op.tasks, op.complete, op.epoch);
    case 'unsyncWatermark':
      return inbox.unsyncWatermark();
    case 'renewBigAuthors':
      return inbox.renewBigAuthors(op.reason, op.epoch);
  }
}

// ---------------------------------------------------------------------------------------------
// States, read back in one shape from both

interface ReaderState {
  entries: Array<[number, number]>;
  entriesIntact: boolean;
  followees: number[];
  followeesIntact: boolean;
  fields: Record<string, string>;
}

/** The hash's fields as the Redis inbox writes them (times left out: the memory inbox has no clock). */
function memoryState(inbox: MemoryInbox, reader: number): ReaderState | null {
  const state = inbox.states.get(reader);
  if (!state) return null;
  const fields: Record<string, string> = {};
  if (state.floor !== null) {
    Object.assign(fields, {
      floor: String(state.floor),
      ep: String(state.epoch),
      base: String(state.base),
      maxver: String(state.maxver),
    });
  }
  if (state.building !== null) fields.building = state.building;
  if (state.marks.size > 0) fields.pending = String(state.marks.size);
  for (const id of state.marks) fields[`p:${id}`] = '1';
  for (const [author, version] of state.follows) fields[`a:${author}`] = String(version);
  for (const [id, author] of state.delivered) fields[`d:${id}`] = String(author);
  for (const id of state.retracted) fields[`r:${id}`] = '1';
  for (const [id, author] of state.unsure) fields[`u:${id}`] = String(author);
  if (state.unsure.size > 0) fields.unsure = String(state.unsure.size);
  const present = state.floor !== null;
  return {
    entries: [...state.entries].sort((a, b) => a[0] - b[0]),
    entriesIntact: present && state.entriesIntact,
    followees: [...state.followees].sort((a, b) => a - b),
    followeesIntact: present && state.followeesIntact,
    fields,
  };
}

async function redisState(redis: RedisClient, keys: RedisKeys, reader: number): Promise<ReaderState | null> {
  const hash = await redis.hgetall(keys.feedMeta(reader));
  const flat = await redis.zrange(keys.feed(reader), '0', '-1', 'WITHSCORES');
  const members = await redis.smembers(keys.feedFollowees(reader));
  if (Object.keys(hash).length === 0) {
    expect({ entries: flat, followees: members }).toEqual({ entries: [], followees: [] }); // never a set without its hash
    return null;
  }
  const entries: Array<[number, number]> = [];
  for (let i = 0; i < flat.length; i += 2)
    if (flat[i] !== INBOX_SENTINEL) entries.push([blogIdOfMember(flat[i]), Number(flat[i + 1])]);
  // The hash names blogs by their padded member; the memory inbox by number.
  const fields: Record<string, string> = {};
  for (const [field, value] of Object.entries(hash)) {
    // Redis's clock: the memory inbox has none
    if (field === 'buildAt' || field === 'pendingAt' || field.startsWith('a:at:')) continue;
    const kind = field.slice(0, 2);
    fields[kind === 'd:' || kind === 'r:' || kind === 'u:' ? `${kind}${blogIdOfMember(field.slice(2))}` : field] =
      value;
  }
  return {
    entries: entries.sort((a, b) => a[0] - b[0]),
    entriesIntact: flat.includes(INBOX_SENTINEL),
    followees: members
      .filter((member) => member !== INBOX_SENTINEL)
      .map(Number)
      .sort((a, b) => a - b),
    followeesIntact: members.includes(INBOX_SENTINEL),
    fields,
  };
}

function sortedTasks(watermark: {
  synced: boolean;
  tasks: Array<{ taskId: number; authorId: number; score: number }>;
}) {
  return { synced: watermark.synced, tasks: [...watermark.tasks].sort((a, b) => a.taskId - b.taskId) };
}

let runNumber = 0;

it('does exactly what the memory inbox does, answer by answer and state by state', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60, size: 'max' }), async (ops) => {
      runNumber += 1;
      const keys = new RedisKeys(`${app.config.redisKeyPrefix}conf${runNumber}:`);
      const redisInbox = new RedisInbox({ redis: app.redis, keys, maxItems: MAX_ITEMS, ttlSeconds: 3600 });
      const memory = new MemoryInbox(MAX_ITEMS);
      try {
        for (const [step, op] of ops.entries()) {
          const where = `step ${step}: ${JSON.stringify(op)}`;
          const expected = await run(memory, op, {
            evict: async (reader, key) => memory.evict(reader, key),
            live: async (reader, live) =>
              void (live ? memory.liveReaders.add(reader) : memory.liveReaders.delete(reader)),
            // The memory inbox's clock stands at 0: its installs record 0. On a cluster no install
            // records a time (RedisInbox.clock): no listing comes after one.
            clockAt: (when) => (when === 'after' && !isCluster(app.redis) ? 1 : 0),
          });
          const actual = await run(redisInbox, op, {
            evict: async (reader, key) =>
              void (await app.redis.del(key === 'entries' ? keys.feed(reader) : keys.feedFollowees(reader))),
            live: async (reader, live) =>
              void (await (live ? app.redis.hset(keys.live(reader), 'p', '1') : app.redis.del(keys.live(reader)))),
            clockAt: (when) => (when === 'after' ? Date.now() + 86_400_000 : 1),
          });
          expect({ where, answer: actual }).toEqual({ where, answer: expected });
          for (const reader of READERS) {
            expect({ where, reader, state: await redisState(app.redis, keys, reader) }).toEqual({
              where,
              reader,
              state: memoryState(memory, reader),
            });
          }
          for (const epoch of [1, 2]) {
            expect({ where, epoch, watermark: sortedTasks(await redisInbox.inFlight(epoch)) }).toEqual({
              where,
              epoch,
              watermark: sortedTasks(await memory.inFlight(epoch)),
            });
          }
        }
      } finally {
        // The run's keys by name: a SCAN per run would read the whole (shared) keyspace.
        const watermarkKeys = [
          keys.watermarkTasks(),
          keys.watermarkAuthors(),
          keys.bigAuthors(),
          ...AUTHORS.map((author) => keys.watermarkAuthor(author)),
        ];
        await Promise.all(
          [
            ...READERS.flatMap((reader) => [keys.feed(reader), keys.feedMeta(reader), keys.feedFollowees(reader)]),
            ...watermarkKeys,
          ].map((key) => app.redis.del(key)),
        );
      }
    }),
    { numRuns: Number(process.env.FC_RUNS ?? (isCluster(app.redis) ? 80 : 200)) },
  );
}, 300_000);

it('keeps the keys of an inbox in one cluster slot and expiring together', async () => {
  const keys = new RedisKeys(`${app.config.redisKeyPrefix}ttl:`);
  const inbox = new RedisInbox({ redis: app.redis, keys, maxItems: MAX_ITEMS, ttlSeconds: 3600 });
  await inbox.create(7, 0, 1);
  await inbox.deliver([7], { entry: { id: 1, score: 5 }, authorId: 1 });
  const ttls = await Promise.all(
    [keys.feed(7), keys.feedMeta(7), keys.feedFollowees(7)].map((key) => app.redis.pttl(key)),
  );
  expect(Math.min(...ttls)).toBeGreaterThan(3_500_000);
  expect(Math.max(...ttls) - Math.min(...ttls)).toBeLessThan(1000);
  for (const key of [keys.feed(7), keys.feedMeta(7), keys.feedFollowees(7)]) expect(key).toContain('{7}');
  await deleteKeys(app.redis, keys.all());
});
