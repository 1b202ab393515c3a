/**
 * `npm run seed [-- --users 200 --follows 20 --blogs 10 --likes 3000]`: demo data, so that a
 * person opening the API has a feed to scroll. Users demo1..demoN (one password for all),
 * follows, blogs spread over the last week with some same-millisecond ties, likes, and filled
 * inboxes. Uses the server's stores (DATABASE_URL and REDIS_URL, or with neither the embedded
 * SQLite file); refuses to run twice on the same database (the nickNames would clash).
 */
import 'reflect-metadata';
import { PasswordHasher } from '../src/auth/auth.passwords';
import { loadConfig } from '../src/kernel/config';
import { createFeedService } from '../src/composition';
import { isMysql } from '../src/db/mysql';
import { FanoutStore } from '../src/fanout/fanout.store';
import { describeStores, openStores } from '../src/stores';
import { nickNameKey } from '../src/user/user.service';

export const DEMO_PASSWORD = 'demo-password';

function flag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const raw =
    index >= 0 ? process.argv[index + 1] : process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number (got "${raw}")`);
  return value;
}

/** A progress bar on a terminal, a line per tenth elsewhere. */
function progress(label: string, total: number): (done: number) => void {
  let shown = -1;
  return (done) => {
    const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
    if (process.stdout.isTTY) {
      const filled = Math.round(percent / 4);
      process.stdout.write(`\r${label.padEnd(10)} [${'#'.repeat(filled)}${'.'.repeat(25 - filled)}] ${percent}%`);
      if (done >= total) process.stdout.write('\n');
    } else if (Math.floor(percent / 10) !== shown) {
      shown = Math.floor(percent / 10);
      console.log(`${label}: ${percent}%`);
    }
  };
}

async function main(): Promise<void> {
  const users = Math.max(2, flag('users', 200));
  const followsPerUser = Math.min(users - 1, flag('follows', 20));
  const blogsPerUser = flag('blogs', 10);
  const likes = flag('likes', 3000);
  const config = loadConfig();
  console.log(`Seeding ${describeStores(config)}`);
  const stores = await openStores(config, console);
  const { db, redis } = stores;
  const [{ n: existing }] = await db.select<{ n: number }>('SELECT COUNT(*) AS n FROM tb_user WHERE nick_key = ?', [
    'demo1',
  ]);
  if (Number(existing) > 0) {
    console.error('demo users already exist in this database (demo1, ...): nothing to do.');
    process.exit(1);
  }
  const now = Date.now();
  const hash = await new PasswordHasher(config.passwordHashCost).hash(DEMO_PASSWORD);

  const userBar = progress('users', users);
  const ids: number[] = [];
  for (let start = 1; start <= users; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, users - start + 1) }, (_, i) => `demo${start + i}`);
    await db.insertRows(
      'INSERT INTO tb_user (nick_name, nick_key, password, created_at) VALUES ?',
      batch.map((nick) => [nick, nickNameKey(nick), hash, new Date(now)]),
    );
    // The new ids, in demo order (an INSERT reports only one id, and which one differs by database).
    const rows = await db.select<{ id: number }>('SELECT id FROM tb_user WHERE nick_key IN (?) ORDER BY id', [
      batch.map(nickNameKey),
    ]);
    ids.push(...rows.map((row) => Number(row.id)));
    userBar(ids.length);
  }

  const followBar = progress('follows', users);
  for (let start = 0; start < users; start += 500) {
    const rows: unknown[][] = [];
    for (let u = start; u < Math.min(users, start + 500); u += 1) {
      for (let k = 1; k <= followsPerUser; k += 1) rows.push([ids[u], ids[(u + k * 7) % users], new Date(now)]);
    }
    await db.insertRows(
      'INSERT IGNORE INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?',
      rows.filter((r) => r[0] !== r[1]),
    );
    followBar(Math.min(users, start + 500));
  }
  await db.write(
    `UPDATE tb_user SET
       follower_count = (SELECT COUNT(*) FROM tb_follow f WHERE f.follow_user_id = tb_user.id),
       following_count = (SELECT COUNT(*) FROM tb_follow f WHERE f.user_id = tb_user.id)
     WHERE id BETWEEN ? AND ?`,
    [ids[0], ids[ids.length - 1]],
  );

  const blogBar = progress('blogs', users);
  const week = 7 * 24 * 3600 * 1000;
  for (let start = 0; start < users; start += 200) {
    const rows: unknown[][] = [];
    for (let u = start; u < Math.min(users, start + 200); u += 1) {
      for (let b = 0; b < blogsPerUser; b += 1) {
        const k = u * blogsPerUser + b;
        // Every 5th blog shares its millisecond with the one before: ties, as in real feeds.
        const slot = k % 5 === 0 && k > 0 ? k - 1 : k;
        const at = now - Math.floor((slot / (users * blogsPerUser)) * week);
        rows.push([
          ids[u],
          `Post ${b + 1} by demo${u + 1}`,
          `Something demo${u + 1} wanted to share (#${b + 1}).`,
          '[]',
          new Date(at),
        ]);
      }
    }
    await db.insertRows('INSERT INTO tb_blog (user_id, title, content, images, created_at) VALUES ?', rows);
    blogBar(Math.min(users, start + 200));
  }

  const blogIds = await db.select<{ id: string }>('SELECT id FROM tb_blog WHERE user_id BETWEEN ? AND ?', [
    ids[0],
    ids[ids.length - 1],
  ]);
  if (blogIds.length > 0 && likes > 0) {
    const rows = Array.from({ length: likes }, (_, i) => [
      Number(blogIds[(i * 31) % blogIds.length].id),
      ids[(i * 17) % users],
      new Date(now),
    ]);
    await db.insertRows('INSERT IGNORE INTO tb_blog_like (blog_id, user_id, created_at) VALUES ?', rows);
    await db.write(
      'UPDATE tb_blog SET liked = (SELECT COUNT(*) FROM tb_blog_like l WHERE l.blog_id = tb_blog.id) WHERE user_id BETWEEN ? AND ?',
      [ids[0], ids[ids.length - 1]],
    );
  }

  if (redis && config.feedModel !== 'pull') {
    const inboxBar = progress('inboxes', users);
    const feed = createFeedService(config, db, redis, {
      warn: (message) => console.warn(message),
      inFlight: isMysql(db) ? new FanoutStore(db, () => new Date()) : undefined,
    });
    for (let u = 0; u < users; u += 1) {
      await feed.rebuildInbox(ids[u]);
      inboxBar(u + 1);
    }
    await feed.syncWatermark();
  }

  console.log(`\nSeeded ${users} users, ${followsPerUser} follows each, ${blogsPerUser} blogs each, ${likes} likes.`);
  console.log(`Sign in as demo1 ... demo${users} with the password "${DEMO_PASSWORD}", e.g.`);
  console.log(`  mutation { login(nickName: "demo1", password: "${DEMO_PASSWORD}") { token } }`);
  await stores.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
