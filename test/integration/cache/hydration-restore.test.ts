/**
 * The hydration cache trusts nothing a Redis restored from an older dump brought back
 * (src/cache/cache.service.ts, "Generations"): its entries are consistent with the dump and older
 * than MySQL. A like, an edit and a rename made after the dump's SAVE show on every page after
 * the restart, at once and once the new Redis generation is confirmed; and the cache fills
 * again in the new generation, so that warm pages run no SQL statement. The rule itself, on a
 * cache whose generation the test sets: an entry is trusted in its own generation only, not
 * while none is confirmed, and not by a read whose generation changed before its answer.
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import {
  countStatements,
  currentGeneration,
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
import { HydrationCache } from '../../../src/cache/cache.service';
import { CacheStore } from '../../../src/cache/cache.store';
import { EDIT, LIKE, RENAME } from './cache.documents';

const PAGE = `query { followFeed(first: 10) {
  edges { node { id title likeCount isLiked author { id nickName } } } } }`;
const LIKERS = 'query($b: ID!) { node(id: $b) { ... on Blog { likers(first: 5) { edges { node { id } } } } } }';

const dbId = (globalId: string) => Number(fromGlobalId(globalId).id);

let redis: PrivateRedis;
let app: TestApp;

beforeAll(async () => {
  redis = new PrivateRedis(await freePort(), 'rdb');
  await redis.start();
  app = await startTestApp('hydration_restore', {
    env: { REDIS_URL: redis.url, FEED_MODEL: 'push', NODE_ENV: 'production' },
  });
});

afterAll(async () => {
  await app?.close();
  await redis?.stop();
});

/** What MySQL says the viewer's page shows of these blogs. */
async function truth(viewer: TestUser, ids: readonly string[]) {
  const rows = await app.query<any>(
    `SELECT b.id, b.title, u.id AS author_id, u.nick_name,
       (SELECT COUNT(*) FROM tb_blog_like l WHERE l.blog_id = b.id) AS likes,
       EXISTS(SELECT 1 FROM tb_blog_like l WHERE l.blog_id = b.id AND l.user_id = ?) AS mine
     FROM tb_blog b JOIN tb_user u ON u.id = b.user_id WHERE b.id IN (?)`,
    [dbId(viewer.id), ids.map(dbId)],
  );
  const byId = new Map(rows.map((row: any) => [Number(row.id), row]));
  return ids.map((id) => {
    const row = byId.get(dbId(id));
    return {
      id,
      title: row.title,
      likeCount: Number(row.likes),
      isLiked: Number(row.mine) === 1,
      author: { id: expect.any(String), nickName: row.nick_name },
    };
  });
}

async function page(viewer: TestUser): Promise<{ nodes: any[]; sql: number }> {
  const { result, statements } = await countStatements(app, async () => ok(await app.gql(PAGE, {}, viewer.token)));
  return { nodes: result.followFeed.edges.map((edge: any) => edge.node), sql: statements };
}

async function expectTruthful(viewer: TestUser): Promise<any[]> {
  const { nodes } = await page(viewer);
  expect(nodes).toEqual(
    await truth(
      viewer,
      nodes.map((node) => node.id),
    ),
  );
  return nodes;
}

async function likers(blogId: string): Promise<string[]> {
  return ok(await app.gql(LIKERS, { b: blogId })).node.likers.edges.map((edge: any) => edge.node.id);
}

it('shows the likes, edits and renames made after the dump, at once and after the new generation, and fills again', async () => {
  const author = await signUp(app, 'author');
  const viewer = await signUp(app, 'viewer');
  const fan = await signUp(app, 'fan');
  await follow(app, viewer, author);
  await publish(app, author, 'first', 'text');
  await publish(app, author, 'second', 'text');
  await app.services.fanout?.idle();
  const [second, first] = await expectTruthful(viewer);
  ok(await app.gql(LIKE, { b: first.id, l: true }, viewer.token));
  // Warm: every blog, its like set and its author are in the cache.
  await expectTruthful(viewer);
  expect((await page(viewer)).sql).toBe(0);
  expect(await likers(first.id)).toEqual([viewer.id]);
  await redis.client().save();

  // After the SAVE: a like, an unlike, an edit and a rename, each applied to the cache as usual.
  ok(await app.gql(LIKE, { b: first.id, l: true }, fan.token));
  ok(await app.gql(LIKE, { b: first.id, l: false }, viewer.token));
  ok(await app.gql(LIKE, { b: second.id, l: true }, viewer.token));
  ok(await app.gql(EDIT, { i: { blogId: second.id, title: 'second, edited' } }, author.token));
  ok(await app.gql(RENAME, { i: { nickName: 'author2' } }, author.token));
  const before = await currentGeneration(app);
  await expectTruthful(viewer);
  await expectTruthful(viewer);

  // Killed, and started again on its folder: the entries of the SAVE are back.
  await redis.stop();
  await redis.start();
  expect(await redis.client().exists(app.keys.cachedBlog(dbId(first.id)))).toBe(1);
  const atOnce = await expectTruthful(viewer);
  expect(atOnce.find((node) => node.id === first.id)).toMatchObject({ likeCount: 1, isLiked: false });
  expect(atOnce.find((node) => node.id === second.id)).toMatchObject({
    title: 'second, edited',
    likeCount: 1,
    isLiked: true,
    author: { nickName: 'author2' },
  });
  expect(await likers(first.id)).toEqual([fan.id]);
  await waitFor('the new generation', async () => (await currentGeneration(app)) > before);
  for (let round = 0; round < 3; round += 1) await expectTruthful(viewer);
  expect(await likers(first.id)).toEqual([fan.id]);
  // Filled again in the new generation: a warm page runs no statement, and is still true.
  await app.services.feed.idle();
  await waitFor('a warm page', async () => (await page(viewer)).sql === 0);
  await expectTruthful(viewer);
});

it('trusts an entry in the generation it was filled in only, none while no generation is confirmed, and no read whose generation changed before its answer', async () => {
  const author = await signUp(app, 'rule-author');
  const id = dbId(await publish(app, author, 'stamped', 'text'));
  let generation: number | null = 7;
  const cache = new HydrationCache({
    redis: app.redis,
    keys: app.keys,
    store: new CacheStore(app.db),
    warn: () => {},
    generation: () => generation,
  });
  await cache.settle();
  const [row] = await new BlogStore(app.db).rowsForCache([id]);
  await app.redis.del(app.keys.cachedBlog(id), app.keys.cachedLikes(id));
  const miss = (await cache.readBlogs(null, [id])).get(id)!;
  expect(miss.kind).toBe('miss');
  expect(await cache.fillBlog(id, (miss as { lease: string }).lease, row, [])).toBe(true);
  expect((await cache.readBlogs(null, [id])).get(id)!.kind).toBe('hit');
  expect(await cache.firstLikers(id, 5)).toEqual([]);

  // Another generation (a restored server): the entry is dropped, the reader misses.
  generation = 8;
  expect(await cache.firstLikers(id, 5)).toBeNull();
  expect((await cache.readBlogs(null, [id])).get(id)!.kind).toBe('miss');
  expect(await app.redis.hexists(app.keys.cachedBlog(id), 'd')).toBe(0);

  // None confirmed (a reconnect, not yet checked): the cache is not used.
  generation = null;
  expect(cache.usable()).toBe(false);

  // Filled in 8, then the generation moves while a read is on its way: its hit is not trusted.
  generation = 8;
  const lease = (await cache.readBlogs(null, [id])).get(id)! as { lease: string };
  expect(await cache.fillBlog(id, lease.lease, row, [])).toBe(true);
  const reads = cache.readBlogs(null, [id]);
  generation = 9;
  expect((await reads).get(id)!.kind).toBe('busy');
  cache.close();
});
