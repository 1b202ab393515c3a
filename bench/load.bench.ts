/**
 * `npm run bench:load [-- --duration 60 --clients 64]`: a mixed workload against one server as
 * `npm start` runs it (hybrid model, one in-process fan-out worker, NODE_ENV=production,
 * RATE_LIMITS=off): about 90% feed pages, 5% likes, 4% follows, 1% publishes, from 64
 * concurrent clients for 60 s, in a separate process. Prints throughput, p50/p99 per operation
 * and the error count, which must be 0.
 */
import './production-mode';
import 'reflect-metadata';
import { Redis } from 'ioredis';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp } from '../src/app';
import { SqlStatementLog } from '../src/db/database';
import { openMysql } from '../src/db/migrate';
import { warn } from '../src/kernel/observability';
import { poolLimits } from '../src/stores';
import { toGlobalId } from '../src/kernel/global-id';
import { createRedis } from '../src/redis/redis.client';
import { benchConfig, flag, freshBenchDatabase, ms, outputOf, rate } from './bench.support';

const DURATION = flag('duration', 60);
const CLIENTS = flag('clients', 64);
const READERS = 200;
const AUTHORS = 100;
const BLOGS_PER_AUTHOR = 50;
const FIRST_ID = 2_000_000;

async function main(): Promise<void> {
  const databaseUrl = await freshBenchDatabase('feed_bench_load');
  const config = benchConfig({ DATABASE_URL: databaseUrl, REDIS_KEY_PREFIX: 'bench:load:' });
  const db = await openMysql(config.databaseUrl, new SqlStatementLog(console), poolLimits(config));
  const redis = createRedis(config, (message) => console.warn(message)) as Redis;
  const now = Date.now();
  const authors = Array.from({ length: AUTHORS }, (_, i) => FIRST_ID + i);
  const readers = Array.from({ length: READERS }, (_, i) => FIRST_ID + 10_000 + i);
  await db.query('INSERT INTO tb_user (id, nick_name, nick_key, password, created_at) VALUES ?', [
    [...authors, ...readers].map((id) => [id, `u${id}`, `u${id}`, 'not-a-hash', new Date(now)]),
  ]);
  await db.query('INSERT INTO tb_blog (user_id, title, content, images, created_at) VALUES ?', [
    authors.flatMap((author, a) =>
      Array.from({ length: BLOGS_PER_AUTHOR }, (_, i) => [
        author,
        `blog ${a}.${i}`,
        'content',
        '[]',
        new Date(now - 3_600_000 + (a * BLOGS_PER_AUTHOR + i) * 11),
      ]),
    ),
  ]);
  const follows = readers.flatMap((reader, r) =>
    Array.from({ length: 30 }, (_, k) => [reader, authors[(r * 3 + k * 7) % AUTHORS], new Date(now)]),
  );
  await db.query('INSERT IGNORE INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', [follows]);
  await db.query(
    'UPDATE tb_user u SET follower_count = (SELECT COUNT(*) FROM tb_follow f WHERE f.follow_user_id = u.id), following_count = (SELECT COUNT(*) FROM tb_follow f WHERE f.user_id = u.id)',
  );
  const blogIds: Array<{ id: string }> = await db.query('SELECT id FROM tb_blog ORDER BY RAND() LIMIT 2000');

  const app = await startApp({ config, db, redis });
  // Inboxes are made and written only once the Redis generation is confirmed.
  await app.services.feed.ready();
  for (const reader of readers) await app.services.feed.rebuildInbox(reader);
  await app.services.feed.syncWatermark();
  console.log(`mixed load: ${CLIENTS} clients for ${DURATION} s against ${app.url} (hybrid, 1 fan-out worker)`);
  const file = join(mkdtempSync(join(tmpdir(), 'feed-mixed-')), 'spec.json');
  writeFileSync(
    file,
    JSON.stringify({
      url: app.url,
      tokens: readers.map((id) => app.services.tokens.issue(id, 0)),
      userIds: authors.map((id) => toGlobalId('User', id)),
      blogIds: blogIds.map((row) => toGlobalId('Blog', Number(row.id))),
      clients: CLIENTS,
      durationSeconds: DURATION,
    }),
  );
  const child = spawn(process.execPath, [join(__dirname, 'mixed.runner.js'), file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { code, output } = await outputOf(child);
  if (code !== 0) throw new Error(`the load runner exited with ${code}`);
  const result = JSON.parse(output.trim().split('\n').pop()!) as Record<string, any>;

  let total = 0;
  let errors = 0;
  console.log('');
  for (const operation of ['feed', 'like', 'follow', 'publish']) {
    const r = result[operation];
    total += r.count;
    errors += r.errors;
    console.log(
      `${operation.padEnd(8)} ${String(r.count).padStart(7)} requests  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  errors ${r.errors}${r.firstError ? `  first: ${r.firstError}` : ''}`,
    );
  }
  console.log(
    `total    ${String(total).padStart(7)} requests in ${result.seconds.toFixed(1)} s = ${rate(total / result.seconds)}, errors ${errors}`,
  );
  await app.services.fanout?.idle(120_000).catch((error: unknown) => warn('fan-out still running at the end', error));
  await app.stop();
  await Promise.allSettled([db.close(), redis.quit()]);
  if (errors > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
