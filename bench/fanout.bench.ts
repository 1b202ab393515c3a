/**
 * `npm run bench:fanout [-- --followers 1000000]`: what publishing and fan-out cost.
 *
 * 1. Seeds N followers of one author (bulk INSERTs: active users with empty inboxes, as fan-out
 *    writes only to existing inboxes) and 1 follower of another.
 * 2. publishBlog latency over HTTP, p50/p99, for both authors, with the fan-out workers stopped
 *    so that the figure is the request alone (the events wait in the outbox/queue).
 * 3. Delivery: with the workers running, one publish by the big author; the time until the
 *    fan-out task is done and all N inboxes hold the blog (checked), and inbox writes per second.
 * 4. Baselines on the same Redis, in the same run: a plain pipelined ZADD + trim loop from one
 *    Node client (chunks of 1000; up to --plain-sample followers, default 200,000), and the
 *    seed's loop with one awaited ZADD per follower (--seed-sample, default 20,000).
 *
 * Flags: --followers N (default 100,000), --publishes N (latency samples, default 60),
 * --workers N (fan-out workers in this process, default 1), --profile (write a CPU profile of
 * the delivery). FANOUT_CONCURRENCY and the other FANOUT_* settings apply.
 *
 * Uses DATABASE_URL's server with database feed_bench (re-created) and REDIS_URL with the key
 * prefix bench:fanout: (emptied before and after).
 */
import 'reflect-metadata';
import { Redis } from 'ioredis';
import { startApp } from '../src/app';
import { createInbox, startFanoutWorkers } from '../src/composition';
import { SqlStatementLog } from '../src/db/database';
import { openMysql } from '../src/db/migrate';
import { poolLimits } from '../src/stores';
import { warn } from '../src/kernel/observability';
import { fromGlobalId } from '../src/kernel/global-id';
import { inboxMember, RedisKeys } from '../src/redis/keys';
import { createRedis } from '../src/redis/redis.client';
import { benchConfig, deleteByPrefix, flag, freshBenchDatabase, graphql, ms, percentile, progress, rate, startProfiler } from './bench.support';

const FOLLOWERS = flag('followers', 100_000);
const PUBLISHES = flag('publishes', 60);
const SEED_LOOP_SAMPLE = Math.min(FOLLOWERS, flag('seed-sample', 20_000));
const PLAIN_LOOP_SAMPLE = Math.min(FOLLOWERS, flag('plain-sample', 200_000));
const FIRST_FOLLOWER_ID = 10_000_000;

async function main(): Promise<void> {
  const databaseUrl = await freshBenchDatabase('feed_bench');
  const config = benchConfig({ DATABASE_URL: databaseUrl, REDIS_KEY_PREFIX: 'bench:fanout:', FANOUT_WORKERS: '0', PASSWORD_HASH_COST: '1024' });
  const db = await openMysql(config.databaseUrl, new SqlStatementLog(console), poolLimits(config));
  const redis = createRedis(config, (message) => console.warn(message)) as Redis;
  await deleteByPrefix(redis, config.redisKeyPrefix);
  const app = await startApp({ config, db, redis });
  console.log(`fan-out benchmark: ${FOLLOWERS.toLocaleString('en-US')} followers, Redis ${config.redisUrl}, MySQL ${databaseUrl}`);

  // 1. Seed.
  const signUp = async (nickName: string) =>
    (await graphql(app.url, 'mutation($n: String!) { signUp(nickName: $n, password: "bench-password") { token user { id } } }', { n: nickName })).signUp;
  const big = await signUp('big-author');
  const small = await signUp('small-author');
  const bigId = fromGlobalId(big.user.id).id;
  const smallId = fromGlobalId(small.user.id).id;
  const followerIds = Array.from({ length: FOLLOWERS }, (_, i) => FIRST_FOLLOWER_ID + i);
  const keys = new RedisKeys(config.redisKeyPrefix);
  const inbox = createInbox({ ...config, feedModel: 'push' }, redis)!;
  const seeded = progress('seeding followers', FOLLOWERS);
  const seedStart = performance.now();
  for (let start = 0; start < FOLLOWERS; start += 10_000) {
    const batch = followerIds.slice(start, start + 10_000);
    // Active users with (empty, valid) inboxes, as fan-out writes only to those.
    await db.query('INSERT INTO tb_user (id, nick_name, nick_key, password, created_at) VALUES ?', [
      batch.map((id) => [id, `f${id}`, `f${id}`, 'not-a-hash', new Date()]),
    ]);
    await db.query('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', [batch.map((id) => [id, bigId, new Date()])]);
    await Promise.all(batch.map((id) => inbox.create(id, 0)));
    seeded(Math.min(FOLLOWERS, start + 10_000));
  }
  await db.query('INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES (?, ?, ?)', [FIRST_FOLLOWER_ID, smallId, new Date()]);
  console.log(`seeded in ${ms(performance.now() - seedStart)}`);

  // 2. Publish latency, the request alone.
  const publish = async (token: string, title: string) => {
    const started = performance.now();
    const data = await graphql(app.url, 'mutation($t: String!) { publishBlog(input: { title: $t, content: "bench" }) { id } }', { t: title }, token);
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

  // 3. Delivery with the workers running.
  const workers = startFanoutWorkers({ config, redis, fanoutQueue, metrics: app.services.metrics, warn }, Math.max(1, flag('workers', 1)), {
    kind: 'shared',
    db,
  });
  const profiler = process.argv.includes('--profile') ? await startProfiler() : null;
  const redisCpuBefore = await redisCpuSeconds(redis);
  const delivery = await publish(big.token, 'delivered');
  const deliveryStart = performance.now() - delivery.elapsed;
  const blogId = fromGlobalId(delivery.id).id;
  for (;;) {
    const [task] = await db.query("SELECT status FROM tb_fanout_task WHERE blog_id = ? AND kind = 'deliver'", [blogId]);
    if (task?.status === 'done') break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const deliverySeconds = (performance.now() - deliveryStart) / 1000;
  const redisCpu = (await redisCpuSeconds(redis)) - redisCpuBefore;
  if (profiler) console.log(`CPU profile of the delivery written to ${await profiler.stop('fanout-delivery.cpuprofile')}`);
  await workers.stop();
  const holding = await countHolding(
    redis,
    followerIds.map((id) => keys.feed(id)),
    inboxMember(blogId),
  );
  if (holding !== FOLLOWERS) throw new Error(`only ${holding} of ${FOLLOWERS} inboxes hold the blog`);

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

  const deliveryRate = FOLLOWERS / deliverySeconds;
  const p50one = percentile(latencies.one, 50);
  const p50many = percentile(latencies.many, 50);
  console.log('');
  console.log(`publishBlog, 1 follower:       p50 ${ms(p50one)}  p99 ${ms(percentile(latencies.one, 99))}  (${PUBLISHES} requests)`);
  console.log(
    `publishBlog, ${FOLLOWERS.toLocaleString('en-US')} followers: p50 ${ms(p50many)}  p99 ${ms(percentile(latencies.many, 99))}  (${PUBLISHES} requests)`,
  );
  console.log(`  ratio p50 N / p50 1: ${(p50many / p50one).toFixed(2)}x  (target <= 1.2x)`);
  console.log(
    `delivery to ${FOLLOWERS.toLocaleString('en-US')} inboxes: ${deliverySeconds.toFixed(2)} s from publish to the last inbox write = ${rate(deliveryRate)} inbox writes`,
  );
  console.log(
    `  Redis was busy ${redisCpu.toFixed(2)} s of those ${deliverySeconds.toFixed(2)} s (INFO cpu), ${((redisCpu / deliverySeconds) * 100).toFixed(0)}%`,
  );
  console.log(`plain pipelined ZADD + trim loop (one client, chunks of 1000, ${PLAIN_LOOP_SAMPLE.toLocaleString('en-US')} followers): ${rate(plainRate)}`);
  console.log(`seed loop (one awaited ZADD per follower, ${SEED_LOOP_SAMPLE.toLocaleString('en-US')} followers): ${rate(seedRate)}`);
  console.log(`  delivery / plain pipelined: ${(deliveryRate / plainRate).toFixed(2)}x  (target >= 0.7x)`);
  console.log(`  delivery / seed loop:       ${(deliveryRate / seedRate).toFixed(1)}x  (target >= 10x)`);

  await deleteByPrefix(redis, config.redisKeyPrefix);
  await app.stop();
  await Promise.allSettled([db.close(), redis.quit()]);
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
