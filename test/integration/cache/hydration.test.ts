/**
 * Hydrated pages (issue 22, part 4; src/cache/cache.service.ts): a warm followFeed page runs no
 * SQL statement, and every page equals what MySQL holds, across two API processes sharing MySQL
 * and a Redis of the test's own (so that it may be flushed and frozen):
 * - edits, deletes, likes and renames made on one process show on the other's next page;
 * - a fill that read the row before a write never stores it after (the stale set after delete),
 *   for an edit, a delete, a like, and Redis losing everything in between;
 * - a like in flight (marked, not committed) sends readers to MySQL, then the set has it;
 * - concurrent likes and unlikes interleaved with fills leave exact counts and flags;
 * - Redis frozen (the breaker): pages from MySQL, writes recorded as debts, and after Redis
 *   answers again no page serves a copy from before.
 */
import { fromGlobalId, toGlobalId } from '../../../src/kernel/global-id';
import {
  countStatements,
  feedTruth,
  follow,
  ok,
  publish,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';
import { freePort, PrivateRedis, waitFor } from '../../support/processes';
import { BlogStore } from '../../../src/blog/blog.store';
import type { HydrationCache } from '../../../src/cache/cache.service';
import { DELETE, EDIT, LIKE, RENAME } from './cache.documents';

const PAGE = `query($first: Int) { followFeed(first: $first) {
  edges { node { id title content images editedAt likeCount isLiked author { id nickName icon } } } } }`;

const dbId = (globalId: string) => Number(fromGlobalId(globalId).id);

let redis: PrivateRedis;
let writer: TestApp;
let reader: TestApp;
let viewer: TestUser;
let authors: TestUser[];
let fans: TestUser[];

beforeAll(async () => {
  redis = new PrivateRedis(await freePort());
  await redis.start();
  writer = await startTestApp('hydration', {
    env: { REDIS_URL: redis.url, FEED_MODEL: 'push', REDIS_COMMAND_TIMEOUT_MS: '300' },
  });
  // The reading process as users run it; no fan-out workers: its statements are the pages' alone.
  reader = await startTestApp('hydration', {
    shareWith: writer,
    env: { NODE_ENV: 'production', FEED_MODEL: 'push', FANOUT_WORKERS: '0', REDIS_COMMAND_TIMEOUT_MS: '300' },
  });
  viewer = await signUp(writer, 'viewer');
  authors = [await signUp(writer, 'ann'), await signUp(writer, 'ben')];
  fans = [];
  for (let i = 0; i < 6; i += 1) fans.push(await signUp(writer, `fan${i}`));
  for (const author of authors) await follow(writer, viewer, author);
  for (let i = 0; i < 4; i += 1)
    for (const author of authors) await publish(writer, author, `${author.nickName} ${i}`, `text ${i}`);
  await settle();
});

afterAll(async () => {
  redis.resume();
  await reader?.close();
  await writer?.close();
  await redis?.stop();
});

async function settle(): Promise<void> {
  // Also waits for finished tasks to leave the watermark: until then a page of their authors'
  // readers reads their range from MySQL (a CI run failed "no statement" on it).
  await writer.services.fanout?.idle();
  await writer.services.feed.idle();
  await reader.services.feed.idle();
}

function cacheOf(app: TestApp): HydrationCache {
  const cache = app.services.hydration;
  if (!cache) throw new Error('no hydration cache (embedded mode?)');
  return cache;
}

/** A query on the reading process, and the SQL statements it ran there. */
async function measured(query: string, variables: Record<string, unknown>, who?: TestUser) {
  const { result, statements } = await countStatements(reader, async () =>
    ok(await reader.gql(query, variables, who?.token)),
  );
  return { data: result, sql: statements };
}

/** The viewer's first page on the reading process, and the SQL statements it ran there. */
async function page(first = 20, who: TestUser = viewer): Promise<{ nodes: any[]; sql: number }> {
  const { data, sql } = await measured(PAGE, { first }, who);
  return { nodes: data.followFeed.edges.map((edge: any) => edge.node), sql };
}

/** What MySQL says each blog of a page shows to `who`. */
async function truth(ids: readonly string[], who: TestUser = viewer): Promise<any[]> {
  if (ids.length === 0) return [];
  const rows = await writer.query<any>(
    `SELECT b.id, b.title, b.content, b.images, b.edited_at, u.id AS author_id, u.nick_name, u.icon,
       (SELECT COUNT(*) FROM tb_blog_like l WHERE l.blog_id = b.id) AS likes, b.liked,
       EXISTS(SELECT 1 FROM tb_blog_like l WHERE l.blog_id = b.id AND l.user_id = ?) AS mine
     FROM tb_blog b JOIN tb_user u ON u.id = b.user_id WHERE b.id IN (?)`,
    [dbId(who.id), ids.map(dbId)],
  );
  const byId = new Map(rows.map((row: any) => [toGlobalId('Blog', Number(row.id)), row]));
  return ids.map((id) => {
    const row = byId.get(id);
    // The counter and the rows agree (the like transaction keeps them so).
    expect(Number(row.liked)).toBe(Number(row.likes));
    return {
      id,
      title: row.title,
      content: row.content,
      images: JSON.parse(row.images),
      editedAt: row.edited_at === null ? null : new Date(row.edited_at).toISOString(),
      likeCount: Number(row.likes),
      isLiked: Number(row.mine) === 1,
      author: { id: toGlobalId('User', Number(row.author_id)), nickName: row.nick_name, icon: row.icon },
    };
  });
}

/** The page equals the truth: the live blogs of the viewer's feed, each as MySQL holds it. */
async function expectTruthful(nodes: any[], who: TestUser = viewer): Promise<void> {
  const ids = nodes.map((node) => node.id);
  expect(ids).toEqual((await feedTruth(writer, dbId(who.id))).slice(0, ids.length));
  expect(nodes).toEqual(await truth(ids, who));
}

/** A warm page: the first fills what the cache lacks, the next runs no SQL statement. */
async function warmPage(first = 20): Promise<any[]> {
  await page(first);
  await reader.services.feed.idle();
  await page(first);
  const warm = await page(first);
  expect(warm.sql).toBe(0);
  return warm.nodes;
}

it('runs no SQL statement for a warm page, and shows what MySQL holds', async () => {
  ok(await writer.gql(LIKE, { b: (await page()).nodes[0].id, l: true }, viewer.token));
  ok(await writer.gql(LIKE, { b: (await page()).nodes[1].id, l: true }, fans[0].token));
  const nodes = await warmPage();
  expect(nodes).toHaveLength(8);
  await expectTruthful(nodes);
  expect(nodes[0]).toMatchObject({ likeCount: 1, isLiked: true });
  expect(nodes[1]).toMatchObject({ likeCount: 1, isLiked: false });
});

it('shows an edit, a like, an unlike, a rename and a delete made on the other process on the next page', async () => {
  const [first, second, third] = await warmPage();
  ok(
    await writer.gql(
      EDIT,
      { i: { blogId: first.id, title: 'edited title', images: ['https://img.example/e.png'] } },
      authors.find((a) => a.id === first.author.id)!.token,
    ),
  );
  ok(await writer.gql(LIKE, { b: second.id, l: true }, viewer.token));
  ok(await writer.gql(LIKE, { b: first.id, l: false }, viewer.token));
  ok(await writer.gql(RENAME, { i: { nickName: 'Ann2', icon: 'https://img.example/ann.png' } }, authors[0].token));
  ok(await writer.gql(DELETE, { b: third.id }, authors.find((a) => a.id === third.author.id)!.token));
  const after = await page();
  expect(after.nodes.map((node) => node.id)).not.toContain(third.id);
  await expectTruthful(after.nodes);
  expect(after.nodes.find((node) => node.id === first.id)).toMatchObject({
    title: 'edited title',
    isLiked: false,
    likeCount: 0,
  });
  expect(after.nodes.find((node) => node.id === second.id)).toMatchObject({ isLiked: true, likeCount: 2 });
  expect(
    after.nodes.filter((node) => node.author.id === authors[0].id).every((node) => node.author.nickName === 'Ann2'),
  ).toBe(true);
  // And warm again, still true.
  await expectTruthful(await warmPage());
});

describe('a fill that read MySQL before a write never stores it after', () => {
  const store = () => new BlogStore(reader.db);

  /** A reader's miss on a blog dropped from the cache: its lease and the row and likes it reads. */
  async function missAndRead(blogId: string) {
    const cache = cacheOf(reader);
    const id = dbId(blogId);
    await reader.redis.del(reader.keys.cachedBlog(id), reader.keys.cachedLikes(id));
    const read = (await cache.readBlogs(dbId(viewer.id), [id])).get(id)!;
    expect(read.kind).toBe('miss');
    const [row] = await store().rowsForCache([id]);
    const likes = (await store().likesForCache([id])).map((like) => ({ userId: like.userId, at: like.at }));
    return { cache, id, lease: (read as { lease: string }).lease, row, likes };
  }

  it('an edit', async () => {
    const blog = (await warmPage())[0];
    const fill = await missAndRead(blog.id);
    ok(
      await writer.gql(
        EDIT,
        { i: { blogId: blog.id, title: 'edited during a fill' } },
        authors.find((a) => a.id === blog.author.id)!.token,
      ),
    );
    expect(await fill.cache.fillBlog(fill.id, fill.lease, fill.row, fill.likes)).toBe(false);
    const nodes = await warmPage();
    expect(nodes[0].title).toBe('edited during a fill');
    await expectTruthful(nodes);
  });

  it('a delete', async () => {
    const blog = (await warmPage())[1];
    const fill = await missAndRead(blog.id);
    ok(await writer.gql(DELETE, { b: blog.id }, authors.find((a) => a.id === blog.author.id)!.token));
    expect(await fill.cache.fillBlog(fill.id, fill.lease, fill.row, fill.likes)).toBe(false);
    const nodes = (await page()).nodes;
    expect(nodes.map((node) => node.id)).not.toContain(blog.id);
    await expectTruthful(nodes);
  });

  it('a like', async () => {
    const blog = (await warmPage())[0];
    const fill = await missAndRead(blog.id);
    ok(await writer.gql(LIKE, { b: blog.id, l: true }, fans[1].token));
    expect(await fill.cache.fillBlog(fill.id, fill.lease, fill.row, fill.likes)).toBe(false);
    const nodes = await warmPage();
    expect(nodes[0].likeCount).toBe(blog.likeCount + 1);
    await expectTruthful(nodes);
  });

  it('Redis losing everything (FLUSHALL) in between', async () => {
    const blog = (await warmPage())[0];
    const fill = await missAndRead(blog.id);
    await redis.client().flushall();
    expect(await fill.cache.fillBlog(fill.id, fill.lease, fill.row, fill.likes)).toBe(false);
    // Pages stay true while the inboxes and the cache refill.
    await expectTruthful((await page()).nodes);
    await settle();
    await waitFor(
      'the inboxes to be trusted again',
      async () => (await page()).sql <= 2 && (await page()).sql === 0,
      30_000,
    );
    await expectTruthful((await page()).nodes);
  });
});

it('sends pages to MySQL while a like is in flight, and has it once it commits', async () => {
  const blog = (await warmPage())[0];
  const id = dbId(blog.id);
  const liker = dbId(viewer.id);
  const cache = cacheOf(writer);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let marked!: () => void;
  const markedYet = new Promise<void>((resolve) => (marked = resolve));
  let token: string | null = null;
  const at = new Date();
  // The like service's transaction, held open after its mark.
  const transaction = writer.db.transaction(async (sql) => {
    const inserted = await sql.write(
      'INSERT IGNORE INTO tb_blog_like (blog_id, user_id, created_at) VALUES (?, ?, ?)',
      [id, liker, at],
    );
    expect(inserted.affectedRows).toBe(1);
    await sql.write('UPDATE tb_blog SET liked = liked + 1 WHERE id = ?', [id]);
    token = await cache.likeChanging(sql, id, liker, true, at);
    marked();
    await gate;
  });
  await markedYet;
  expect(token).not.toBeNull();
  // In flight: the page reads MySQL, which has not the like yet.
  const during = await page();
  expect(during.nodes[0]).toMatchObject({ id: blog.id, likeCount: blog.likeCount, isLiked: blog.isLiked });
  expect(during.sql).toBeGreaterThan(0);
  release();
  await transaction;
  await cache.likeChanged(id, token, true);
  const nodes = await warmPage();
  expect(nodes[0]).toMatchObject({ id: blog.id, likeCount: blog.likeCount + 1, isLiked: true });
  await expectTruthful(nodes);
});

it('keeps exact counts and flags under concurrent likes, unlikes and fills on both processes', async () => {
  const nodes = await warmPage();
  const targets = nodes.slice(0, 3).map((node) => node.id);
  const likers = [viewer, ...fans];
  const operations: Array<Promise<unknown>> = [];
  for (let round = 0; round < 4; round += 1) {
    for (const [i, liker] of likers.entries()) {
      for (const target of targets) {
        const app = (i + round) % 2 === 0 ? writer : reader;
        operations.push(app.gql(LIKE, { b: target, l: (i + round) % 3 !== 0 }, liker.token).then(ok));
      }
    }
    // Readers fill meanwhile, some after their entry was dropped.
    for (const target of targets)
      operations.push(reader.redis.del(reader.keys.cachedBlog(dbId(target)), reader.keys.cachedLikes(dbId(target))));
    for (const who of [viewer, fans[0]]) operations.push(reader.gql(PAGE, { first: 20 }, who.token).then(ok));
  }
  await Promise.all(operations);
  await expectTruthful(await warmPage());
  // Every liker's flags are right too (fans follow nobody: ask through the viewer's page ids by blog).
  for (const liker of likers.slice(1, 3)) {
    for (const target of targets) {
      const data = ok(
        await reader.gql('query($id: ID!) { blog(id: $id) { likeCount isLiked } }', { id: target }, liker.token),
      );
      const [expected] = await truth([target], liker);
      expect(data.blog).toEqual({ likeCount: expected.likeCount, isLiked: expected.isLiked });
    }
  }
});

it('serves pages from MySQL while Redis hangs, records the writes it missed, and serves nothing stale after', async () => {
  const [first, second] = await warmPage();
  redis.pause();
  try {
    // The first page meets the hang (the command timeout opens the breaker), the next ones an open breaker.
    await expectTruthful((await page()).nodes);
    ok(
      await writer.gql(
        EDIT,
        { i: { blogId: first.id, content: 'edited while Redis hung' } },
        authors.find((a) => a.id === first.author.id)!.token,
      ),
    );
    ok(await writer.gql(LIKE, { b: second.id, l: !second.isLiked }, viewer.token));
    ok(await writer.gql(RENAME, { i: { nickName: 'Ben2' } }, authors[1].token));
    const during = await page();
    await expectTruthful(during.nodes);
    expect(during.nodes.find((node) => node.id === first.id).content).toBe('edited while Redis hung');
    const [{ debts }] = await writer.query<{ debts: number }>('SELECT COUNT(*) AS debts FROM tb_cache_debt');
    expect(Number(debts)).toBeGreaterThanOrEqual(3);
  } finally {
    redis.resume();
  }
  // Redis answers again with the copies from before the hang still in it: the debts drop them
  // before any page reads the cache.
  for (let i = 0; i < 20; i += 1) {
    await expectTruthful((await page()).nodes);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await waitFor('pages from the cache again', async () => (await page()).sql === 0, 30_000);
  const nodes = (await page()).nodes;
  await expectTruthful(nodes);
  expect(nodes.find((node) => node.id === first.id).content).toBe('edited while Redis hung');
  expect(nodes.find((node) => node.id === second.id).isLiked).toBe(!second.isLiked);
  const [{ debts }] = await writer.query<{ debts: number }>('SELECT COUNT(*) AS debts FROM tb_cache_debt');
  expect(Number(debts)).toBe(0);
});

it("serves an anonymous Blog.likers' first page from the like set, in MySQL's order, and the next pages from MySQL", async () => {
  const nodes = await warmPage();
  const blog = nodes.find((node) => node.likeCount >= 3);
  expect(blog).toBeDefined();
  const rows = await writer.query<{ user_id: string }>(
    'SELECT user_id FROM tb_blog_like WHERE blog_id = ? ORDER BY created_at, user_id',
    [dbId(blog.id)],
  );
  const expected = rows.map((row) => toGlobalId('User', Number(row.user_id)));
  const LIKERS = `query($id: ID!, $after: String) { blog(id: $id) { likers(first: 2, after: $after) {
    edges { node { id } } pageInfo { hasNextPage endCursor } } } }`;
  const ids: string[] = [];
  let after: string | null = null;
  for (let pageNumber = 0; pageNumber < 20; pageNumber += 1) {
    // Anonymous: a signed-in viewer's likers come from MySQL, where the viewer's blocks hide some.
    const { result: data, statements } = await countStatements(reader, async () =>
      ok<any>(await reader.gql(LIKERS, { id: blog.id, after })),
    );
    // The first page: the blog and the likers' users (the likers themselves come from the like set).
    if (after === null) expect(statements).toBe(2);
    ids.push(...data.blog.likers.edges.map((edge: any) => edge.node.id));
    if (!data.blog.likers.pageInfo.hasNextPage) break;
    after = data.blog.likers.pageInfo.endCursor;
  }
  expect(ids).toEqual(expected);
});

it("hydrates a user's own page of blogs (User.blogs) as a feed page: warm, its blogs cost one statement (their ids), signed in or not, and it shows what MySQL holds", async () => {
  const author = authors[1];
  const PROFILE = `query($id: ID!) { user(id: $id) { blogs(first: 10) {
    edges { node { id title content images editedAt likeCount isLiked author { id nickName icon } } } } } }`;
  /** The author's page as `who` (undefined: anonymous) sees it, and the statements it ran. */
  const profile = async (who?: TestUser): Promise<{ nodes: any[]; sql: number }> => {
    const { data, sql } = await measured(PROFILE, { id: author.id }, who);
    return { nodes: data.user.blogs.edges.map((edge: any) => edge.node), sql };
  };
  /** The author's live blogs, newest first, each as MySQL shows it to `who` (anonymous: liking nothing). */
  const expected = async (who: TestUser | undefined) => {
    const rows = await writer.query<{ id: string }>(
      'SELECT id FROM tb_blog WHERE user_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 10',
      [dbId(author.id)],
    );
    const ids = rows.map((row) => toGlobalId('Blog', Number(row.id)));
    const shown = await truth(ids, who ?? viewer);
    return who ? shown : shown.map((node) => ({ ...node, isLiked: false }));
  };
  ok(await writer.gql(LIKE, { b: (await profile(viewer)).nodes[0].id, l: true }, viewer.token));
  for (const who of [viewer, fans[1], undefined]) {
    await profile(who);
    const warm = await profile(who);
    // The user row (the root field) and the page's ids: no statement for the blogs, likes or authors.
    expect(warm.sql).toBe(2);
    expect(warm.nodes.length).toBeGreaterThan(0);
    expect(warm.nodes).toEqual(await expected(who));
  }
  const [first, second] = (await profile(viewer)).nodes;
  ok(await writer.gql(EDIT, { i: { blogId: first.id, content: 'edited for the profile' } }, author.token));
  ok(await writer.gql(LIKE, { b: second.id, l: !second.isLiked }, viewer.token));
  ok(await writer.gql(DELETE, { b: second.id }, author.token));
  const after = await profile(viewer);
  expect(after.nodes.map((node) => node.id)).not.toContain(second.id);
  expect(after.nodes.find((node) => node.id === first.id).content).toBe('edited for the profile');
  expect(after.nodes).toEqual(await expected(viewer));
});

describe('a new blog is stored in the cache at its publish', () => {
  it('so the first page that shows it reads no statement for it', async () => {
    await warmPage();
    // The publishing process stores only into a cache it trusts (its debts settled since the
    // Redis hang above), as its pages read only such a cache.
    await cacheOf(writer).settle();
    const blogId = await publish(writer, authors[0], 'stored at its publish', 'no fill needed');
    // Stored when the publish returns, before its fan-out: a reader who opens it at once (a link,
    // a live event) finds it in the cache too.
    expect((await cacheOf(reader).readBlogs(null, [dbId(blogId)])).get(dbId(blogId))!.kind).toBe('hit');
    await settle();
    const first = await page();
    expect(first.nodes[0].id).toBe(blogId);
    expect(first.sql).toBe(0);
    await expectTruthful(first.nodes);
  });

  it.each(['like', 'edit', 'delete'] as const)(
    'but not over a %s that committed between the publish and its store',
    async (write) => {
      const author = authors[1];
      const blogId = await publish(writer, author, `raced by a ${write}`, 'before the write');
      await settle();
      const id = dbId(blogId);
      const cache = cacheOf(writer);
      // Back to the moment inside the publish's transaction: no entry yet, the lease taken.
      const [inserted] = await new BlogStore(writer.db).rowsForCache([id]);
      await writer.redis.del(writer.keys.cachedBlog(id), writer.keys.cachedLikes(id));
      const lease = await cache.newBlogLease(id);
      expect(lease).not.toBeNull();
      if (write === 'like') ok(await writer.gql(LIKE, { b: blogId, l: true }, fans[2].token));
      if (write === 'edit') ok(await writer.gql(EDIT, { i: { blogId, content: 'after the write' } }, author.token));
      if (write === 'delete') ok(await writer.gql(DELETE, { b: blogId }, author.token));
      await cache.storeNewBlog(inserted, lease!);
      // The write took the lease away: the row from before it was not stored.
      expect((await cache.readBlogs(null, [id])).get(id)!.kind).toBe('miss');
      const nodes = (await page()).nodes;
      if (write === 'delete') expect(nodes.map((node) => node.id)).not.toContain(blogId);
      else
        expect(nodes.find((node) => node.id === blogId)).toMatchObject(
          write === 'like' ? { likeCount: 1 } : { content: 'after the write' },
        );
      await expectTruthful(nodes);
    },
  );
});
