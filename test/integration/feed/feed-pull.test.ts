/**
 * FeedStore.feedPage (the pull page: the followee list, then one bounded index range per
 * followee; above MANY_FOLLOWEES, only for the followees whose newest blogs can reach the page)
 * against a brute-force model and against the single join statement it replaced, on real
 * MariaDB and on the embedded SQLite: every kind of position (keyset, legacy offset, the start),
 * ties inside one millisecond, deleted blogs, minScore, readers of none to 600 followees, both
 * sides of MANY_FOLLOWEES and of MOST_BRANCHES, and a delete between the page's statements.
 *
 * Each engine gets a database of its own (feed_test_<namespace>pull_exact_*; a SQLite file in
 * the temp folder). In the embedded pass (TEST_EMBEDDED=on) only SQLite runs.
 */
import 'reflect-metadata';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Database, Sql, SqlStatementLog } from '../../../src/db/database';
import { openMysql, openSqlite } from '../../../src/db/migrate';
import { compareCanonical, FeedPosition, isAfter, ScoredId, START } from '../../../src/kernel/pagination/cursor';
import { FeedStore, MANY_FOLLOWEES, MOST_BRANCHES } from '../../../src/feed/feed.store';
import { joinPage } from '../../support/join-page';
import { dropDatabase, EMBEDDED, MYSQL_URL, testDatabase } from '../../support/harness';

/** Migrations report each step through `info`; the test needs only problems. */
const QUIET = {
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/** Scores are epoch ms from here: small offsets make many same-millisecond ties. */
const BASE = Date.UTC(2025, 0, 1);

type Engine = 'mysql' | 'sqlite';
const ENGINES: Engine[] = EMBEDDED ? ['sqlite'] : ['mysql', 'sqlite'];

async function openEngine(engine: Engine, name: string): Promise<Database> {
  const database = testDatabase(name);
  const logger = new SqlStatementLog(QUIET);
  if (engine === 'sqlite') {
    const file = join(tmpdir(), `${database}.sqlite`);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
    return openSqlite(file, logger);
  }
  await dropDatabase(database);
  return openMysql(`${MYSQL_URL}/${database}`, logger, { poolSize: 4, statementTimeoutMs: 0 });
}

interface BlogSpec {
  id: number;
  author: number;
  /** ms after BASE */
  score: number;
  deleted: boolean;
}

interface World {
  blogs: BlogSpec[];
  /** [reader, author] */
  follows: Array<[number, number]>;
}

async function load(db: Database, world: World): Promise<void> {
  await db.write('DELETE FROM tb_blog', []);
  await db.write('DELETE FROM tb_follow', []);
  const deletedAt = new Date(BASE + 86_400_000);
  await db.insertRows(
    'INSERT INTO tb_blog (id, user_id, title, content, images, created_at, deleted_at) VALUES ?',
    world.blogs.map((blog) => [
      blog.id,
      blog.author,
      't',
      'c',
      '[]',
      new Date(BASE + blog.score),
      blog.deleted ? deletedAt : null,
    ]),
  );
  await db.insertRows(
    'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
    world.follows.map(([reader, author]) => [reader, author, new Date(BASE)]),
  );
}

/** The reader's feed the slow way: live blogs of followees, canonical order. */
function feedOf(world: World, reader: number): ScoredId[] {
  const followed = new Set(world.follows.filter(([r]) => r === reader).map(([, author]) => author));
  return world.blogs
    .filter((blog) => !blog.deleted && followed.has(blog.author))
    .map((blog) => ({ id: blog.id, score: BASE + blog.score }))
    .sort(compareCanonical);
}

/** What a page must be: the feed at or above minScore, after `from` (skipping a legacy offset), cut at `limit`. */
function modelPage(
  world: World,
  reader: number,
  from: FeedPosition,
  limit: number,
  minScore: number | null,
): ScoredId[] {
  const feed = feedOf(world, reader).filter((item) => minScore === null || item.score >= minScore);
  if (from.maxScore === null) return feed.slice(from.offset, from.offset + limit);
  if (from.afterId !== null) return feed.filter((item) => isAfter(item, from)).slice(0, limit);
  const maxScore = from.maxScore;
  return feed.filter((item) => item.score <= maxScore).slice(from.offset, from.offset + limit);
}

/** The statements `db` runs while `work` runs. */
async function statementsDuring<T>(db: Database, work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const recording = (sql: Sql): Sql => ({
    select: (statement, params) => {
      statements.push(statement);
      return sql.select(statement, params);
    },
    write: (statement, params) => sql.write(statement, params),
  });
  const direct = recording({ select: db.select.bind(db), write: db.write.bind(db) });
  const transaction = db.transaction.bind(db);
  // Reads on the database, and reads in a transaction (a rebuild's snapshot runs in one).
  const spies: jest.SpyInstance[] = [
    jest.spyOn(db, 'select').mockImplementation((statement, params) => direct.select(statement, params)),
    jest
      .spyOn(db, 'transaction')
      .mockImplementation((inTransaction, isolation) => transaction((sql) => inTransaction(recording(sql)), isolation)),
  ];
  try {
    return { result: await work(), statements };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

const AUTHORS = [11, 12, 13, 14, 15, 16, 17, 18, 19];
const READER = 1;
const OTHER_READER = 2;

/** `count` users, from `first` on, who never publish: followees that move a reader across MANY_FOLLOWEES without changing the feed. */
const silent = (first: number, count: number) => Array.from({ length: count }, (_, i) => first + i);

/** The statements of the shapes feedPage can take. */
const isHeads = (statement: string) => statement.includes('AS user_id');
const isJoin = (statement: string) => statement.includes('b.user_id = f.follow_user_id');

const worldArbitrary: fc.Arbitrary<World> = fc
  .record({
    blogs: fc.uniqueArray(
      fc.record({
        id: fc.integer({ min: 1, max: 400 }),
        // Half of them by one author, so that one followee alone can fill a page (and a skip).
        author: fc.oneof(fc.constant(AUTHORS[0]), fc.constantFrom(...AUTHORS)),
        score: fc.integer({ min: 0, max: 6 }),
        deleted: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      }),
      { selector: (blog) => blog.id, maxLength: 45 },
    ),
    mine: fc.subarray(AUTHORS.slice(0, 8)),
    theirs: fc.subarray(AUTHORS),
    // MANY_FOLLOWEES silent followees more: with any author besides, the page takes the heads path.
    wide: fc.boolean(),
  })
  .map(({ blogs, mine, theirs, wide }) => ({
    blogs,
    follows: [
      ...[...mine, ...(wide ? silent(1000, MANY_FOLLOWEES) : [])].map((author) => [READER, author] as [number, number]),
      ...theirs.map((author) => [OTHER_READER, author] as [number, number]),
    ],
  }));

/** Positions worth asking about in `world`: after each item, between items, legacy, start. */
function positionArbitrary(world: World): fc.Arbitrary<FeedPosition> {
  const feed = feedOf(world, READER);
  const keysetAfterItem =
    feed.length === 0
      ? fc.constant(START)
      : fc.constantFrom(...feed).map((item) => ({ maxScore: item.score, offset: 1, afterId: item.id }));
  return fc.oneof(
    fc.constant(START),
    keysetAfterItem,
    fc.record({
      maxScore: fc.integer({ min: -1, max: 7 }).map((s) => BASE + s),
      offset: fc.nat(3),
      afterId: fc.integer({ min: 1, max: 401 }),
    }),
    fc.record({
      maxScore: fc.integer({ min: -1, max: 7 }).map((s) => BASE + s),
      offset: fc.nat(6),
      afterId: fc.constant(null),
    }),
    fc.record({ maxScore: fc.constant(null), offset: fc.nat(4), afterId: fc.constant(null) }),
  );
}

describe.each(ENGINES)('feedPage on %s', (engine) => {
  let db: Database;
  let store: FeedStore;
  beforeAll(async () => {
    db = await openEngine(engine, `pull_exact_${engine}`);
    store = new FeedStore(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('equals the brute-force model and the join statement it replaced, for every position, limit and minScore, on both paths', async () => {
    const paths = { list: 0, heads: 0 };
    await fc.assert(
      fc.asyncProperty(
        worldArbitrary.chain((world) =>
          fc.record({
            world: fc.constant(world),
            asks: fc.array(
              fc.record({
                from: positionArbitrary(world),
                limit: fc.integer({ min: 0, max: 10 }),
                minScore: fc.option(fc.integer({ min: 0, max: 6 }).map((s) => BASE + s)),
              }),
              { minLength: 1, maxLength: 12 },
            ),
          }),
        ),
        async ({ world, asks }) => {
          await load(db, world);
          for (const { from, limit, minScore } of asks) {
            const { result: page, statements } = await statementsDuring(db, () =>
              store.feedPage(READER, from, limit, minScore),
            );
            const expected = modelPage(world, READER, from, limit, minScore);
            expect({ from, limit, minScore, page }).toEqual({ from, limit, minScore, page: expected });
            expect(await joinPage(db, READER, from, limit, minScore)).toEqual(expected);
            // Nothing changes between the statements here, so the join never reads a page again.
            expect({ from, limit, minScore, join: statements.some(isJoin) }).toEqual({
              from,
              limit,
              minScore,
              join: false,
            });
            if (statements.some(isHeads)) paths.heads += 1;
            else if (statements.length === 2) paths.list += 1;
          }
        },
      ),
      { numRuns: engine === 'mysql' ? 60 : 120 },
    );
    expect(paths.list).toBeGreaterThan(20);
    expect(paths.heads).toBeGreaterThan(20);
  });

  describe('readers of few and of many followees', () => {
    // 640 authors with 1 to 3 blogs each, in few milliseconds (long tie groups); every 7th blog
    // deleted. One reader follows 20 of them, one 600: more followees than MANY_FOLLOWEES and
    // than MOST_BRANCHES, so only the followees whose heads can reach a page get a branch.
    const world: World = { blogs: [], follows: [] };
    let id = 1;
    for (let author = 100; author < 740; author += 1) {
      for (let i = 0; i < 1 + (author % 3); i += 1) {
        world.blogs.push({ id, author, score: (id * 7919) % 40, deleted: id % 7 === 0 });
        id += 1;
      }
    }
    for (let author = 100; author < 700; author += 1) world.follows.push([READER, author]);
    for (let author = 700; author < 720; author += 1) world.follows.push([OTHER_READER, author]);
    beforeAll(() => load(db, world));

    it.each([
      [READER, 21],
      [READER, 5],
      [OTHER_READER, 21],
      [OTHER_READER, 4],
    ])('reader %d scrolls the whole feed in pages of %d, by keyset and by legacy cursors', async (reader, limit) => {
      const feed = feedOf(world, reader);
      expect(feed.length).toBeGreaterThan(reader === READER ? 900 : 30);
      const shown: ScoredId[] = [];
      let from: FeedPosition = START;
      for (let page = 0; page < 1000; page += 1) {
        const items = await store.feedPage(reader, from, limit);
        expect(items).toEqual(modelPage(world, reader, from, limit, null));
        shown.push(...items);
        if (items.length < limit) break;
        const last = items[items.length - 1];
        from = { maxScore: last.score, offset: 0, afterId: last.id };
      }
      expect(shown).toEqual(feed);
      // Legacy cursors (no id): the offset counts into the tie group of maxScore.
      for (const item of feed.filter((_, i) => i % 97 === 0)) {
        for (const offset of [0, 1, 3, 17]) {
          const legacy = { maxScore: item.score, offset, afterId: null };
          expect(await store.feedPage(reader, legacy, limit)).toEqual(modelPage(world, reader, legacy, limit, null));
        }
      }
    });

    it('a minScore span (above the fan-out watermark) of a reader of 600', async () => {
      for (const minScore of [BASE + 39, BASE + 35, BASE + 20, BASE]) {
        const page = await store.feedPage(READER, START, 21, minScore);
        expect(page).toEqual(modelPage(world, READER, START, 21, minScore));
      }
    });
  });

  describe('both sides of MANY_FOLLOWEES and of MOST_BRANCHES', () => {
    // 100 authors, 700 blogs: 560 in one millisecond (a tie group longer than MOST_BRANCHES),
    // the others around it. Reader 1 follows the 100 (a branch each); reader 2 follows them and
    // one user more who never publishes (the heads path): the same feed.
    const world: World = { blogs: [], follows: [] };
    const authors = silent(300, MANY_FOLLOWEES);
    beforeAll(async () => {
      for (let id = 1; id <= 700; id += 1) {
        world.blogs.push({
          id,
          author: authors[(id * 37) % authors.length],
          score: id <= 560 ? 5 : id % 10,
          deleted: id % 11 === 0,
        });
      }
      for (const author of authors) world.follows.push([READER, author], [OTHER_READER, author]);
      world.follows.push([OTHER_READER, 999]);
      await load(db, world);
      expect(feedOf(world, READER)).toEqual(feedOf(world, OTHER_READER));
    });

    it('the same pages on either side of MANY_FOLLOWEES, in 2 statements and in 3', async () => {
      const feed = feedOf(world, READER);
      const positions: FeedPosition[] = [
        START,
        ...feed.filter((_, i) => i % 37 === 0).map((item) => ({ maxScore: item.score, offset: 1, afterId: item.id })),
        ...[0, 1, 20, 300].map((offset) => ({ maxScore: BASE + 5, offset, afterId: null })),
      ];
      for (const from of positions) {
        for (const limit of [1, 21]) {
          const few = await statementsDuring(db, () => store.feedPage(READER, from, limit));
          const many = await statementsDuring(db, () => store.feedPage(OTHER_READER, from, limit));
          expect(few.result).toEqual(modelPage(world, READER, from, limit, null));
          expect(many.result).toEqual(few.result);
          expect([few.statements.length, few.statements.some(isHeads)]).toEqual([2, false]);
          expect([many.statements.length, many.statements.some(isHeads)]).toEqual([3, true]);
        }
      }
    });

    it('a rebuild snapshot of 600 entries reads bounded ranges on MariaDB, never the join, and holds the newest 600 of the feed', async () => {
      if (engine === 'sqlite') return; // no inboxes, no rebuilds in the embedded mode
      // READER has a user row (feed version 7) and a muted follow; OTHER_READER no row (version 0).
      await db.write('DELETE FROM tb_user WHERE id = ?', [READER]);
      await db.write(
        "INSERT INTO tb_user (id, nick_name, nick_key, password, created_at, feed_version) VALUES (?, 'r', 'r', 'x', ?, 7)",
        [READER, new Date(BASE)],
      );
      await db.write('INSERT INTO tb_follow (user_id, follow_user_id, created_at, muted) VALUES (?, 739, ?, 1)', [
        READER,
        new Date(BASE),
      ]);
      const versions = new Map([[READER, 7]]);
      for (const reader of [READER, OTHER_READER]) {
        const { result, statements } = await statementsDuring(db, () => store.snapshot(reader, 600));
        expect(result.entries.map((entry) => entry.id)).toEqual(
          feedOf(world, reader)
            .slice(0, 600)
            .map((item) => item.id),
        );
        expect(result.complete).toBe(feedOf(world, reader).length <= 600);
        // Its reads, in its transaction, seen (the helper once saw only reads outside one).
        expect(statements.length).toBeGreaterThan(0);
        expect(statements.some(isJoin)).toBe(false);
        // The version and the followees come in its first statement, together: one round trip.
        expect(result.version).toBe(versions.get(reader) ?? 0);
        expect(result.followeeIds.sort((a, b) => a - b)).toEqual(
          world.follows.filter(([r]) => r === reader).map(([, author]) => author),
        );
        // And the muted follows, apart (a delivery that trusts MySQL's list of followers must know them).
        expect(result.mutedIds).toEqual(reader === READER ? [739] : []);
        expect(statements.filter((statement) => /\bFROM tb_user\b/.test(statement))).toEqual([statements[0]]);
        expect(statements[0]).toMatch(/FROM tb_follow WHERE user_id = \?/);
      }
    });

    // SQLite refuses more than MOST_BRANCHES terms in one UNION ALL: past them it reads the join.
    // MariaDB has no such limit: bounded ranges at any size (a rebuild's snapshot is a page of
    // FEED_MAX_ITEMS + 1).
    it.each([
      [MOST_BRANCHES - 21, 21, 'the heads, then ranges'],
      [MOST_BRANCHES - 20, 21, engine === 'sqlite' ? 'the join' : 'the heads, then ranges'],
      [0, MOST_BRANCHES, 'the heads, then ranges'],
      [0, MOST_BRANCHES + 1, engine === 'sqlite' ? 'the join' : 'the heads, then ranges'],
    ])('skip %d, limit %d on the heads path: %s, the same page as the model', async (skip, limit, shape) => {
      const from = { maxScore: BASE + 5, offset: skip, afterId: null };
      const { result, statements } = await statementsDuring(db, () => store.feedPage(OTHER_READER, from, limit));
      expect(result).toEqual(modelPage(world, OTHER_READER, from, limit, null));
      expect(result.length).toBeGreaterThan(0);
      expect(statements.some(isJoin) ? 'the join' : 'the heads, then ranges').toBe(shape);
      // The reader of MANY_FOLLOWEES gives every followee a branch of skip + limit rows.
      expect(await store.feedPage(READER, from, limit)).toEqual(result);
    });
  });

  it.each([
    {
      // Heads of a page of 2: a1 (newest), then b1, the floor. a1 goes; a2 is older than c1, so
      // the two ranges above the floor now hold b1 alone.
      case: 'a short page',
      blogs: [
        { id: 1, author: 11, score: 9 }, // a1
        { id: 2, author: 11, score: 1 }, // a2
        { id: 3, author: 12, score: 8 }, // b1
        { id: 4, author: 12, score: 2 }, // b2
        { id: 5, author: 13, score: 7 }, // c1
      ],
      page: [3, 5],
    },
    {
      // The same inside one millisecond: a2 and c1 are in b1's millisecond with smaller ids, c1
      // before a2. A floor of "b1's millisecond" would still give a page of 2, [b1, a2], and
      // skip c1; the floor is b1 itself, so a2 is below it and the page comes back short.
      case: 'a tie group',
      blogs: [
        { id: 1, author: 11, score: 9 }, // a1
        { id: 10, author: 11, score: 8 }, // a2
        { id: 30, author: 12, score: 8 }, // b1
        { id: 20, author: 13, score: 8 }, // c1
      ],
      page: [30, 20],
    },
  ])(
    'a delete between the heads and the ranges takes a head away ($case): the page is read again, whole',
    async ({ blogs, page: expectedIds }) => {
      const world: World = {
        blogs: blogs.map((blog) => ({ ...blog, deleted: false })),
        follows: [11, 12, 13, ...silent(1000, MANY_FOLLOWEES)].map((author) => [READER, author] as [number, number]),
      };
      await load(db, world);
      const query = db.select.bind(db);
      const statements: string[] = [];
      const spy = jest.spyOn(db, 'select').mockImplementation(async (...args: Parameters<Database['select']>) => {
        statements.push(args[0]);
        const result: unknown[] = await query(...args);
        if (isHeads(args[0])) {
          await query(
            'UPDATE tb_blog SET deleted_at = ? WHERE id = 1',
            engine === 'sqlite' ? ['2025-01-02 00:00:00.000'] : [new Date()],
          );
        }
        return result;
      });
      let page: ScoredId[];
      try {
        page = await store.feedPage(READER, START, 2);
      } finally {
        spy.mockRestore();
      }
      world.blogs[0].deleted = true;
      expect(page.map((item) => item.id)).toEqual(expectedIds);
      expect(page).toEqual(modelPage(world, READER, START, 2, null));
      expect(
        statements.map((statement) => (isHeads(statement) ? 'heads' : isJoin(statement) ? 'join' : 'other')),
      ).toEqual(['other', 'heads', 'other', 'join']);
    },
  );
});
