/**
 * `npm run bench:feed [-- --duration 8 --connections 32 --rounds 3]`: what reading the feed costs.
 *
 * Seeds 300 readers who each follow 40 of 100 ordinary authors and all of 5 big authors
 * (60 blogs each, with same-millisecond ties, some likes), and 300 who follow only ordinary
 * authors (every blog of their feed fanned out), fills the readers' inboxes, then
 * drives followFeed(first: 20) with every blog's author, likeCount and isLiked, from a load
 * generator in another process (autocannon), against:
 *   - the GraphQL API in the push, pull and hybrid models (the hybrid model merging the 5 big
 *     authors' blogs in at read time; so does the push model, since those blogs were not fanned
 *     out: what an inbox holds is recorded per blog, whatever the model now);
 *   - the push model for the readers without big followees: a page from the inbox alone;
 *   - the push model deep in the scroll, past the inbox (the cold path, served by MySQL);
 *   - the embedded mode (SQLite file, pull model, no Redis) with the same data;
 *   - a plain Node HTTP handler (no framework, no GraphQL) that serves the same page with the
 *     same Redis and SQL work (the same feed service and loaders): the baseline.
 * The plain handler and the GraphQL push page run --rounds times (default 3) in turn, and the
 * ratio printed is the median pair's.
 * Then Redis memory per inbox entry: MEMORY USAGE of 100 inboxes of 800 entries over 80,000,
 * on private redis-servers with the default settings and with zset-max-listpack-entries 1024.
 */
import './production-mode';
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { getHeapSpaceStatistics } from 'node:v8';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RunningApp, startApp } from '../src/app';
import { Database, SqlStatementLog } from '../src/db/database';
import { openMysql, openSqlite } from '../src/db/migrate';
import { poolLimits } from '../src/stores';
import { blogConnection } from '../src/graphql/blog-connection';
import { cursorsForPage, encodeCursor, FeedPosition, START } from '../src/kernel/pagination/cursor';
import { keysetAfter } from '../src/feed/merge';
import { FeedStore } from '../src/feed/feed.store';
import { RedisInbox } from '../src/feed/inbox.redis';
import { readPageArgs } from '../src/kernel/pagination/connection';
import { createLoaders, loaderSources } from '../src/graphql/loaders';
import { RedisKeys } from '../src/redis/keys';
import { createRedis } from '../src/redis/redis.client';
import {
  benchConfig,
  deleteByPrefix,
  flag,
  freshBenchDatabase,
  graphql,
  ms,
  outputOf,
  percentile,
  rate,
  startHeapSampler,
  startProfiler,
} from './bench.support';

const DURATION = flag('duration', 8);
/** Pairs of runs, the plain handler then the GraphQL push page, measured in turn (--rounds). */
const ROUNDS = Math.max(1, flag('rounds', 3));
/** An unmeasured run of each before the pairs. */
const WARM_UP_SECONDS = 3;
const CONNECTIONS = flag('connections', 32);
const READERS = 300;
const AUTHORS = 100;
const BIG_AUTHORS = 5;
const FOLLOWS_PER_READER = 40;
const BLOGS_PER_AUTHOR = 60;
const FIRST_ID = 1_000_000;

const QUERY = `query($after: String) { followFeed(first: 20, after: $after) {
  edges { cursor node { id title content likeCount isLiked createdAt author { id nickName } } }
  pageInfo { hasNextPage endCursor } } }`;

interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU time of this process (the servers; the load generator is another) per request. */
  cpuMicrosPerRequest?: number;
}

async function main(): Promise<void> {
  // BENCH_NAME=<name>: a database and key prefix of this run's own (two checkouts on one machine).
  const name = process.env.BENCH_NAME ?? '';
  if (!/^\w*$/.test(name)) throw new Error(`BENCH_NAME may hold only letters, digits and _ (got "${name}")`);
  const databaseUrl = await freshBenchDatabase(name === '' ? 'feed_bench_feed' : `feed_bench_feed_${name}`);
  const keyPrefix = name === '' ? 'bench:feed:' : `bench:feed:${name}:`;
  const configOf = (model: string) =>
    benchConfig({
      DATABASE_URL: databaseUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      FANOUT_WORKERS: '0',
      FEED_MODEL: model,
      BIG_V_FOLLOWERS: '100',
    });
  const config = configOf('push');
  const db = await openMysql(config.databaseUrl, new SqlStatementLog(console), poolLimits(config));
  const redis = createRedis(config, (message) => console.warn(message)) as Redis;
  await deleteByPrefix(redis, config.redisKeyPrefix);
  console.log(
    `feed benchmark: ${READERS} readers, ${AUTHORS} + ${BIG_AUTHORS} big authors, ${DURATION} s per run, ${CONNECTIONS} connections`,
  );

  // Seed MySQL, and the same rows into an embedded SQLite file.
  const now = Date.now();
  const authorIds = Array.from({ length: AUTHORS + BIG_AUTHORS }, (_, i) => FIRST_ID + i);
  const bigIds = authorIds.slice(AUTHORS);
  const readerIds = Array.from({ length: READERS }, (_, i) => FIRST_ID + 10_000 + i);
  const inboxOnlyReaderIds = Array.from({ length: READERS }, (_, i) => FIRST_ID + 20_000 + i);
  await seed(db, now, authorIds, bigIds, readerIds, inboxOnlyReaderIds);
  const embeddedDir = mkdtempSync(join(tmpdir(), 'feed-bench-'));
  const embeddedFile = join(embeddedDir, 'feed.sqlite');
  const embeddedDb = await openSqlite(embeddedFile, new SqlStatementLog(console));
  await seed(embeddedDb, now, authorIds, bigIds, readerIds, inboxOnlyReaderIds);

  // Servers: the API in each model, the embedded mode, and the plain handler.
  const apps: Record<string, RunningApp> = {};
  for (const model of ['push', 'pull', 'hybrid']) {
    apps[model] = await startApp({ config: configOf(model), db, redis });
    // Inboxes are made and written only once the Redis generation is confirmed.
    await apps[model].services.feed.ready();
  }
  // No environment underneath: the embedded mode is the one without DATABASE_URL and REDIS_URL.
  const embeddedConfig = benchConfig({ EMBEDDED_DB_FILE: embeddedFile }, {});
  apps.embedded = await startApp({ config: embeddedConfig, db: embeddedDb, redis: null });
  const plain = await startPlainHandler(apps.push);
  const tokens = readerIds.map((id) => apps.push.services.tokens.issue(id, 0));
  const inboxOnlyTokens = inboxOnlyReaderIds.map((id) => apps.push.services.tokens.issue(id, 0));

  // Inboxes, rebuilt: the newest FEED_REBUILD_ITEMS of each reader's feed (push and hybrid share them).
  const store = new FeedStore(db);
  for (const reader of [...readerIds, ...inboxOnlyReaderIds]) await apps.push.services.feed.rebuildInbox(reader);
  await apps.push.services.feed.syncWatermark();

  // Cursors past the inbox (900th entry) for the cold path.
  const deepBodies: string[] = [];
  for (const reader of readerIds) {
    const top = await store.feedPage(reader, START, 900);
    const after = encodeCursor(cursorsForPage(START, top)[top.length - 1]);
    deepBodies.push(JSON.stringify({ query: QUERY, variables: { after } }));
  }
  const firstBodies = readerIds.map(() => JSON.stringify({ query: QUERY, variables: { after: null } }));

  // Every scenario answers a full page before it is measured.
  for (const [name, url, body] of [
    ['push', apps.push.url, firstBodies[0]],
    ['pull', apps.pull.url, firstBodies[0]],
    ['hybrid', apps.hybrid.url, firstBodies[0]],
    ['cold', apps.push.url, deepBodies[0]],
    ['plain', plain.url, firstBodies[0]],
  ] as const) {
    const data = await graphql(url, JSON.parse(body).query, JSON.parse(body).variables, tokens[0]);
    if (data.followFeed.edges.length !== 20) throw new Error(`${name} answered ${data.followFeed.edges.length} edges`);
  }
  const same = JSON.stringify((await graphql(apps.push.url, QUERY, {}, tokens[1])).followFeed);
  for (const model of ['pull', 'hybrid', 'embedded']) {
    if (JSON.stringify((await graphql(apps[model].url, QUERY, {}, tokens[1])).followFeed) !== same)
      throw new Error(`${model} page differs from push`);
  }
  // A process reads a user's sessions at their first request there, then every 10 minutes
  // (src/auth/auth.sessions.ts): paid here, not in the runs, which measure the steady state.
  for (const app of [apps.push, apps.pull, apps.hybrid, apps.embedded])
    await Promise.all(tokens.map((token) => graphql(app.url, '{ __typename }', {}, token)));
  await Promise.all(inboxOnlyTokens.map((token) => graphql(apps.push.url, '{ __typename }', {}, token)));

  const run = async (url: string, bodies: string[], as = tokens): Promise<LoadResult> => {
    const cpuBefore = process.cpuUsage();
    const result = await load({ url, bodies, tokens: as, connections: CONNECTIONS, durationSeconds: DURATION });
    const cpu = process.cpuUsage(cpuBefore);
    return { ...result, cpuMicrosPerRequest: (cpu.user + cpu.system) / (result.requestsPerSecond * DURATION) };
  };
  // The GraphQL page and the plain handler in turns, ROUNDS pairs: a drift of this machine's
  // speed (a third between minutes here) meets both sides of each pair's ratio; the median pair's
  // ratio is the figure, and the table shows each side's median run.
  // Both warmed up first, unmeasured: the first seconds of a run pay for the JIT.
  for (const url of [plain.url, apps.push.url])
    await load({ url, bodies: firstBodies, tokens, connections: CONNECTIONS, durationSeconds: WARM_UP_SECONDS });
  // --profile: CPU profiles of the first pair's two runs, to compare what each spends;
  // --heap-profile: where each of them allocates (sampled heap profiles) instead.
  const profiled = async (round: number, name: string, measure: () => Promise<LoadResult>) => {
    const heap = process.argv.includes('--heap-profile');
    const profiler =
      round === 1 && (heap || process.argv.includes('--profile'))
        ? await (heap ? startHeapSampler() : startProfiler())
        : null;
    const result = await measure();
    if (profiler)
      console.log(
        `${heap ? 'heap' : 'CPU'} profile written to ${await profiler.stop(`${name}.${heap ? 'heapprofile' : 'cpuprofile'}`)}`,
      );
    return result;
  };
  const pairs: Array<{ plain: LoadResult; push: LoadResult }> = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    const plainRun = await profiled(round, 'feed-plain', () => run(plain.url, firstBodies));
    const pushRun = await profiled(round, 'feed-push', () => run(apps.push.url, firstBodies));
    pairs.push({ plain: plainRun, push: pushRun });
  }
  const results = {
    plain: medianRun(pairs.map((pair) => pair.plain)),
    push: medianRun(pairs.map((pair) => pair.push)),
    inboxOnly: await run(apps.push.url, firstBodies, inboxOnlyTokens),
    pull: await run(apps.pull.url, firstBodies),
    hybrid: await run(apps.hybrid.url, firstBodies),
    cold: await run(apps.push.url, deepBodies),
    embedded: await run(apps.embedded.url, firstBodies),
  };

  console.log('');
  const line = (name: string, r: LoadResult) =>
    console.log(
      `${name.padEnd(48)} ${rate(r.requestsPerSecond).padStart(9)}  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  ` +
        `server CPU ${Math.round(r.cpuMicrosPerRequest ?? 0)} µs/request  errors ${r.errors + r.non2xx + r.timeouts}`,
    );
  line('plain Node handler, same Redis + SQL work', results.plain);
  line('GraphQL followFeed(first: 20), push', results.push);
  line('GraphQL followFeed(first: 20), push, no big followees', results.inboxOnly);
  line('GraphQL followFeed(first: 20), pull', results.pull);
  line(`GraphQL followFeed(first: 20), hybrid (${BIG_AUTHORS} big)`, results.hybrid);
  line('GraphQL, push, past the inbox (cold path)', results.cold);
  line('GraphQL, embedded mode (SQLite, pull, no Redis)', results.embedded);
  const ratio = (a: LoadResult, b: LoadResult) => (a.requestsPerSecond / b.requestsPerSecond).toFixed(2);
  const pairRatios = pairs.map((pair) => pair.push.requestsPerSecond / pair.plain.requestsPerSecond);
  console.log(
    `  GraphQL push / plain baseline: ${percentile(pairRatios, 50).toFixed(2)}x, the median of ${ROUNDS} pairs run in turn (${pairRatios.map((r) => `${r.toFixed(2)}x`).join(', ')})  (target >= 1.0x)`,
  );
  console.log(`  hybrid / push:                 ${ratio(results.hybrid, results.push)}x  (target >= 0.7x)`);
  console.log(`  push, no big followees / plain: ${ratio(results.inboxOnly, results.plain)}x`);
  console.log(`  cold path / inbox path:        ${ratio(results.cold, results.push)}x  (target >= 0.5x)`);
  console.log(`  pull / push:                   ${ratio(results.pull, results.push)}x`);
  console.log(`  embedded (SQLite) / pull on MySQL: ${ratio(results.embedded, results.pull)}x`);
  // What the young generation's size (--max-semi-space-size, set by npm start and the Dockerfile)
  // costs in memory: this process served every run above.
  const youngGeneration = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  console.log(
    `  server process: RSS ${mb(process.memoryUsage().rss)} MB, young generation ${mb(youngGeneration)} MB ` +
      `(node options: ${[...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ').trim() || 'none'})`,
  );

  for (const [label, args] of [
    ['default settings', []],
    ['zset-max-listpack-entries 1024', ['--zset-max-listpack-entries', '1024']],
  ] as const) {
    const bytes = await memoryPerEntry(config.feedMaxItems, [...args]);
    console.log(
      `Redis memory per inbox entry, ${config.feedMaxItems}-entry inboxes, ${label}: ${bytes.toFixed(1)} bytes  (target <= 64)`,
    );
  }

  for (const [label, database] of [
    ['MySQL', db],
    ['embedded SQLite', embeddedDb],
  ] as const) {
    await pullAgainstHistory(label, database, now);
  }

  await plain.close();
  for (const app of Object.values(apps)) await app.stop();
  await deleteByPrefix(redis, config.redisKeyPrefix);
  await Promise.allSettled([db.close(), redis.quit(), embeddedDb.close()]);
  rmSync(embeddedDir, { recursive: true, force: true });
}

/** Authors of each group of the pull-history case, and the blogs of each author in it. */
const HISTORY_AUTHORS = 20;
const DEEP_HISTORY = 5_000;
const SHALLOW_HISTORY = 50;

/**
 * Issue 13's pull target: a page for a reader whose 20 followees have 5,000 blogs each, against
 * the same page for one whose 20 followees have 50 each (100x less history), at the top of the
 * feed and 900 entries down. Measured on the feed's SQL (FeedStore.feedPage, what the pull model,
 * the embedded mode and the cold path run), 300 pages each after 30 to warm up.
 */
async function pullAgainstHistory(label: string, db: Database, now: number): Promise<void> {
  const base = FIRST_ID + 50_000;
  const groups = [
    {
      name: `${DEEP_HISTORY.toLocaleString('en-US')} blogs each`,
      blogs: DEEP_HISTORY,
      first: base,
      reader: base + 1_000,
    },
    { name: `${SHALLOW_HISTORY} blogs each`, blogs: SHALLOW_HISTORY, first: base + 100, reader: base + 1_001 },
  ];
  for (const group of groups) {
    const authors = Array.from({ length: HISTORY_AUTHORS }, (_, i) => group.first + i);
    await db.insertRows(
      'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at) VALUES ?',
      [...authors, group.reader].map((id) => [id, `h${id}`, `h${id}`, 'not-a-hash', new Date(now)]),
    );
    // Same times at the top in both groups (one blog per author every 10 s), older below.
    const blogs = authors.flatMap((author, a) =>
      Array.from({ length: group.blogs }, (_, i) => [
        author,
        `old ${i}`,
        'history',
        '[]',
        new Date(now - 7_200_000 - i * 10_000 - a * 7),
        true,
      ]),
    );
    await db.insertRows('INSERT INTO tb_blog (user_id, title, content, images, created_at, pushed) VALUES ?', blogs);
    await db.insertRows(
      'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
      authors.map((author) => [group.reader, author, new Date(now)]),
    );
  }
  const store = new FeedStore(db);
  const timePage = async (reader: number, from: FeedPosition): Promise<number> => {
    for (let i = 0; i < 30; i += 1) await store.feedPage(reader, from, 21);
    const started = performance.now();
    for (let i = 0; i < 300; i += 1) await store.feedPage(reader, from, 21);
    return (performance.now() - started) / 300;
  };
  const results: Array<{ top: number; deep: number }> = [];
  for (const group of groups) {
    const upTo = await store.feedPage(group.reader, START, 900);
    results.push({
      top: await timePage(group.reader, START),
      deep: await timePage(group.reader, keysetAfter(upTo[upTo.length - 1])),
    });
  }
  const [deep, shallow] = results;
  console.log(
    `pull page of 21, ${label}, 20 followees with ${groups[0].name} / with ${groups[1].name}: ` +
      `top ${deep.top.toFixed(2)} / ${shallow.top.toFixed(2)} ms = ${(deep.top / shallow.top).toFixed(2)}x, ` +
      `900 entries down ${deep.deep.toFixed(2)} / ${shallow.deep.toFixed(2)} ms = ${(deep.deep / shallow.deep).toFixed(2)}x  (target <= 1.5x)`,
  );
}

/**
 * The benchmark's data, through the dialect helpers so it seeds MySQL and SQLite alike (same
 * insert order, so blog ids and pages are the same in both).
 */
async function seed(
  db: Database,
  now: number,
  authorIds: number[],
  bigIds: number[],
  readerIds: number[],
  inboxOnlyReaderIds: number[],
): Promise<void> {
  await db.insertRows(
    'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at, has_pulled_blogs, follower_count) VALUES ?',
    [...authorIds, ...readerIds, ...inboxOnlyReaderIds].map((id) => [
      id,
      `u${id}`,
      `u${id}`,
      'not-a-hash',
      new Date(now),
      bigIds.includes(id),
      bigIds.includes(id) ? READERS : 0,
    ]),
  );
  const blogs = authorIds.flatMap((author, a) =>
    Array.from({ length: BLOGS_PER_AUTHOR }, (_, i) => [
      author,
      `blog ${a}.${i}`,
      'Some content of a typical length for a post in a feed.',
      '[]',
      new Date(now - 3_600_000 + Math.floor((a * BLOGS_PER_AUTHOR + i) / 3) * 7),
      !bigIds.includes(author),
    ]),
  );
  await db.insertRows('INSERT INTO tb_blog (user_id, title, content, images, created_at, pushed) VALUES ?', blogs);
  const follows: unknown[][] = [];
  readerIds.forEach((reader, r) => {
    for (let k = 0; k < FOLLOWS_PER_READER; k += 1)
      follows.push([reader, authorIds[(r * 7 + k * 13) % AUTHORS], new Date(now)]);
    for (const big of bigIds) follows.push([reader, big, new Date(now)]);
  });
  inboxOnlyReaderIds.forEach((reader, r) => {
    for (let k = 0; k < FOLLOWS_PER_READER; k += 1)
      follows.push([reader, authorIds[(r * 7 + k * 13) % AUTHORS], new Date(now)]);
  });
  await db.insertRows('INSERT IGNORE INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', follows);
  const blogIds = await db.select<{ id: string }>('SELECT id FROM tb_blog ORDER BY id');
  const likes = [...readerIds, ...inboxOnlyReaderIds].flatMap((reader, r) =>
    blogIds.filter((_, i) => (i + r) % 9 === 0).map((b) => [Number(b.id), reader, new Date(now)]),
  );
  await db.insertRows('INSERT IGNORE INTO tb_blog_like (blog_id, user_id, created_at) VALUES ?', likes);
  // The counter the like transaction keeps equal to the rows (a page's likeCount, from either).
  await db.write('UPDATE tb_blog SET liked = (SELECT COUNT(*) FROM tb_blog_like l WHERE l.blog_id = tb_blog.id)');
}

/** The baseline: node:http, no framework, the same services and loaders, a hand-built JSON. */
async function startPlainHandler(app: RunningApp): Promise<{ url: string; close(): Promise<void> }> {
  const services = app.services;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    const respond = async (): Promise<void> => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { variables?: { after?: string | null } };
        const auth = await services.tokens.check(req.headers.authorization);
        if (auth.kind !== 'viewer') throw new Error('no viewer');
        const loaders = createLoaders(loaderSources(services), auth.userId);
        const page = await blogConnection(
          await services.feed.page(auth.userId, readPageArgs({ first: 20, after: body.variables?.after ?? null })),
          loaders,
          {
            followedAuthorsOnly: true,
          },
        );
        const nodes = page.edges.map((edge) => edge.node);
        const [authors, liked] = await Promise.all([
          loaders.user.loadMany(nodes.map((blog) => blog.authorId)),
          loaders.likedByViewer.loadMany(nodes.map((blog) => blog.dbId)),
        ]);
        const edges = page.edges.map((edge, i) => {
          const author = authors[i] as { id: string; nickName: string };
          const blog = edge.node;
          return {
            cursor: edge.cursor,
            node: {
              id: blog.id,
              title: blog.title,
              content: blog.content,
              likeCount: blog.likeCount,
              isLiked: liked[i],
              createdAt: blog.createdAt.toISOString(),
              author: { id: author.id, nickName: author.nickName },
            },
          };
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            data: {
              followFeed: {
                edges,
                pageInfo: { hasNextPage: page.pageInfo.hasNextPage, endCursor: page.pageInfo.endCursor },
              },
            },
          }),
        );
      } catch (error) {
        res.writeHead(500).end(String(error));
      }
    };
    // The handler catches everything it throws and answers 500, so its promise never rejects: `void` marks that.
    req.on('end', () => void respond());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function load(spec: {
  url: string;
  bodies: string[];
  tokens: string[];
  connections: number;
  durationSeconds: number;
}): Promise<LoadResult> {
  const file = join(mkdtempSync(join(tmpdir(), 'feed-load-')), 'spec.json');
  writeFileSync(file, JSON.stringify(spec));
  const child = spawn(process.execPath, [join(__dirname, 'load.runner.js'), file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { code, output } = await outputOf(child);
  if (code !== 0) throw new Error(`load runner exited with ${code}`);
  return JSON.parse(output.trim().split('\n').pop()!) as LoadResult;
}

/** Bytes per entry of full inboxes, on a private redis-server started with `args`. */
async function memoryPerEntry(entries: number, args: string[]): Promise<number> {
  const port = 16_379 + Math.floor(Math.random() * 1000);
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args],
    { stdio: 'ignore' },
  );
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 20 });
  // The server may not listen yet: ioredis reconnects by itself, and the first refusals are no news.
  client.on('error', () => {});
  try {
    await client.ping();
    const keys = new RedisKeys('mem:');
    const inbox = new RedisInbox({ redis: client, keys, maxItems: entries, ttlSeconds: 86_400 });
    const readers = 100;
    for (let reader = 0; reader < readers; reader += 1) {
      const items = Array.from({ length: entries }, (_, i) => ({
        id: 5_000_000 + reader * entries + i,
        score: 1_796_000_000_000 + i * 1000,
      }));
      await inbox.create(reader, 0, 1);
      await inbox.applyFollow(reader, { version: 1, authorId: 1 }, items, null);
    }
    // The entries' sorted set, the inbox's small hash (floor, versions) and its followees (one here) together.
    let bytes = 0;
    for (let reader = 0; reader < readers; reader += 1) {
      for (const key of [keys.feed(reader), keys.feedMeta(reader), keys.feedFollowees(reader)]) {
        bytes += Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      }
    }
    return bytes / (readers * entries);
  } finally {
    client.disconnect();
    server.kill('SIGKILL');
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

/** The run of the median rate among these. */
function medianRun(runs: LoadResult[]): LoadResult {
  return [...runs].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(runs.length / 2)];
}
