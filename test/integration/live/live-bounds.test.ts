/**
 * What a live subscription may hold, whatever it is sent and however long it runs: its memory
 * does not grow with the events it has shown nor with its viewer's follow changes, and the author
 * channels it opens (each with its `author:live:{id}` mark in Redis) are all closed when it ends,
 * however its relists, follows and closes interleave.
 *
 * On MySQL + Redis in the two models that listen on author channels (pull and hybrid), and in the
 * embedded mode (MemoryLiveBus, SQLite). The subscriptions are LiveFeed's own iterators, read as
 * graphql-js reads them (one next() at a time); memory is the heap after a full GC
 * (--expose-gc is turned on for this file).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LIVE_OPEN_BATCH, type LiveBlog } from '../../../src/feed/feed.live';
import { FeedStore } from '../../../src/feed/feed.store';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { withTimeout } from '../../../src/kernel/timeout';
import { RedisKeys } from '../../../src/redis/keys';
import { isCluster, RedisClient } from '../../../src/redis/redis.client';
import { EMBEDDED, ok, signUp, startTestApp, TestApp } from '../../support/harness';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Followees of each reader: an ordinary heavy reader. */
const FOLLOWEES = 300;
/** Followees of a reader near MAX_FOLLOWING (5,000), kept smaller for the suite's time: eight batches of opens. */
const MANY_FOLLOWEES = 8 * LIVE_OPEN_BATCH;
const MB = 1024 * 1024;

type Feed = AsyncIterableIterator<Pick<LiveBlog, 'id' | 'score'>>;

/** The heap in use after a full collection (twice: weak references and finalizers free more the second time). */
async function heapAfterGc(): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Redis keys of a pattern, over every master of a cluster. */
async function keysMatching(redis: RedisClient, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}

/** Pub/sub channels of a pattern that any connection is subscribed to (sharded ones on a cluster). */
async function channelsMatching(redis: RedisClient, pattern: string): Promise<string[]> {
  if (!isCluster(redis)) return (await redis.pubsub('CHANNELS', pattern)) as string[];
  const found: string[] = [];
  for (const node of redis.nodes('master')) found.push(...((await node.pubsub('SHARDCHANNELS', pattern)) as string[]));
  return found;
}

describe.each(EMBEDDED ? ['pull'] : ['pull', 'hybrid'])('live subscriptions, FEED_MODEL=%s', (model) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp(`live_bounds_${model}`, { env: EMBEDDED ? {} : { FEED_MODEL: model } });
  });
  afterAll(() => app.close());

  /** `count` authors inserted in bulk, and readers who follow all of them. */
  async function followedAuthors(count: number, readers: number[]): Promise<number[]> {
    const authors = await newUsers(count);
    await app.db.insertRows(
      'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
      readers.flatMap((reader) => authors.map((author) => [reader, author, new Date()])),
    );
    return authors;
  }

  /** `count` users inserted in bulk (past every id signUp has given, so the two never collide); their ids. */
  async function newUsers(count: number): Promise<number[]> {
    const [{ last }] = await app.query<{ last: number | string | null }>('SELECT MAX(id) AS last FROM tb_user');
    const ids = Array.from({ length: count }, (_, i) => Number(last ?? 0) + 1 + i);
    await app.db.insertRows(
      'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at) VALUES ?',
      ids.map((id) => [id, `u${id}`, `u${id}`, 'not-a-hash', new Date()]),
    );
    return ids;
  }

  /** `count` blogs of one author, inserted in bulk; their ids, oldest first. */
  async function blogsOf(authorId: number, count: number): Promise<LiveBlog[]> {
    const at = Date.now() - 60_000;
    const created = Array.from({ length: count }, (_, i) => new Date(at + i));
    await app.db.insertRows(
      'INSERT INTO tb_blog (user_id, title, content, images, created_at) VALUES ?',
      created.map((date, i) => [authorId, `b${i}`, 'live', '[]', date]),
    );
    const rows = await app.query<{ id: string; created_at: Date | string }>(
      'SELECT id, created_at FROM tb_blog WHERE user_id = ? ORDER BY id',
      [authorId],
    );
    return rows.map((row) => ({ id: Number(row.id), score: new Date(row.created_at).getTime(), authorId }));
  }

  /** Publishes the blogs on their author's channel, 50 at a time, and reads each batch from the feed. */
  async function show(feed: Feed, blogs: LiveBlog[]): Promise<void> {
    for (let start = 0; start < blogs.length; start += 50) {
      const batch = blogs.slice(start, start + 50);
      for (const blog of batch) await app.services.liveFeed.published(blog);
      for (const blog of batch) {
        const next = await withTimeout(feed.next(), 10_000, `the live event of blog ${blog.id}`);
        expect(next.value?.id).toBe(blog.id);
      }
    }
  }

  it(`holds no more memory after 2,000 more events than before them (${FOLLOWEES} followees, one of them posting)`, async () => {
    const [reader] = await newUsers(1);
    const [poster] = await followedAuthors(FOLLOWEES, [reader]);
    const blogs = await blogsOf(poster, 3100);
    const feed = await app.services.liveFeed.subscribe(reader);
    try {
      // Past the blogs a subscription remembers having shown (1000), so that memory is full.
      await show(feed, blogs.slice(0, 1100));
      const before = await heapAfterGc();
      await show(feed, blogs.slice(1100));
      const growth = (await heapAfterGc()) - before;
      process.stdout.write(
        `live-bounds (${model}): heap growth over 2,000 events shown, ${FOLLOWEES} followees: ${(growth / MB).toFixed(2)} MB\n`,
      );
      // A reaction left per silent followee per event would be about 2,000 x 299 x 96 B = 55 MB.
      expect(growth).toBeLessThan(4 * MB);
    } finally {
      await feed.return!();
    }
  });

  it(`holds no more memory after 100 follow changes than before them (10 subscriptions, ${FOLLOWEES} followees)`, async () => {
    const [reader, toggled] = await signUpTwo('toggler', 'toggled');
    const readerId = fromGlobalId(reader.id).id;
    const [poster] = await followedAuthors(FOLLOWEES, [readerId]);
    const [blog] = await blogsOf(poster, 1);
    const feeds = await Promise.all(Array.from({ length: 10 }, () => app.services.liveFeed.subscribe(readerId)));
    // Each subscription waits for its next event, as graphql-js's does.
    const waiting = feeds.map((feed) => feed.next());
    try {
      await settle();
      const before = await heapAfterGc();
      for (let i = 0; i < 50; i += 1) {
        ok(
          await app.gql(
            'mutation($u: ID!) { follow(userId: $u, follow: true) { id } }',
            { u: toggled.id },
            reader.token,
          ),
        );
        ok(
          await app.gql(
            'mutation($u: ID!) { follow(userId: $u, follow: false) { id } }',
            { u: toggled.id },
            reader.token,
          ),
        );
      }
      // Every subscription has taken in the follow changes once it shows a blog published after them.
      await app.services.liveFeed.published(blog);
      for (const next of waiting)
        expect((await withTimeout(next, 10_000, 'the blog published after the follow changes')).value?.id).toBe(
          blog.id,
        );
      await settle();
      const growth = (await heapAfterGc()) - before;
      process.stdout.write(
        `live-bounds (${model}): heap growth over 100 follow changes, 10 subscriptions, ${FOLLOWEES} followees: ${(growth / MB).toFixed(2)} MB\n`,
      );
      // A reaction left per followee per change per subscription would be about 100 x 10 x 300 x 190 B = 54 MB.
      expect(growth).toBeLessThan(4 * MB);
    } finally {
      await Promise.all(feeds.map((feed) => feed.return!()));
    }
  });

  it('closes every author channel and mark it opened, under concurrent follows, relists, opens and closes', async () => {
    const reader = await signUp(app, 'busy');
    const readerId = fromGlobalId(reader.id).id;
    await followedAuthors(20, [readerId]);
    const newcomers = await Promise.all(Array.from({ length: 12 }, (_, i) => signUp(app, `newcomer${i}`)));
    const feeds: Feed[] = await Promise.all(Array.from({ length: 4 }, () => app.services.liveFeed.subscribe(readerId)));
    // Readers as graphql-js runs them: each waits on its next event (a `follows` event relists it).
    const reading = feeds.map(async (feed) => {
      for await (const _ of feed);
    });
    const closed: Feed[] = [];
    await Promise.all([
      // Follows through the API: each relists this process's subscriptions, and tells every
      // subscription of the reader (here too) on the reader's channel.
      ...newcomers.map((author) =>
        app
          .gql('mutation($u: ID!) { follow(userId: $u, follow: true) { id } }', { u: author.id }, reader.token)
          .then(ok),
      ),
      // Relists of the same follow state at once: both find the same authors not yet listened to.
      app.services.liveFeed.followsChanged(readerId),
      app.services.liveFeed.followsChanged(readerId),
      // Subscriptions that open and close while the follows run.
      ...Array.from({ length: 4 }, async () => {
        const feed = await app.services.liveFeed.subscribe(readerId);
        await app.services.liveFeed.followsChanged(readerId);
        closed.push(feed);
        await feed.return!();
      }),
      feeds[0].return!(),
    ]);
    await Promise.all(feeds.map((feed) => feed.return!()));
    await Promise.all(reading);
    expect(closed).toHaveLength(4);

    const buses = app.services.liveBuses;
    expect({ readers: buses.readers.held(), authors: buses.authors.held() }).toEqual({ readers: [], authors: [] });
    if (!EMBEDDED) {
      const readers = new RedisKeys(app.config.redisKeyPrefix);
      const authors = new RedisKeys(`${app.config.redisKeyPrefix}author:`);
      expect({
        marks: await keysMatching(app.redis, `${readers.live(0).replace('{0}', '*')}`),
        authorMarks: await keysMatching(app.redis, `${authors.live(0).replace('{0}', '*')}`),
        channels: await channelsMatching(app.redis, `${readers.liveChannel(0).replace('{0}', '*')}`),
        authorChannels: await channelsMatching(app.redis, `${authors.liveChannel(0).replace('{0}', '*')}`),
      }).toEqual({ marks: [], authorMarks: [], channels: [], authorChannels: [] });
    }
  });

  it(`opens a viewer's author channels ${LIVE_OPEN_BATCH} at a time, and hears the last of ${MANY_FOLLOWEES} followees`, async () => {
    const [reader] = await newUsers(1);
    const authors = await followedAuthors(MANY_FOLLOWEES, [reader]);
    const bus = app.services.liveBuses.authors;
    const listen = bus.listen.bind(bus);
    let opening = 0;
    let mostAtOnce = 0;
    // Calls through to the real bus: only counts the opens in flight.
    const spy = jest.spyOn(bus, 'listen').mockImplementation(async (authorId, sink) => {
      opening += 1;
      mostAtOnce = Math.max(mostAtOnce, opening);
      try {
        return await listen(authorId, sink);
      } finally {
        opening -= 1;
      }
    });
    let feed: Feed | undefined;
    try {
      feed = await app.services.liveFeed.subscribe(reader);
      expect(spy).toHaveBeenCalledTimes(MANY_FOLLOWEES);
      // All at once (the old relist) was MANY_FOLLOWEES in flight: at MAX_FOLLOWING, 10,000 Redis commands in one burst.
      expect(mostAtOnce).toBe(LIVE_OPEN_BATCH);
      expect(new Set(bus.held())).toEqual(new Set(authors));
      const [blog] = await blogsOf(authors[MANY_FOLLOWEES - 1], 1);
      await show(feed, [blog]);
    } finally {
      spy.mockRestore();
      await feed?.return!();
    }
  });

  it('re-reads only the author a follow change names, here and on the viewer channel (not every followee)', async () => {
    const [reader, toggled] = await signUpTwo('relister', 'relisted');
    const readerId = fromGlobalId(reader.id).id;
    const toggledId = fromGlobalId(toggled.id).id;
    await followedAuthors(FOLLOWEES, [readerId]);
    const feeds = await Promise.all(Array.from({ length: 3 }, () => app.services.liveFeed.subscribe(readerId)));
    const reading = feeds.map(async (feed) => {
      for await (const _ of feed);
    });
    const everyFollowee = jest.spyOn(FeedStore.prototype, 'followeeIds');
    try {
      const setFollow = async (follow: boolean) => {
        ok(
          await app.gql(
            'mutation($u: ID!, $f: Boolean!) { follow(userId: $u, follow: $f) { id } }',
            { u: toggled.id, f: follow },
            reader.token,
          ),
        );
        await settle();
        return app.services.liveBuses.authors.held().includes(toggledId);
      };
      expect(await setFollow(true)).toBe(true);
      expect(await setFollow(false)).toBe(false);
      expect(await setFollow(true)).toBe(true);
      // Three follow changes x 3 subscriptions x (this process + the viewer channel's echo), each one row.
      expect(everyFollowee).not.toHaveBeenCalled();
      // A relist that names no author (a `follows` event of an older process) still reads them all.
      await app.services.liveFeed.followsChanged(readerId);
      expect(everyFollowee).toHaveBeenCalled();
    } finally {
      everyFollowee.mockRestore();
      await Promise.all(feeds.map((feed) => feed.return!()));
      await Promise.all(reading);
    }
  });

  async function signUpTwo(a: string, b: string) {
    return [await signUp(app, a), await signUp(app, b)] as const;
  }

  /** Lets pending relists and deliveries run (a few event-loop turns with I/O). */
  async function settle(): Promise<void> {
    for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
  }
});
