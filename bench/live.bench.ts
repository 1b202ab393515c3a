/**
 * `npm run bench:live [-- --subscribers 2000 --publishes 30 --offline 50000]`: the live feed under
 * load. SUBSCRIBERS graphql-ws clients (in another process, bench/live.clients.ts) hold
 * `followFeedAdded` open on one API process with its fan-out workers (FEED_MODEL=push), while
 * authors publish. It prints:
 * - publish-to-delivery latency, p50 and p99, from the publish request's start to each
 *   subscriber's event (target: p99 under 1 s at 2,000 subscriptions);
 * - the server's memory per open subscription (heap and RSS, after a GC);
 * - what a publish costs on the live side as its author gains offline followers: Redis PUBLISH
 *   commands per publish (only live readers get one) and the fan-out time, for an author with
 *   the live followers only and then with OFFLINE more who are not connected.
 *
 * Then a soak (--soak-blogs 0 skips it): SOAK_READERS readers, each following SOAK_FOLLOWEES
 * authors and holding SOAK_SUBSCRIPTIONS subscriptions, on an API process in the default model
 * (hybrid), while the authors publish SOAK_BLOGS blogs in turn and the readers follow and
 * unfollow one more author after every blog. It prints the server's heap (after a GC) every
 * 100 blogs and its growth per 1,000 events delivered (target: flat, whatever the events shown
 * and the follow changes).
 */
import './production-mode';
import 'reflect-metadata';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startApp } from '../src/app';
import { SqlStatementLog } from '../src/db/database';
import { openMysql } from '../src/db/migrate';
import { fromGlobalId, toGlobalId } from '../src/kernel/global-id';
import { createRedis } from '../src/redis/redis.client';
import { poolLimits } from '../src/stores';
import { benchConfig, deleteByPrefix, flag, freshBenchDatabase, graphql, ms, percentile } from './bench.support';

const SUBSCRIBERS = flag('subscribers', 2000);
const PUBLISHES = flag('publishes', 30);
const OFFLINE = flag('offline', 50_000);
const AUTHORS = 10;
const FIRST_READER_ID = 5_000_000;
const FIRST_OFFLINE_ID = 7_000_000;
const SOAK_BLOGS = flag('soak-blogs', 600);
const SOAK_READERS = flag('soak-readers', 10);
const SOAK_FOLLOWEES = flag('soak-followees', 300);
const SOAK_SUBSCRIPTIONS = flag('soak-subscriptions', 10);
const FIRST_SOAK_AUTHOR_ID = 8_000_000;
const FIRST_SOAK_READER_ID = 9_000_000;
const MB = 1024 * 1024;

type ClientMessage =
  | { kind: 'ready' }
  | { kind: 'received'; events: Array<{ title: string; at: number }> }
  | { kind: 'error'; error: string };

async function main(): Promise<void> {
  if (SUBSCRIBERS > 0) await deliveryUnderLoad();
  if (SOAK_BLOGS > 0) await soak();
  process.exit(0);
}

async function deliveryUnderLoad(): Promise<void> {
  const databaseUrl = await freshBenchDatabase('feed_bench_live');
  const config = benchConfig({
    DATABASE_URL: databaseUrl,
    REDIS_KEY_PREFIX: 'bench:live:',
    FEED_MODEL: 'push',
    MAX_SUBSCRIPTIONS_PER_USER: '10',
  });
  const db = await openMysql(config.databaseUrl, new SqlStatementLog(console), poolLimits(config));
  const redis = createRedis(config, (message) => console.warn(message)) as Redis;
  await deleteByPrefix(redis, config.redisKeyPrefix);
  const app = await startApp({ config, db, redis });
  // Inboxes are made and written only once the Redis generation is confirmed.
  await app.services.feed.ready();
  console.log(
    `live benchmark: ${SUBSCRIBERS.toLocaleString('en-US')} subscriptions, ${PUBLISHES} publishes, ${AUTHORS} authors, FEED_MODEL=push`,
  );

  // Authors sign up through the API; readers are inserted in bulk, each following one author.
  const authors: Array<{ id: number; token: string }> = [];
  for (let a = 0; a < AUTHORS; a += 1) {
    const data = await graphql(
      app.url,
      'mutation($n: String!) { signUp(nickName: $n, password: "bench-password") { token user { id } } }',
      {
        n: `live-author-${a}`,
      },
    );
    authors.push({ id: fromGlobalId(data.signUp.user.id).id, token: data.signUp.token });
  }
  const readerIds = Array.from({ length: SUBSCRIBERS }, (_, i) => FIRST_READER_ID + i);
  await db.insertRows(
    'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at) VALUES ?',
    readerIds.map((id) => [id, `r${id}`, `r${id}`, 'not-a-hash', new Date()]),
  );
  await db.insertRows(
    'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
    readerIds.map((id, i) => [id, authors[i % AUTHORS].id, new Date()]),
  );
  await openInboxes(app.services.feed, readerIds);

  gc();
  const before = process.memoryUsage();
  const clients = fork(join(__dirname, 'live.clients.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const received: Array<{ title: string; at: number }> = [];
  const errors: string[] = [];
  const ready = new Promise<void>((resolve) =>
    clients.on('message', (message: ClientMessage) => {
      if (message.kind === 'ready') resolve();
      else if (message.kind === 'received') received.push(...message.events);
      else errors.push(message.error);
    }),
  );
  const connectStart = performance.now();
  clients.send({ url: app.url, tokens: readerIds.map((id) => app.services.tokens.issue(id, 0)) });
  await ready;
  // Acknowledged sockets, then each subscription marks its reader live: wait for every mark
  // (for a minute at most: a subscription that failed to start says why among the client errors).
  let live: number[] = [];
  for (let waited = 0; ; waited += 1) {
    live = await app.services.liveBuses.readers.liveAmong(readerIds);
    if (live.length === SUBSCRIBERS) break;
    if (waited % 50 === 49 || waited === 600)
      console.log(
        `${live.length} of ${SUBSCRIBERS} live so far${errors.length ? `; client errors: ${errors.slice(0, 3).join('; ')}` : ''}`,
      );
    if (waited === 600) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  console.log(
    `${live.length} of ${SUBSCRIBERS} subscriptions open and live in ${ms(performance.now() - connectStart)}`,
  );
  gc();
  const after = process.memoryUsage();
  const perSubscription = (field: 'heapUsed' | 'rss') => (after[field] - before[field]) / SUBSCRIBERS / 1024;

  // Publishes, one every 200 ms, each to the followers of one author (SUBSCRIBERS / AUTHORS of them).
  const publishedAt = new Map<string, number>();
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < PUBLISHES; i += 1) {
    const title = `live ${i}`;
    publishedAt.set(title, Date.now());
    await graphql(
      app.url,
      'mutation($t: String!) { publishBlog(input: { title: $t, content: "live" }) { id } }',
      { t: title },
      authors[i % AUTHORS].token,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await app.services.fanout?.idle(60_000);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const cpu = process.cpuUsage(cpuBefore);
  const expected = PUBLISHES * (SUBSCRIBERS / AUTHORS);
  const latencies = received
    .filter((event) => publishedAt.has(event.title))
    .map((event) => event.at - publishedAt.get(event.title)!);
  console.log(
    `events delivered: ${latencies.length} of ${expected} expected${errors.length ? `, client errors: ${errors.slice(0, 3).join('; ')}` : ''}`,
  );
  console.log(
    `publish-to-delivery latency: p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}, max ${ms(Math.max(...latencies))}  (target p99 < 1 s)`,
  );
  // CPU time is steadier than latency on a shared machine: the server's (with its fan-out worker) over the publishes and their delivery.
  const cpuMs = (cpu.user + cpu.system) / 1000;
  console.log(
    `server CPU over the publishes and their delivery: ${ms(cpuMs)}, ${((cpuMs * 1000) / Math.max(1, latencies.length)).toFixed(0)} us per event delivered`,
  );
  console.log(
    `server memory per open subscription: heap ${perSubscription('heapUsed').toFixed(1)} KB, RSS ${perSubscription('rss').toFixed(1)} KB`,
  );

  // The cost of offline followers: one author's publish with its live followers only, then with OFFLINE more.
  const author = authors[0];
  const publishCommands = async () => {
    const stats = await redis.info('commandstats');
    return ['publish', 'spublish'].reduce(
      (sum, name) => sum + Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0),
      0,
    );
  };
  const measure = async (label: string) => {
    const commands = await publishCommands();
    const started = performance.now();
    await graphql(
      app.url,
      'mutation($t: String!) { publishBlog(input: { title: $t, content: "live" }) { id } }',
      { t: label },
      author.token,
    );
    await app.services.fanout?.idle(120_000);
    const elapsed = performance.now() - started;
    console.log(
      `${label.padEnd(40)} fan-out ${ms(elapsed).padStart(9)}  PUBLISH commands ${(await publishCommands()) - commands}`,
    );
  };
  await measure(`${SUBSCRIBERS / AUTHORS} live followers`);
  const offlineIds = Array.from({ length: OFFLINE }, (_, i) => FIRST_OFFLINE_ID + i);
  await db.insertRows(
    'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at) VALUES ?',
    offlineIds.map((id) => [id, `o${id}`, `o${id}`, 'not-a-hash', new Date()]),
  );
  await db.insertRows(
    'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
    offlineIds.map((id) => [id, author.id, new Date()]),
  );
  await openInboxes(app.services.feed, offlineIds);
  await measure(`+ ${OFFLINE.toLocaleString('en-US')} offline followers`);

  clients.send({ kind: 'stop' });
  await new Promise((resolve) => clients.once('exit', resolve));
  await app.stop();
  await deleteByPrefix(redis, config.redisKeyPrefix);
  await Promise.allSettled([db.close(), redis.quit()]);
}

/** The soak: heap growth per 1,000 events delivered, with follow changes meanwhile (see the top of the file). */
async function soak(): Promise<void> {
  const databaseUrl = await freshBenchDatabase('feed_bench_live_soak');
  const config = benchConfig({
    DATABASE_URL: databaseUrl,
    REDIS_KEY_PREFIX: 'bench:live:soak:',
    FEED_MODEL: 'hybrid',
    MAX_SUBSCRIPTIONS_PER_USER: String(SOAK_SUBSCRIPTIONS),
    MAX_WEBSOCKETS_PER_USER: String(SOAK_SUBSCRIPTIONS),
  });
  const db = await openMysql(config.databaseUrl, new SqlStatementLog(console), poolLimits(config));
  const redis = createRedis(config, (message) => console.warn(message)) as Redis;
  await deleteByPrefix(redis, config.redisKeyPrefix);
  const app = await startApp({ config, db, redis });
  // Inboxes are made and written only once the Redis generation is confirmed.
  await app.services.feed.ready();
  const subscriptions = SOAK_READERS * SOAK_SUBSCRIPTIONS;
  console.log(
    `\nsoak: ${SOAK_READERS} readers following ${SOAK_FOLLOWEES} authors, ${SOAK_SUBSCRIPTIONS} subscriptions each (${subscriptions}), ` +
      `${SOAK_BLOGS} blogs, a follow change after each, FEED_MODEL=hybrid`,
  );

  // Authors, one more author per reader to follow and unfollow, and readers who follow every author.
  const authorIds = Array.from({ length: SOAK_FOLLOWEES }, (_, i) => FIRST_SOAK_AUTHOR_ID + i);
  const toggledIds = Array.from({ length: SOAK_READERS }, (_, i) => FIRST_SOAK_AUTHOR_ID + SOAK_FOLLOWEES + i);
  const readerIds = Array.from({ length: SOAK_READERS }, (_, i) => FIRST_SOAK_READER_ID + i);
  await db.insertRows(
    'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at) VALUES ?',
    [...authorIds, ...toggledIds, ...readerIds].map((id) => [id, `s${id}`, `s${id}`, 'not-a-hash', new Date()]),
  );
  await db.insertRows(
    'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
    readerIds.flatMap((reader) => authorIds.map((author) => [reader, author, new Date()])),
  );
  await openInboxes(app.services.feed, readerIds);
  const token = (id: number) => app.services.tokens.issue(id, 0);

  let delivered = 0;
  const errors: string[] = [];
  const clients = fork(join(__dirname, 'live.clients.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise<void>((resolve) =>
    clients.on('message', (message: ClientMessage) => {
      if (message.kind === 'ready') resolve();
      else if (message.kind === 'received') delivered += message.events.length;
      else errors.push(message.error);
    }),
  );
  clients.send({
    url: app.url,
    tokens: readerIds.flatMap((id) => Array.from({ length: SOAK_SUBSCRIPTIONS }, () => token(id))),
  });
  await ready;
  const openedBy = Date.now() + 120_000;
  for (;;) {
    const [readers, authors] = [
      await app.services.liveBuses.readers.liveAmong(readerIds),
      await app.services.liveBuses.authors.liveAmong(authorIds),
    ];
    if (readers.length === SOAK_READERS && authors.length === SOAK_FOLLOWEES) break;
    if (Date.now() > openedBy || errors.length > 0) {
      console.log(
        `not every subscription opened (${errors.length > 0 ? `${errors.length} failed: ${errors.slice(0, 3).join('; ')}` : 'after 120 s'}): ` +
          `${readers.length} of ${SOAK_READERS} readers and ${authors.length} of ${SOAK_FOLLOWEES} authors are listened to; the soak goes on with those`,
      );
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await new Promise((resolve) => setTimeout(resolve, 1000)); // the last subscriptions' author channels

  const heap = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  const start = heap();
  console.log(`${subscriptions} subscriptions open; heap ${(start / MB).toFixed(1)} MB`);
  const following = readerIds.map(() => false);
  const started = performance.now();
  // The first checkpoint: past the warm-up (compiled code, the per-process caches of documents and follow lists).
  let warm: { heap: number; delivered: number } | null = null;
  try {
    for (let i = 0; i < SOAK_BLOGS; i += 1) {
      await graphql(
        app.url,
        'mutation($t: String!) { publishBlog(input: { title: $t, content: "soak" }) { id } }',
        { t: `soak ${i}` },
        token(authorIds[i % SOAK_FOLLOWEES]),
      );
      const r = i % SOAK_READERS;
      following[r] = !following[r];
      await graphql(
        app.url,
        'mutation($u: ID!, $f: Boolean!) { follow(userId: $u, follow: $f) { id } }',
        { u: toGlobalId('User', toggledIds[r]), f: following[r] },
        token(readerIds[r]),
      );
      if ((i + 1) % 100 === 0 || i + 1 === SOAK_BLOGS) {
        const expected = (i + 1) * subscriptions;
        const deadline = Date.now() + 60_000;
        while (delivered < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        const now = heap();
        warm ??= { heap: now, delivered };
        console.log(
          `after ${String(i + 1).padStart(4)} blogs: ${delivered.toLocaleString('en-US').padStart(7)} events delivered, heap ${(now / MB).toFixed(1)} MB`,
        );
      }
    }
  } catch (error) {
    // A server whose memory keeps growing may stop answering in time: say so, and report what was measured.
    console.log(
      `the soak stopped: ${error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error)}`,
    );
  }
  const end = heap();
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `events delivered: ${delivered.toLocaleString('en-US')} of ${(SOAK_BLOGS * subscriptions).toLocaleString('en-US')} in ${seconds.toFixed(1)} s` +
      `${errors.length ? `, client errors: ${errors.slice(0, 3).join('; ')}` : ''}`,
  );
  const perThousand = (heapGrowth: number, events: number) =>
    `${((heapGrowth / MB / Math.max(1, events)) * 1000).toFixed(3)} MB`;
  const afterWarmUp = warm
    ? `, ${perThousand(end - warm.heap, delivered - warm.delivered)} after the first checkpoint`
    : '';
  console.log(
    `heap growth per 1,000 events delivered: ${perThousand(end - start, delivered)} from the start${afterWarmUp} (${((end - start) / MB).toFixed(1)} MB in all; target: flat)`,
  );

  clients.send({ kind: 'stop' });
  await new Promise((resolve) => clients.once('exit', resolve));
  await app.stop();
  await deleteByPrefix(redis, config.redisKeyPrefix);
  await Promise.allSettled([db.close(), redis.quit()]);
}

/**
 * Builds the inboxes of readers whose follows were inserted in bulk: from MySQL, with their
 * followees (a chunk writes only to an inbox whose followees hold the author).
 */
async function openInboxes(feed: { rebuildInbox(id: number): Promise<void> }, ids: number[]): Promise<void> {
  for (let start = 0; start < ids.length; start += 200)
    await Promise.all(ids.slice(start, start + 200).map((id) => feed.rebuildInbox(id)));
}

/** A full GC, for the memory figures (the script runs with --expose-gc). */
function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
