/**
 * What a pull page reads on 100,200 blogs (MariaDB/MySQL only): 40 authors with 2,500 blogs
 * each and 20 with 10 each. A reader of 20 long histories must read about as much per page as a
 * reader of 20 short ones: the rows the storage engine hands over (Handler_read_*, counted on a
 * connection of the test's own between FLUSH STATUS and SHOW SESSION STATUS) are bounded by the
 * followees and the page, not by history (above MANY_FOLLOWEES: by the followees and the
 * scroll depth). EXPLAIN of every statement of a page: no scan of tb_blog, no sort of tb_blog's
 * rows. The join it replaced is measured beside it.
 *
 * FEED_PULL_FIGURES=on prints the EXPLAINs and the counts; nothing here measures or asserts a
 * time (bench:feed does, for pull pages).
 */
import 'reflect-metadata';
import { Database, SqlStatementLog } from '../../../src/db/database';
import { openMysql } from '../../../src/db/migrate';
import { FeedPosition, ScoredId, START } from '../../../src/kernel/pagination/cursor';
import { FeedStore, MANY_FOLLOWEES, positionSql } from '../../../src/feed/feed.store';
import { joinPage } from '../../support/join-page';
import { dropDatabase, MYSQL_URL, testDatabase } from '../../support/harness';

const QUIET = {
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};
const FIGURES = process.env.FEED_PULL_FIGURES === 'on';

const BASE = Date.UTC(2025, 0, 1);
const DEEP_AUTHORS = Array.from({ length: 40 }, (_, i) => 1000 + i);
const SHALLOW_AUTHORS = Array.from({ length: 20 }, (_, i) => 2000 + i);
const DEEP_BLOGS_EACH = 2500;
const SHALLOW_BLOGS_EACH = 10;
/** Follows every second deep author: 20 histories of 2,500. */
const DEEP_READER = 1;
/** Follows the 20 shallow authors. */
const SHALLOW_READER = 2;
/** Follows all 40 deep authors: more followees than a page's k, a branch each. */
const WIDE_READER = 3;
/** Follows all 60 authors and 50 users who never publish: more than MANY_FOLLOWEES, the heads path. */
const MANY_READER = 4;
const PAGE = 21; // followFeed(first: 20) asks for first + 1

interface ExplainRow {
  id: number;
  select_type: string;
  table: string;
  type: string | null;
  key: string | null;
  rows: number | null;
  Extra: string | null;
}

describe('a pull page on 100,200 blogs', () => {
  let db: Database;
  let store: FeedStore;
  /** Every statement `db` runs, with its parameters, while `capturing`. */
  let captured: Array<{ statement: string; params: unknown[] }> = [];
  let capturing = false;
  const figures: string[] = [];

  beforeAll(async () => {
    const database = testDatabase('pull_plan');
    await dropDatabase(database);
    // One connection: the session's Handler counters then count exactly the statements of a page.
    db = await openMysql(`${MYSQL_URL}/${database}`, new SqlStatementLog(QUIET), {
      poolSize: 1,
      statementTimeoutMs: 0,
    });
    store = new FeedStore(db);
    const started = Date.now();
    const rows: unknown[][] = [];
    const deletedAt = new Date(BASE + 365 * 86_400_000);
    let id = 1;
    // Interleaved in time: blog n of every author at about the same moment, two authors per
    // millisecond (ties decided by id), every 17th blog deleted.
    for (let n = 0; n < DEEP_BLOGS_EACH; n += 1) {
      for (const author of [...DEEP_AUTHORS, ...(n < SHALLOW_BLOGS_EACH ? SHALLOW_AUTHORS : [])]) {
        const at =
          author >= 2000
            ? BASE + (DEEP_BLOGS_EACH - SHALLOW_BLOGS_EACH + n) * 60_000 + (author % 20) * 500
            : BASE + n * 60_000 + Math.floor((author % 40) / 2) * 1000;
        rows.push([id, author, 't', 'c', '[]', new Date(at), id % 17 === 0 ? deletedAt : null]);
        id += 1;
      }
    }
    await db.insertRows(
      'INSERT INTO tb_blog (id, user_id, title, content, images, created_at, deleted_at) VALUES ?',
      rows,
    );
    const follows = [
      ...DEEP_AUTHORS.filter((_, i) => i % 2 === 0).map((author) => [DEEP_READER, author]),
      ...SHALLOW_AUTHORS.map((author) => [SHALLOW_READER, author]),
      ...DEEP_AUTHORS.map((author) => [WIDE_READER, author]),
      ...[...DEEP_AUTHORS, ...SHALLOW_AUTHORS, ...Array.from({ length: 50 }, (_, i) => 3000 + i)].map((author) => [
        MANY_READER,
        author,
      ]),
    ];
    await db.insertRows(
      'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
      follows.map((row) => [...row, new Date(BASE)]),
    );
    await db.query('ANALYZE TABLE tb_blog, tb_follow');
    figures.push(`loaded ${rows.length} blogs in ${Date.now() - started} ms`);
    const query = db.select.bind(db);
    jest.spyOn(db, 'select').mockImplementation((...args: Parameters<Database['select']>) => {
      if (capturing) captured.push({ statement: args[0], params: (args[1] as unknown[]) ?? [] });
      return query(...args);
    });
  }, 120_000);

  afterAll(async () => {
    jest.restoreAllMocks();
    await db?.close();
    if (FIGURES) console.log(figures.join('\n'));
  });

  /** Rows the storage engine handed over (all Handler_read_* counters) while `work` ran. */
  async function handlerReads(
    work: () => Promise<unknown>,
  ): Promise<{ total: number; counters: Record<string, number> }> {
    const read = async () => {
      const rows = await db.query<Array<{ Variable_name: string; Value: string }>>(
        "SHOW SESSION STATUS LIKE 'Handler_read%'",
      );
      return Object.fromEntries(rows.map((row) => [row.Variable_name, Number(row.Value)]));
    };
    await db.query('FLUSH STATUS');
    const idle = await read(); // what FLUSH and SHOW themselves count
    await db.query('FLUSH STATUS');
    await work();
    const after = await read();
    const counters = Object.fromEntries(Object.keys(after).map((name) => [name, after[name] - idle[name]]));
    for (const name of Object.keys(counters)) if (counters[name] === 0) delete counters[name];
    return { total: Object.values(counters).reduce((sum, value) => sum + value, 0), counters };
  }

  /** feedPage's statements for these arguments, and the page. */
  async function statementsOf(reader: number, from: FeedPosition, minScore: number | null) {
    captured = [];
    capturing = true;
    try {
      const page = await store.feedPage(reader, from, PAGE, minScore);
      return { page, statements: captured };
    } finally {
      capturing = false;
    }
  }

  async function explain(statement: string, params: unknown[]): Promise<ExplainRow[]> {
    return db.query<ExplainRow[]>(`EXPLAIN ${statement}`, params);
  }

  const shown = (rows: ExplainRow[]) =>
    rows
      .map(
        (row) =>
          `  ${row.id} ${row.select_type} ${row.table} type=${row.type} key=${row.key} rows=${row.rows} ${row.Extra ?? ''}`,
      )
      .join('\n');

  /** A position half way down the deep reader's history (keyset), and its legacy form. */
  async function middle(reader: number): Promise<ScoredId> {
    const page = await joinPage(db, reader, START, 1, null);
    const [item] = await joinPage(
      db,
      reader,
      { maxScore: page[0].score - (DEEP_BLOGS_EACH / 2) * 60_000, offset: 0, afterId: null },
      1,
    );
    return item;
  }

  /** How many of the reader's feed entries come before `from`: what the heads statement steps over on MariaDB. */
  async function above(reader: number, from: FeedPosition): Promise<number> {
    const position = positionSql(from, 'b');
    const [row] = await db.select<{ n: string }>(
      `SELECT COUNT(*) AS n FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
       WHERE f.user_id = ? AND b.deleted_at IS NULL AND NOT (1 = 1 ${position.where})`,
      [reader, ...position.params],
    );
    return Number(row.n);
  }

  /** The keyset position after the reader's n-th feed entry. */
  async function nth(reader: number, n: number): Promise<FeedPosition> {
    const [item] = await joinPage(db, reader, { maxScore: null, offset: n - 1, afterId: null }, 1);
    return { maxScore: item.score, offset: 1, afterId: item.id };
  }

  it('reads about as much for 20 followees with 2,500 blogs each as for 20 with 10 each, whatever the position', async () => {
    const mid = await middle(DEEP_READER);
    const keyset = { maxScore: mid.score, offset: 1, afterId: mid.id };
    const legacy = { maxScore: mid.score, offset: 1, afterId: null };
    const recent = mid.score + (DEEP_BLOGS_EACH / 2 - 2) * 60_000; // a watermark 2 minutes back
    const cases: Array<{
      name: string;
      reader: number;
      followees: number;
      from: FeedPosition;
      minScore: number | null;
    }> = [
      { name: 'first page, 20 x 10 blogs', reader: SHALLOW_READER, followees: 20, from: START, minScore: null },
      { name: 'first page, 20 x 2,500 blogs', reader: DEEP_READER, followees: 20, from: START, minScore: null },
      {
        name: 'keyset cursor half way down, 20 x 2,500',
        reader: DEEP_READER,
        followees: 20,
        from: keyset,
        minScore: null,
      },
      {
        name: 'legacy cursor half way down, 20 x 2,500',
        reader: DEEP_READER,
        followees: 20,
        from: legacy,
        minScore: null,
      },
      {
        name: 'span above a watermark 2 minutes back, 20 x 2,500',
        reader: DEEP_READER,
        followees: 20,
        from: START,
        minScore: recent,
      },
      { name: 'first page, 40 x 2,500 blogs', reader: WIDE_READER, followees: 40, from: START, minScore: null },
      {
        name: 'keyset cursor half way down, 40 x 2,500',
        reader: WIDE_READER,
        followees: 40,
        from: keyset,
        minScore: null,
      },
      { name: 'first page, 110 followees (heads)', reader: MANY_READER, followees: 110, from: START, minScore: null },
      {
        name: 'span 2 minutes back, 110 followees (heads)',
        reader: MANY_READER,
        followees: 110,
        from: START,
        minScore: recent,
      },
      {
        name: 'keyset cursor 1,000 entries down, 110 followees (heads)',
        reader: MANY_READER,
        followees: 110,
        from: await nth(MANY_READER, 1000),
        minScore: null,
      },
      {
        name: 'keyset cursor half way down, 110 followees (heads, deep)',
        reader: MANY_READER,
        followees: 110,
        from: keyset,
        minScore: null,
      },
    ];
    const results: Record<string, number> = {};
    for (const { name, reader, followees, from, minScore } of cases) {
      const now = await handlerReads(() => store.feedPage(reader, from, PAGE, minScore));
      const before = await handlerReads(() => joinPage(db, reader, from, PAGE, minScore));
      expect(await store.feedPage(reader, from, PAGE, minScore)).toEqual(
        await joinPage(db, reader, from, PAGE, minScore),
      );
      results[name] = now.total;
      figures.push(
        `${name}: Handler_read_* ${before.total} -> ${now.total}\n  before ${JSON.stringify(before.counters)}\n  now    ${JSON.stringify(now.counters)}`,
      );
      if (followees <= MANY_FOLLOWEES) {
        // The followee list, then per followee one range of at most k = 21 entries, read again
        // from the union's temporary table: bounded by followees x k, not by history.
        expect({ name, now: now.total <= 3 * followees * PAGE }).toEqual({ name, now: true });
      } else {
        // The heads: one dive per followee, stepping over the entries above the position, then
        // at most k ranges of at most k entries: followees + scroll depth, not history.
        const bound = 3 * followees + (await above(reader, from)) + 3 * PAGE * PAGE;
        expect({ name, now: now.total <= bound }).toEqual({ name, now: true });
      }
      // A heads page 47,000 entries down steps over those 47,000: followees + scroll depth.
      if (!name.includes('deep') && name !== 'first page, 20 x 10 blogs') {
        expect({ name, before: before.total >= 10 * now.total }).toEqual({ name, before: true });
      }
    }
    // History does not show: a range stops after k = 21 entries, or at its author's last blog
    // (10 for the short histories), so 20 histories of 2,500 cost what 20 of 10 do, times 21 / 10
    // at most; and half way down costs what the first page does.
    const deep = results['first page, 20 x 2,500 blogs'];
    expect(deep).toBeLessThanOrEqual(Math.ceil(PAGE / SHALLOW_BLOGS_EACH) * results['first page, 20 x 10 blogs']);
    expect(results['keyset cursor half way down, 20 x 2,500']).toBeLessThanOrEqual(deep + 2 * 20);
    expect(results['legacy cursor half way down, 20 x 2,500']).toBeLessThanOrEqual(deep + 2 * 20 + 2 * PAGE);
  });

  it('EXPLAIN: each followee is one index range (or dive) of ix_blog_user_live, and nothing scans or sorts tb_blog', async () => {
    const mid = await middle(DEEP_READER);
    for (const [reader, from, count] of [
      [DEEP_READER, START, 2],
      [DEEP_READER, { maxScore: mid.score, offset: 1, afterId: mid.id }, 2],
      [DEEP_READER, { maxScore: mid.score, offset: 1, afterId: null }, 2],
      [MANY_READER, START, 3],
      [MANY_READER, { maxScore: mid.score, offset: 1, afterId: mid.id }, 3],
    ] as Array<[number, FeedPosition, number]>) {
      const { statements } = await statementsOf(reader, from, null);
      expect(statements).toHaveLength(count);
      for (const [i, { statement, params }] of statements.entries()) {
        const plan = await explain(statement, params);
        const at = from.maxScore === null ? 'first page' : from.afterId === null ? 'legacy cursor' : 'keyset cursor';
        figures.push(
          `EXPLAIN feedPage statement ${i + 1} of ${count}, reader ${reader}, ${at}:\n${shown(plan.slice(0, 7))}${plan.length > 7 ? `\n  ... ${plan.length - 7} rows more, the same` : ''}`,
        );
        for (const row of plan) {
          const table = row.table;
          if (table.startsWith('<')) continue; // the union's and derived tables: at most followees x k rows
          expect({ table, type: row.type }).toEqual({ table, type: expect.stringMatching(/^(ref|range|eq_ref)$/) });
          if (table === 'f' || table === 'tb_follow') continue; // the reader's follows, by uq_follow_pair
          expect({ table, key: row.key }).toEqual({
            table,
            key: expect.stringMatching(/^(ix_blog_user_live|PRIMARY)$/),
          });
          expect({ table, extra: row.Extra ?? '' }).toEqual({
            table,
            extra: expect.not.stringMatching(/filesort|temporary/),
          });
        }
      }
    }
    const old = await explain(
      `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
       WHERE f.user_id = ? AND b.deleted_at IS NULL ORDER BY b.created_at DESC, b.id DESC LIMIT ?, ?`,
      [DEEP_READER, 0, PAGE],
    );
    figures.push(`EXPLAIN of the join it replaced, reader ${DEEP_READER}, first page:\n${shown(old)}`);
  });

  it('a page up (last/before) reads a bounded range per followee, or a one-row range per followee for the heads past 100, however far back before lies: no scan, no sort of tb_blog', async () => {
    const mid = await middle(DEEP_READER);
    const oldest = { score: BASE, id: 1 };
    const newerByJoin = async (reader: number, before: ScoredId, limit: number) => {
      const at = new Date(before.score);
      const rows = await db.select<{ id: string; created_at: Date }>(
        `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
         WHERE f.user_id = ? AND b.deleted_at IS NULL AND (b.created_at > ? OR (b.created_at = ? AND b.id > ?))
         ORDER BY b.created_at ASC, b.id ASC LIMIT ?`,
        [reader, at, at, before.id, limit],
      );
      return rows.map((row) => ({ id: Number(row.id), score: row.created_at.getTime() }));
    };
    for (const [name, reader, followees, before] of [
      ['20 x 2,500, half way down', DEEP_READER, 20, mid],
      ['20 x 2,500, from the very bottom', DEEP_READER, 20, oldest],
      ['110 followees (heads), half way down', MANY_READER, 110, mid],
      ['110 followees (heads), from the very bottom', MANY_READER, 110, oldest],
    ] as Array<[string, number, number, ScoredId]>) {
      expect(await store.feedNewer(reader, before, PAGE)).toEqual(await newerByJoin(reader, before, PAGE));
      const now = await handlerReads(() => store.feedNewer(reader, before, PAGE));
      const join = await handlerReads(() => newerByJoin(reader, before, PAGE));
      figures.push(
        `page up, ${name}: Handler_read_* ${join.total} (join) -> ${now.total}\n  now    ${JSON.stringify(now.counters)}`,
      );
      // Per followee one range of at most k entries (or one dive), then at most k ranges: not history.
      const bound = followees <= MANY_FOLLOWEES ? 3 * followees * PAGE : 3 * followees + 3 * PAGE * PAGE;
      expect({ name, now: now.total <= bound }).toEqual({ name, now: true });
      captured = [];
      capturing = true;
      try {
        await store.feedNewer(reader, before, PAGE);
      } finally {
        capturing = false;
      }
      for (const { statement, params } of captured) {
        const plan = await explain(statement, params);
        figures.push(`EXPLAIN feedNewer, ${name}:\n${shown(plan.slice(0, 5))}`);
        for (const row of plan) {
          const table = row.table;
          if (table.startsWith('<')) continue;
          expect({ table, type: row.type }).toEqual({ table, type: expect.stringMatching(/^(ref|range|eq_ref)$/) });
          if (table === 'f' || table === 'tb_follow') continue;
          expect({ table, key: row.key }).toEqual({
            table,
            key: expect.stringMatching(/^(ix_blog_user_live|PRIMARY)$/),
          });
          expect({ table, extra: row.Extra ?? '' }).toEqual({
            table,
            extra: expect.not.stringMatching(/filesort|temporary/),
          });
        }
      }
    }
  });
  /**
   * Rows a rebuild's snapshot has the storage engine hand over. Its statements run in a
   * REPEATABLE READ transaction, on that level's pool's one connection: FLUSH STATUS and SHOW
   * SESSION STATUS run there too, in transactions of their own at that level (on another pool's
   * connection they would count none of the snapshot's reads).
   */
  async function snapshotReads(reader: number, maxItems: number) {
    const read = async () => {
      const rows = await db.transaction(
        (sql) => sql.select<{ Variable_name: string; Value: string }>("SHOW SESSION STATUS LIKE 'Handler_read%'"),
        'REPEATABLE READ',
      );
      return Object.fromEntries(rows.map((row) => [row.Variable_name, Number(row.Value)]));
    };
    const flush = () => db.transaction((sql) => sql.write('FLUSH STATUS'), 'REPEATABLE READ');
    await flush();
    const idle = await read();
    await flush();
    const snapshot = await store.snapshot(reader, maxItems);
    const after = await read();
    const total = Object.keys(after).reduce((sum, name) => sum + after[name] - idle[name], 0);
    return { snapshot, total };
  }

  it('a rebuild snapshot of 800 entries reads about 800 rows of 20 long histories, not 20 x 800, and is the newest 800 of the feed', async () => {
    const maxItems = 800;
    for (const [reader, followees] of [
      [DEEP_READER, 20],
      [WIDE_READER, 40],
      [SHALLOW_READER, 20],
    ]) {
      const { snapshot, total } = await snapshotReads(reader, maxItems);
      const feed = await joinPage(db, reader, START, maxItems + 1);
      expect(snapshot.entries.map(({ id, score }) => ({ id, score }))).toEqual(feed.slice(0, maxItems));
      expect(snapshot.complete).toBe(feed.length <= maxItems);
      figures.push(
        `rebuild snapshot of ${maxItems}, reader ${reader} (${followees} followees): Handler_read_* ${total}`,
      );
      // The two rounds of ranges read about maxItems + 1 entries (their temporary table reads
      // them again), the pushed flags one row each, the followees and the version a row each:
      // one round of maxItems + 1 per followee read 20 x 801 = 16,020 entries for the deep reader.
      // At least the entries it holds were read (a count of another connection's reads is near 0).
      expect({ reader, total, bounded: total <= 5 * (maxItems + 1) + 3 * followees }).toEqual({
        reader,
        total,
        bounded: true,
      });
      expect(total).toBeGreaterThanOrEqual(snapshot.entries.length);
    }
  });
});
