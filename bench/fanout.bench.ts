/**
 * `npm run bench:fanout [-- --followers 1000000]`: what publishing and fan-out cost.
 *
 * 1. Seeds N followers of one author (bulk INSERTs: active users with inboxes as their follows
 *    left them, as fan-out writes only to existing inboxes of followers) and 1 follower of another.
 * 2. publishBlog latency over HTTP, p50/p99, for both authors, with the fan-out workers stopped
 *    so that the figure is the request alone (the events wait in the outbox/queue).
 * 3. Delivery: with the workers running, one publish by the big author; the time until the
 *    fan-out task is done (its finished_at, as the worker recorded it) and all N inboxes hold
 *    the blog (checked), and inbox writes per second.
 *    Right after it (lanes), a publish by an author with 10 followers: the time until its 10
 *    inboxes hold it, and how far the big one was then. Then Redis's busiest commands during
 *    the delivery (INFO commandstats), and redis-benchmark's pipelined ZADD on the same server
 *    (16 commands a pipeline, 50 clients, random keys: what the server does at best), and the
 *    delivery's own write alone: a script doing nothing but one ZADD into each of the same N
 *    inboxes, SCRIPT_BATCH a call, every call sent at once, as the delivery sends them (what the
 *    inboxes' write costs Redis without the checks exactness asks for; the member is taken out
 *    again). Five rounds of all three by default, in turn: the ratio printed is the median round's.
 *    After the rounds, full inboxes: one publish by an author whose --full-inboxes followers
 *    (default 10,000; 0 skips it) have inboxes of FEED_MAX_ITEMS entries, as a long-time reader's
 *    are, so that every write also trims one; its time and Redis's CPU an inbox, against the new
 *    inboxes' above (a full inbox's sorted set is a skiplist or a long listpack, as the server's
 *    zset-max-listpack-entries says, where the rounds' inboxes are short listpacks).
 * 4. Baselines on the same Redis, in the same run: a plain pipelined ZADD + trim loop from one
 *    Node client (chunks of 1000; up to --plain-sample followers, default 200,000), and the
 *    seed's loop with one awaited ZADD per follower (--seed-sample, default 20,000).
 *
 * Flags: --followers N (default 100,000), --publishes N (latency samples, default 60), --rounds N
 * (deliveries, default 5), --full-inboxes N (default 10,000),
 * --workers N (fan-out workers in this process, default 1), --worker-processes N (instead, N
 * processes of `node dist/src/worker.js`, each running FANOUT_WORKERS workers), --profile (write
 * a CPU profile of the delivery: of this process, or with --worker-processes one per worker
 * process, written when it exits). FANOUT_CONCURRENCY and the other FANOUT_* settings apply.
 *
 * Uses DATABASE_URL's server with database feed_bench (re-created) and REDIS_URL with the key
 * prefix bench:fanout: (emptied before and after). BENCH_NAME=<name> (letters, digits, _) makes
 * them feed_bench_<name> and bench:fanout:<name>:, so that two checkouts can run it at once.
 */
import './production-mode';
import 'reflect-metadata';
import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { startApp } from '../src/app';
import { createInbox, startFanoutWorkers } from '../src/composition';
import { SqlStatementLog } from '../src/db/database';
import { openMysql } from '../src/db/migrate';
import { poolLimits } from '../src/stores';
import { warn } from '../src/kernel/observability';
import { fromGlobalId } from '../src/kernel/global-id';
import { SCRIPT_BATCH } from '../src/feed/inbox.redis';
import type { ScoredId } from '../src/kernel/pagination/cursor';
import { inboxMember, RedisKeys } from '../src/redis/keys';
import { createRedis } from '../src/redis/redis.client';
import type { Config } from '../src/kernel/config';
import {
  benchConfig,
  deleteByPrefix,
  flag,
  freshBenchDatabase,
  graphql,
  ms,
  percentile,
  progress,
  rate,
  startProfiler,
} from './bench.support';

const FOLLOWERS = flag('followers', 100_000);
const PUBLISHES = flag('publishes', 60);
const SEED_LOOP_SAMPLE = Math.min(FOLLOWERS, flag('seed-sample', 20_000));
const PLAIN_LOOP_SAMPLE = Math.min(FOLLOWERS, flag('plain-sample', 200_000));
const FIRST_FOLLOWER_ID = 10_000_000;
/** Followers of the full-inbox case's author (--full-inboxes; 0: no such case), ids from FIRST_FULL_ID. */
const FULL_INBOXES = flag('full-inboxes', 10_000);
const FIRST_FULL_ID = 20_000_000;
/** Followers of the lanes case's small author (the first of the N followers). */
const SMALL_AUDIENCE = Math.min(10, FOLLOWERS);
const WORKER_PROCESSES = flag('worker-processes', 0);
/** Deliveries measured, each against a redis-benchmark run right after it (--rounds). */
const ROUNDS = Math.max(1, flag('rounds', 5));
/**
 * How often the delivery loop looks: every 5 ms for the lanes case's small post (its figure is
 * tens of ms), then every 50 ms for the big task, whose time is read from the task's own
 * finished_at. A MySQL query every 5 ms for the whole delivery was about 170 statements a
 * round in this process, beside the workers it measures, on a 2-core machine.
 */
const LANES_POLL_MS = 5;
const DONE_POLL_MS = 50;
/**
 * How long a delivery may run before the benchmark stops with an error naming its task's state,
 * rather than waiting for ever (a worker process that died, a task that keeps failing its redrive).
 */
const DELIVERY_DEADLINE_MS = 300_000;
/** redis-benchmark's requests a round (a fraction of a second; as many as this benchmark always sent). */
const BENCHMARK_REQUESTS = 200_000;

/** One delivery's figures, and redis-benchmark's rate measured right after it. */
interface DeliveryRound {
  seconds: number;
  redisCpu: number;
  nodeCpu: number;
  busiest: CommandStat[];
  smallSeconds: number;
  bigAtSmall: string;
  benchmarkRate: number;
  /** The same inboxes' ZADD alone, measured right after (null until then). */
  bare: BareZadd | null;
}

/** The delivery into full inboxes: its time, Redis's CPU, and what the inboxes were. */
interface FullRound {
  seconds: number;
  redisCpu: number;
  /** Entries an inbox held before it (FEED_MAX_ITEMS). */
  entries: number;
  /** OBJECT ENCODING of an inbox's sorted set, and the server's zset-max-listpack-entries. */
  encoding: string;
  listpackEntries: string;
}

/** BENCH_NAME: a database and key prefix of this run's own (see above). */
function benchNames(): { database: string; keyPrefix: string } {
  const name = process.env.BENCH_NAME ?? '';
  if (!/^\w*$/.test(name)) throw new Error(`BENCH_NAME may hold only letters, digits and _ (got "${name}")`);
  return name === ''
    ? { database: 'feed_bench', keyPrefix: 'bench:fanout:' }
    : { database: `feed_bench_${name}`, keyPrefix: `bench:fanout:${name}:` };
}

async function main(): Promise<void> {
  const names = benchNames();
  const databaseUrl = await freshBenchDatabase(names.database);
  const config = benchConfig({
    DATABASE_URL: databaseUrl,
    REDIS_KEY_PREFIX: names.keyPrefix,
    FANOUT_WORKERS: '0',
    PASSWORD_HASH_COST: '1024',
  });
  const db = await openMysql(config.databaseUrl, new SqlStatementLog(console), poolLimits(config));
  const redis = createRedis(config, (message) => console.warn(message)) as Redis;
  await deleteByPrefix(redis, config.redisKeyPrefix);
  const app = await startApp({ config, db, redis });
  // Inboxes are made and written only once the Redis generation is confirmed.
  await app.services.feed.ready();
  console.log(
    `fan-out benchmark: ${FOLLOWERS.toLocaleString('en-US')} followers, Redis ${config.redisUrl}, MySQL ${databaseUrl}`,
  );

  // 1. Seed.
  const signUp = async (nickName: string) =>
    (
      await graphql(
        app.url,
        'mutation($n: String!) { signUp(nickName: $n, password: "bench-password") { token user { id } } }',
        { n: nickName },
      )
    ).signUp;
  const big = await signUp('big-author');
  const small = await signUp('small-author');
  const ten = await signUp('ten-author');
  const bigId = fromGlobalId(big.user.id).id;
  const smallId = fromGlobalId(small.user.id).id;
  const tenId = fromGlobalId(ten.user.id).id;
  const full = await signUp('full-author');
  const fullId = fromGlobalId(full.user.id).id;
  const followerIds = Array.from({ length: FOLLOWERS }, (_, i) => FIRST_FOLLOWER_ID + i);
  const keys = new RedisKeys(config.redisKeyPrefix);
  // Seeded through a client of its own, without REDIS_COMMAND_TIMEOUT_MS: 10,000 inboxes created
  // at once on a busy shared Redis can take longer than that, which is no failure of the seed.
  const seedRedis = new Redis(config.redisUrl);
  const inbox = createInbox({ ...config, feedModel: 'push' }, seedRedis)!;
  // The inboxes are of the generation the service trusts (a listing is trusted only in its own).
  const epoch = app.services.feed.redisGeneration() ?? 1;
  const seeded = progress('seeding followers', FOLLOWERS);
  const seedStart = performance.now();
  /**
   * Active users with inboxes whose followees hold the author (version 1), as fan-out writes only
   * to inboxes whose reader follows the author. Installed by a rebuild, as most active inboxes
   * last were (an inbox is rebuilt when read after it expired or Redis lost it): no change of the
   * pair since, so deliveries decide by the dispatcher's listing of followers, not by a version of
   * the pair's own (deliver.lua). `entries`: what each inbox holds besides.
   */
  const seedFollowers = async (ids: readonly number[], authorId: number, entries: ScoredId[]) => {
    await db.query('INSERT INTO tb_user (id, nick_name, nick_key, password, created_at, feed_version) VALUES ?', [
      ids.map((id) => [id, `f${id}`, `f${id}`, 'not-a-hash', new Date(), 1]),
    ]);
    await db.query('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', [
      ids.map((id) => [id, authorId, new Date()]),
    ]);
    await Promise.all(
      ids.map(async (id) => {
        await inbox.beginBuild(id, 'seed', epoch);
        await inbox.finishBuild(id, 'seed', { version: 1, followeeIds: [authorId], mutedIds: [], entries, floor: 0 });
      }),
    );
  };
  for (let start = 0; start < FOLLOWERS; start += 10_000) {
    await seedFollowers(followerIds.slice(start, start + 10_000), bigId, []);
    seeded(Math.min(FOLLOWERS, start + 10_000));
  }
  // The first ten follow the ten-follower author too (version 2), the first of them the small one (3).
  const tenFollowerIds = followerIds.slice(0, SMALL_AUDIENCE);
  await db.query('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', [
    tenFollowerIds.map((id) => [id, tenId, new Date()]),
  ]);
  await db.query('UPDATE tb_user SET feed_version = 2 WHERE id IN (?)', [tenFollowerIds]);
  await Promise.all(tenFollowerIds.map((id) => inbox.applyFollow(id, { version: 2, authorId: tenId }, [], null)));
  await db.query('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES (?, ?, ?)', [
    FIRST_FOLLOWER_ID,
    smallId,
    new Date(),
  ]);
  await db.query('UPDATE tb_user SET feed_version = 3 WHERE id = ?', [FIRST_FOLLOWER_ID]);
  await inbox.applyFollow(FIRST_FOLLOWER_ID, { version: 3, authorId: smallId }, [], null);
  // Long-time readers of the full-inbox case: inboxes of FEED_MAX_ITEMS entries, all older than
  // any blog of this run (scores from 1; their blogs need no rows: a delivery reads none).
  const fullIds = Array.from({ length: FULL_INBOXES }, (_, i) => FIRST_FULL_ID + i);
  const oldEntries = Array.from({ length: config.feedMaxItems }, (_, k) => ({ id: 900_000_000 + k, score: k + 1 }));
  for (let start = 0; start < FULL_INBOXES; start += 2_000) {
    await seedFollowers(fullIds.slice(start, start + 2_000), fullId, oldEntries);
  }
  seedRedis.disconnect();
  console.log(`seeded in ${ms(performance.now() - seedStart)}`);

  // 2. Publish latency, the request alone.
  const publish = async (token: string, title: string) => {
    const started = performance.now();
    const data = await graphql(
      app.url,
      'mutation($t: String!) { publishBlog(input: { title: $t, content: "bench" }) { id } }',
      { t: title },
      token,
    );
    return { elapsed: performance.now() - started, id: data.publishBlog.id as string };
  };
  for (let i = 0; i < 10; i += 1) await publish(small.token, `warm-up ${i}`);
  const latencies = { one: [] as number[], many: [] as number[] };
  for (let i = 0; i < PUBLISHES; i += 1) {
    latencies.one.push((await publish(small.token, `one ${i}`)).elapsed);
    latencies.many.push((await publish(big.token, `many ${i}`)).elapsed);
  }
  // Those events are not part of the delivery measurement: drop them and their queue jobs.
  await db.query("UPDATE tb_fanout_task SET status = 'done'");
  const fanoutQueue = app.services.fanoutQueue!; // a standalone Redis is required above
  await fanoutQueue.queue.obliterate({ force: true });

  // 3. Deliveries with the workers running, each followed by redis-benchmark's ZADD: ROUNDS pairs
  // measured in turn, so that a drift of this machine's speed (it varies by a third between
  // minutes here) meets both sides of each ratio, and the median round is the figure.
  const inProcess =
    WORKER_PROCESSES > 0
      ? null
      : startFanoutWorkers(
          { config, redis, fanoutQueue, metrics: app.services.metrics, warn, fanout: app.services.fanout },
          Math.max(1, flag('workers', 1)),
          { kind: 'shared', db },
        );
  const workerProcesses = await startWorkerProcesses(config, WORKER_PROCESSES, process.argv.includes('--profile'));
  const profiler = process.argv.includes('--profile') && inProcess ? await startProfiler() : null;
  const bigTask = async (blogId: number) =>
    (
      await db.query(
        "SELECT status, chunks_done, chunks_total, finished_at FROM tb_fanout_task WHERE blog_id = ? AND kind = 'deliver'",
        [blogId],
      )
    )[0] as { status: string; chunks_done: number; chunks_total: number; finished_at: Date | null } | undefined;
  /** A deliver task's state in words, for the lanes line and the deadline's error. */
  const stateOf = (task: Awaited<ReturnType<typeof bigTask>>) =>
    task ? `${task.status}, ${task.chunks_done} of ${task.chunks_total} chunks done` : 'not dispatched yet';
  /** When a blog's deliver task was recorded done (null: not yet); throws past DELIVERY_DEADLINE_MS from `since`. */
  const doneAt = async (blogId: number, since: number): Promise<Date | null> => {
    const task = await bigTask(blogId);
    if (task?.status === 'done' && task.finished_at) return task.finished_at;
    if (Date.now() - since > DELIVERY_DEADLINE_MS)
      throw new Error(
        `the delivery of blog ${blogId} was not done ${DELIVERY_DEADLINE_MS} ms after its publish (its task: ${stateOf(task)})`,
      );
    return null;
  };
  const smallReached = async (member: string) =>
    (await Promise.all(tenFollowerIds.map((id) => redis.zscore(keys.feed(id), member)))).every(
      (score) => score !== null,
    );

  /** One publish by the big author until its task is done, with the lanes case beside it. */
  const deliverOnce = async (round: number): Promise<DeliveryRound> => {
    const redisCpuBefore = await redisCpuSeconds(redis);
    const nodeCpuBefore = cpuSeconds(workerProcesses);
    const statsBefore = await commandStats(redis);
    const delivery = await publish(big.token, `delivered ${round}`);
    const deliveryStart = Date.now() - delivery.elapsed;
    const blogId = fromGlobalId(delivery.id).id;
    // Lanes: at once, a post of an author with 10 followers. It must not wait for the big one.
    const smallPost = await publish(ten.token, `small, right after the big one ${round}`);
    const smallStart = performance.now() - smallPost.elapsed;
    const smallMember = inboxMember(fromGlobalId(smallPost.id).id);
    let smallSeconds: number | null = null;
    let bigAtSmall = '';
    let finishedAt: Date | null = null;
    for (;;) {
      if (smallSeconds === null && (await smallReached(smallMember))) {
        smallSeconds = (performance.now() - smallStart) / 1000;
        bigAtSmall = stateOf(await bigTask(blogId));
      }
      finishedAt = await doneAt(blogId, deliveryStart);
      if (finishedAt) break;
      await new Promise((resolve) => setTimeout(resolve, smallSeconds === null ? LANES_POLL_MS : DONE_POLL_MS));
    }
    // The time the worker recorded the task done (its last chunk's inboxes written), not when
    // this loop saw it: the loop may poll seldom, and the lanes case's ms are what need a fast poll.
    const seconds = (finishedAt.getTime() - deliveryStart) / 1000;
    const redisCpu = (await redisCpuSeconds(redis)) - redisCpuBefore;
    const nodeCpu = cpuSeconds(workerProcesses) - nodeCpuBefore;
    const busiest = commandStatsDelta(statsBefore, await commandStats(redis)).slice(0, 6);
    if (smallSeconds === null) {
      // Waited for after the big one, which then counts as done.
      for (let waited = 0; !(await smallReached(smallMember)); waited += 5) {
        if (waited > 10_000) throw new Error('the small post did not reach its 10 inboxes');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      smallSeconds = (performance.now() - smallStart) / 1000;
      bigAtSmall = 'done';
    }
    const holding = await countHolding(
      redis,
      followerIds.map((id) => keys.feed(id)),
      inboxMember(blogId),
    );
    if (holding !== FOLLOWERS) throw new Error(`only ${holding} of ${FOLLOWERS} inboxes hold the blog`);
    return { seconds, redisCpu, nodeCpu, busiest, smallSeconds, bigAtSmall, benchmarkRate: 0, bare: null };
  };

  /** One publish by the full-inbox case's author until its task is done; every write trims one entry. */
  const deliverIntoFullInboxes = async (): Promise<FullRound> => {
    const fullKeys = fullIds.map((id) => keys.feed(id));
    const entries = (await redis.zcard(fullKeys[0])) - 1; // the sentinel is not an entry
    const encoding = String(await redis.object('ENCODING', fullKeys[0]));
    const redisCpuBefore = await redisCpuSeconds(redis);
    const post = await publish(full.token, 'into full inboxes');
    const start = Date.now() - post.elapsed;
    const blogId = fromGlobalId(post.id).id;
    let finishedAt = await doneAt(blogId, start);
    while (!finishedAt) {
      await new Promise((resolve) => setTimeout(resolve, DONE_POLL_MS));
      finishedAt = await doneAt(blogId, start);
    }
    const seconds = (finishedAt.getTime() - start) / 1000;
    const redisCpu = (await redisCpuSeconds(redis)) - redisCpuBefore;
    const holding = await countHolding(redis, fullKeys, inboxMember(blogId));
    if (holding !== FULL_INBOXES) throw new Error(`only ${holding} of ${FULL_INBOXES} full inboxes hold the blog`);
    const listpackEntries = (await redis.config('GET', 'zset-max-listpack-entries'))[1] ?? 'unknown';
    return { seconds, redisCpu, entries, encoding, listpackEntries };
  };

  const rounds: DeliveryRound[] = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    const measured = await deliverOnce(round);
    measured.benchmarkRate = await redisBenchmarkZadd(config, BENCHMARK_REQUESTS);
    measured.bare = await bareScriptedZadd(
      config,
      followerIds.map((id) => keys.feed(id)),
    );
    // Each round's redis-benchmark starts from no keys, as the first did.
    await deleteByPrefix(redis, `${config.redisKeyPrefix}zadd:`);
    rounds.push(measured);
  }
  const fullRound = FULL_INBOXES > 0 ? await deliverIntoFullInboxes() : null;
  if (profiler)
    console.log(`CPU profile of the deliveries written to ${await profiler.stop('fanout-delivery.cpuprofile')}`);
  await inProcess?.stop();
  await stopWorkerProcesses(workerProcesses);

  // 4. Baselines on the same Redis, from a plain client (the app's client auto-pipelines, which
  // would slow the seed's awaited loop and flatter our ratio).
  const plain = new Redis(config.redisUrl);
  const plainStart = performance.now();
  for (let start = 0; start < PLAIN_LOOP_SAMPLE; start += 1000) {
    const pipeline = plain.pipeline();
    for (const id of followerIds.slice(start, Math.min(start + 1000, PLAIN_LOOP_SAMPLE))) {
      const key = `${config.redisKeyPrefix}plain:${id}`;
      pipeline.zadd(key, 1, inboxMember(1)).zremrangebyrank(key, 0, -(config.feedMaxItems + 1));
    }
    await pipeline.exec();
  }
  const plainRate = PLAIN_LOOP_SAMPLE / ((performance.now() - plainStart) / 1000);
  const seedStartLoop = performance.now();
  for (const id of followerIds.slice(0, SEED_LOOP_SAMPLE)) {
    await plain.zadd(`${config.redisKeyPrefix}seed:${id}`, Date.now(), '1');
  }
  plain.disconnect();
  const seedRate = SEED_LOOP_SAMPLE / ((performance.now() - seedStartLoop) / 1000);

  const p50one = percentile(latencies.one, 50);
  const p50many = percentile(latencies.many, 50);
  console.log('');
  console.log(
    `publishBlog, 1 follower:       p50 ${ms(p50one)}  p99 ${ms(percentile(latencies.one, 99))}  (${PUBLISHES} requests)`,
  );
  console.log(
    `publishBlog, ${FOLLOWERS.toLocaleString('en-US')} followers: p50 ${ms(p50many)}  p99 ${ms(percentile(latencies.many, 99))}  (${PUBLISHES} requests)`,
  );
  console.log(`  ratio p50 N / p50 1: ${(p50many / p50one).toFixed(2)}x  (target <= 1.2x)`);
  console.log(
    `  workers: ${WORKER_PROCESSES > 0 ? `${WORKER_PROCESSES} process(es) x ${workersPerProcess()}` : `${Math.max(1, flag('workers', 1))} in this process`} x FANOUT_CONCURRENCY ${config.fanoutConcurrency}, FANOUT_CHUNK_SIZE ${config.fanoutChunkSize}; Node CPU: ${WORKER_PROCESSES > 0 ? 'the worker processes' : 'this process (API and workers)'}`,
  );
  rounds.forEach((round, i) => {
    const deliveryRate = FOLLOWERS / round.seconds;
    console.log(
      `delivery ${i + 1} of ${ROUNDS} to ${FOLLOWERS.toLocaleString('en-US')} inboxes: ${round.seconds.toFixed(2)} s from publish to the last inbox write = ${rate(deliveryRate)} inbox writes; redis-benchmark pipelined ZADD (-P 16, 50 clients, random keys) right after: ${rate(round.benchmarkRate)}, ratio ${(deliveryRate / round.benchmarkRate).toFixed(2)}x`,
    );
    console.log(
      `  Redis busy ${round.redisCpu.toFixed(2)} s (INFO cpu), ${((round.redisCpu / round.seconds) * 100).toFixed(0)}%; Node CPU ${round.nodeCpu.toFixed(2)} s; its busiest commands (INFO commandstats; a script's time includes the commands it calls): ${round.busiest
        .map((stat) => `${stat.command} ${stat.calls.toLocaleString('en-US')} calls ${(stat.usec / 1e6).toFixed(2)} s`)
        .join(', ')}`,
    );
    if (round.bare)
      console.log(
        `  the same inboxes' ZADD alone (a script doing one ZADD per inbox, ${SCRIPT_BATCH} a call, all sent at once): ${rate(round.bare.rate)}, Redis busy ${((round.bare.redisCpu / (FOLLOWERS / round.bare.rate)) * 100).toFixed(0)}%, ${((round.bare.redisCpu / FOLLOWERS) * 1e6).toFixed(1)} µs of Redis an inbox against the delivery's ${((round.redisCpu / FOLLOWERS) * 1e6).toFixed(1)}; delivery / that: ${(deliveryRate / round.bare.rate).toFixed(2)}x, that / redis-benchmark: ${(round.bare.rate / round.benchmarkRate).toFixed(2)}x`,
      );
    console.log(
      `  lanes: a ${SMALL_AUDIENCE}-follower post published right after it reached its ${SMALL_AUDIENCE} inboxes ${(round.smallSeconds * 1000).toFixed(0)} ms after its publish (target < 1 s); the big one then: ${round.bigAtSmall}`,
    );
  });
  if (fullRound) {
    const newInboxUs = percentile(
      rounds.map((round) => (round.redisCpu / FOLLOWERS) * 1e6),
      50,
    );
    console.log(
      `into ${FULL_INBOXES.toLocaleString('en-US')} full inboxes (${fullRound.entries} entries each, a ${fullRound.encoding}: zset-max-listpack-entries ${fullRound.listpackEntries}; each write trims one): ${fullRound.seconds.toFixed(2)} s from publish to the last inbox write = ${rate(FULL_INBOXES / fullRound.seconds)}; ${((fullRound.redisCpu / FULL_INBOXES) * 1e6).toFixed(1)} µs of Redis an inbox against ${newInboxUs.toFixed(1)} for the new inboxes above (median round)`,
    );
  }
  const ratios = rounds.map((round) => FOLLOWERS / round.seconds / round.benchmarkRate);
  const medianRate =
    FOLLOWERS /
    percentile(
      rounds.map((round) => round.seconds),
      50,
    );
  console.log(
    `plain pipelined ZADD + trim loop (one client, chunks of 1000, ${PLAIN_LOOP_SAMPLE.toLocaleString('en-US')} followers): ${rate(plainRate)}`,
  );
  console.log(
    `seed loop (one awaited ZADD per follower, ${SEED_LOOP_SAMPLE.toLocaleString('en-US')} followers): ${rate(seedRate)}`,
  );
  console.log(
    `  delivery / redis-benchmark ZADD: ${percentile(ratios, 50).toFixed(2)}x, the median of ${ROUNDS} rounds (${ratios.map((ratio) => `${ratio.toFixed(2)}x`).join(', ')})  (target >= 0.3x)`,
  );
  const bareRatios = rounds.flatMap((round) => (round.bare ? [round.bare.rate / round.benchmarkRate] : []));
  console.log(
    `  the inboxes' ZADD alone / redis-benchmark ZADD: ${percentile(bareRatios, 50).toFixed(2)}x, the median of ${bareRatios.length} rounds (the ceiling of a delivery that writes these inboxes; the delivery reaches ${percentile(
      rounds.flatMap((round) => (round.bare ? [FOLLOWERS / round.seconds / round.bare.rate] : [])),
      50,
    ).toFixed(2)}x of it)`,
  );
  console.log(`  delivery (median ${rate(medianRate)}) / plain pipelined: ${(medianRate / plainRate).toFixed(2)}x`);
  console.log(`  delivery (median) / seed loop:       ${(medianRate / seedRate).toFixed(1)}x  (target >= 10x)`);

  await deleteByPrefix(redis, config.redisKeyPrefix);
  await app.stop();
  await Promise.allSettled([db.close(), redis.quit()]);
}

/**
 * redis-benchmark's ZADD with pipelines of 16 from 50 clients on random keys of this run's
 * prefix, against the bench's Redis: the rate the server itself reaches for the write a delivery
 * makes. Its keys are deleted after.
 */
async function redisBenchmarkZadd(config: Config, requests: number): Promise<number> {
  const url = new URL(config.redisUrl);
  const key = `${config.redisKeyPrefix}zadd:__rand_int__`;
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn('redis-benchmark', [
      '-h',
      url.hostname,
      '-p',
      url.port || '6379',
      '-n',
      String(requests),
      '-P',
      '16',
      '-c',
      '50',
      '-r',
      '1000000',
      '-q',
      'zadd',
      key,
      '__rand_int__',
      'm',
    ]);
    let text = '';
    child.stdout.on('data', (chunk) => (text += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`redis-benchmark exited with ${code}: ${text}`)),
    );
  });
  // "zadd ...: 123456.79 requests per second, p50=..." (the last of its \r-separated updates).
  const match = /([\d.]+) requests per second/.exec(output.split('\r').pop() ?? output);
  if (!match) throw new Error(`redis-benchmark printed no rate: ${output.slice(-300)}`);
  return Number(match[1]);
}

interface CommandStat {
  command: string;
  calls: number;
  usec: number;
}

/** The only write of a delivery, and nothing else: one ZADD per inbox (scripts/deliver.lua without its checks). */
const BARE_ZADD = "for i = 1, #KEYS do redis.call('ZADD', KEYS[i], ARGV[1], ARGV[2]) end return #KEYS";

/**
 * What Redis does for a delivery's writes alone: BARE_ZADD into these inboxes (the delivery's
 * own, as the delivery left them), SCRIPT_BATCH a call, every call sent at once from a plain
 * client, as a delivery's chunk sends its calls. The rate is inboxes a second, from the first
 * call sent to the last reply; the member is taken out of every inbox again after.
 */
async function bareScriptedZadd(config: Config, inboxKeys: readonly string[]): Promise<BareZadd> {
  const client = new Redis(config.redisUrl);
  try {
    const member = 'bench-bare-zadd';
    const sha = (await client.script('LOAD', BARE_ZADD)) as string;
    const cpuBefore = await redisCpuSeconds(client);
    const started = performance.now();
    const calls: Array<Promise<unknown>> = [];
    for (let start = 0; start < inboxKeys.length; start += SCRIPT_BATCH) {
      const batch = inboxKeys.slice(start, start + SCRIPT_BATCH);
      calls.push(client.evalsha(sha, batch.length, ...batch, Date.now(), member));
    }
    await Promise.all(calls);
    const seconds = (performance.now() - started) / 1000;
    const redisCpu = (await redisCpuSeconds(client)) - cpuBefore;
    for (let start = 0; start < inboxKeys.length; start += 5000) {
      const pipeline = client.pipeline();
      for (const key of inboxKeys.slice(start, start + 5000)) pipeline.zrem(key, member);
      await pipeline.exec();
    }
    return { rate: inboxKeys.length / seconds, redisCpu };
  } finally {
    client.disconnect();
  }
}

interface BareZadd {
  /** Inboxes written a second. */
  rate: number;
  /** Redis's CPU seconds meanwhile. */
  redisCpu: number;
}

/** INFO commandstats: calls and microseconds per command so far. */
async function commandStats(redis: Redis): Promise<Map<string, CommandStat>> {
  const stats = new Map<string, CommandStat>();
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (match) stats.set(match[1], { command: match[1], calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats;
}

/** What each command cost between two readings, the costliest first. */
function commandStatsDelta(before: Map<string, CommandStat>, after: Map<string, CommandStat>): CommandStat[] {
  return [...after.values()]
    .map((stat) => ({
      command: stat.command,
      calls: stat.calls - (before.get(stat.command)?.calls ?? 0),
      usec: stat.usec - (before.get(stat.command)?.usec ?? 0),
    }))
    .filter((stat) => stat.calls > 0)
    .sort((a, b) => b.usec - a.usec);
}

/** FANOUT_WORKERS of each worker process (the benchmark's own app runs none: at least 1, as `npm run worker`). */
function workersPerProcess(): number {
  return Math.max(1, Number(process.env.FANOUT_WORKERS ?? 1));
}

/** CPU seconds (user + system) of these processes so far, from /proc (Linux); this process's own without any. */
function cpuSeconds(children: ChildProcess[]): number {
  if (children.length === 0) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }
  let ticks = 0;
  for (const child of children) {
    try {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      return NaN; // not Linux
    }
  }
  return ticks / 100;
}

/**
 * --worker-processes: fan-out worker processes (`node dist/src/worker.js`, as `npm run worker`
 * starts them) on the benchmark's database and key prefix; resolves once each says it runs.
 */
async function startWorkerProcesses(config: Config, count: number, profile: boolean): Promise<ChildProcess[]> {
  const env = {
    ...process.env,
    NODE_ENV: 'production',
    DATABASE_URL: config.databaseUrl,
    REDIS_URL: config.redisUrl,
    REDIS_KEY_PREFIX: config.redisKeyPrefix,
    JWT_SECRET: 'bench-worker-secret-unused-by-the-fan-out-worker',
    FANOUT_WORKERS: String(workersPerProcess()),
    // Each worker process's probes on a free port.
    WORKER_PORT: '0',
  };
  const started = Array.from({ length: count }, (_, i) => {
    const args = profile ? ['--cpu-prof', `--cpu-prof-name=fanout-worker-${i + 1}.cpuprofile`] : [];
    const child = spawn(process.execPath, [...args, 'dist/src/worker.js'], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return new Promise<ChildProcess>((resolve, reject) => {
      let output = '';
      child.stdout.on('data', (data: Buffer) => {
        output += data.toString();
        if (output.includes('fan-out worker running')) resolve(child);
      });
      child.once('exit', (code) => reject(new Error(`worker process ${i + 1} exited with ${code}: ${output}`)));
    });
  });
  const children = await Promise.all(started);
  // BullMQ's workers connect after the log line: let them reach the queue before the publish.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return children;
}

async function stopWorkerProcesses(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** CPU seconds the Redis server has used so far (user + system). */
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const read = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return read('used_cpu_user') + read('used_cpu_sys');
}

async function countHolding(redis: Redis, keys: string[], member: string): Promise<number> {
  let holding = 0;
  for (let start = 0; start < keys.length; start += 5000) {
    const pipeline = redis.pipeline();
    for (const key of keys.slice(start, start + 5000)) pipeline.zscore(key, member);
    for (const [, score] of (await pipeline.exec()) ?? []) if (score !== null) holding += 1;
  }
  return holding;
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
