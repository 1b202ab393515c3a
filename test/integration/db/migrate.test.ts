/**
 * Migrations as a step of their own: `npm run migrate` (dist/scripts/migrate.js) migrates and
 * exits; with MIGRATE_ON_START=off a process runs no DDL, refuses a database that lacks
 * migrations, and runs the whole API and fan-out as a MySQL user with only SELECT, INSERT,
 * UPDATE and DELETE (the grants docs/operations.md's "Database users" gives the API and the workers).
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { SqlStatementLog } from '../../../src/db/database';
import { migrationNames } from '../../../src/db/migrate';
import { loadConfig } from '../../../src/kernel/config';
import { openStores } from '../../../src/stores';
import {
  dropDatabase,
  follow,
  MYSQL_URL,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TEST_JWT_SECRET,
  testDatabase,
} from '../../support/harness';
import { startDistProcess } from '../../support/processes';

const quiet = { info: () => {}, warn: () => {}, error: () => {} };
/** Every migration of this code. */
const COUNT = migrationNames().length;
const DATABASE = testDatabase('migrate_step');
const APP_DATABASE = testDatabase('migrate_app');
/** A user of this file's own (users are global to the server): SELECT, INSERT, UPDATE and DELETE on APP_DATABASE only. */
const APP_USER = `${testDatabase('app')}`.slice(0, 64);
const APP_PASSWORD = 'app-user-password';

async function rootQuery(statement: string, params: unknown[] = []): Promise<unknown> {
  const connection = await createConnection({ uri: MYSQL_URL });
  try {
    const [result] = await connection.query(statement, params);
    return result;
  } finally {
    await connection.end();
  }
}

/** Runs `npm run migrate`'s script; resolves with its exit code and output. */
async function runMigrate(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = startDistProcess(join('scripts', 'migrate.js'), { NODE_ENV: 'production', ...env });
  const code = await child.exited;
  return { code, output: child.output() };
}

const storesEnv = (databaseUrl: string, extra: Record<string, string> = {}) =>
  loadConfig({
    NODE_ENV: 'production',
    JWT_SECRET: TEST_JWT_SECRET,
    DATABASE_URL: databaseUrl,
    REDIS_URL: 'redis://127.0.0.1:6379/0',
    ...extra,
  });

describe('on MySQL', () => {
  afterAll(async () => {
    await dropDatabase(DATABASE);
    await dropDatabase(APP_DATABASE);
    await rootQuery(`DROP USER IF EXISTS '${APP_USER}'@'%'`);
  });

  test('a production process refuses a database that lacks migrations and says to run npm run migrate, which runs them once', async () => {
    await dropDatabase(DATABASE);
    await rootQuery(`CREATE DATABASE ${DATABASE}`);
    const config = storesEnv(`${MYSQL_URL}/${DATABASE}`);
    expect(config.operations.migrateOnStart).toBe(false);
    const refused = openStores(config, quiet, new SqlStatementLog(quiet));
    await expect(refused).rejects.toThrow(
      `cannot open the database of DATABASE_URL (${MYSQL_URL}/${DATABASE}): ${COUNT} migration(s) not run yet (CreateFeedTables1764489600000, `,
    );
    await expect(refused).rejects.toThrow(/: run `npm run migrate` first \(MIGRATE_ON_START=off\)$/);
    // It ran no DDL: not even TypeORM's own table.
    expect(
      await rootQuery('SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [DATABASE]),
    ).toEqual([{ n: 0 }]);

    const first = await runMigrate({ DATABASE_URL: `${MYSQL_URL}/${DATABASE}` });
    expect(first.code).toBe(0);
    expect(first.output).toContain(
      `"ran ${COUNT} migration(s) on MySQL ${MYSQL_URL}/${DATABASE}: CreateFeedTables1764489600000, `,
    );
    const second = await runMigrate({ DATABASE_URL: `${MYSQL_URL}/${DATABASE}` });
    expect(second.code).toBe(0);
    expect(second.output).toMatch(/"no pending migrations on MySQL /);

    const stores = await openStores(config, quiet, new SqlStatementLog(quiet));
    await stores.close();
  });

  test('the API and its fan-out run as a user without DDL rights when MIGRATE_ON_START=off', async () => {
    await dropDatabase(APP_DATABASE);
    expect((await runMigrate({ DATABASE_URL: `${MYSQL_URL}/${APP_DATABASE}` })).code).toBe(0);
    await rootQuery(`DROP USER IF EXISTS '${APP_USER}'@'%'`);
    await rootQuery(`CREATE USER '${APP_USER}'@'%' IDENTIFIED BY '${APP_PASSWORD}'`);
    await rootQuery(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${APP_DATABASE}.* TO '${APP_USER}'@'%'`);
    const appUrl = `mysql://${APP_USER}:${APP_PASSWORD}@127.0.0.1:${new URL(MYSQL_URL).port || 3306}/${APP_DATABASE}`;

    // The user really has no DDL rights: migrating on start fails for it.
    const denied = await createConnection({ uri: appUrl });
    await expect(denied.query('CREATE TABLE t_ddl (id INT)')).rejects.toMatchObject({
      code: 'ER_TABLEACCESS_DENIED_ERROR',
    });
    await denied.end();
    await expect(
      openStores(storesEnv(appUrl, { MIGRATE_ON_START: 'on' }), quiet, new SqlStatementLog(quiet)),
    ).rejects.toThrow(/denied/i);

    const app = await startTestApp('migrate_dml', {
      env: { DATABASE_URL: appUrl, MIGRATE_ON_START: 'off', FANOUT_WORKERS: '1', FEED_MODEL: 'push' },
    });
    try {
      const [reader, author] = [await signUp(app, 'reader'), await signUp(app, 'author')];
      await follow(app, reader, author);
      const blog = await publish(app, author, 'written by a user without DDL rights');
      await app.services.fanout?.idle(30_000);
      expect(await scrollFeed(app, reader, 10)).toEqual([blog]);
    } finally {
      await app.close();
    }
  });
});

test('the embedded file too: refused while unmigrated with MIGRATE_ON_START=off, migrated by npm run migrate', async () => {
  const file = join(tmpdir(), `${testDatabase('migrate_embedded')}.sqlite`);
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
  const config = loadConfig({
    NODE_ENV: 'production',
    JWT_SECRET: TEST_JWT_SECRET,
    EMBEDDED_DB_FILE: file,
    MIGRATE_ON_START: 'off',
  });
  await expect(openStores(config, quiet, new SqlStatementLog(quiet))).rejects.toThrow(
    `${COUNT} migration(s) not run yet (`,
  );
  const ran = await runMigrate({ EMBEDDED_DB_FILE: file });
  expect(ran.code).toBe(0);
  expect(ran.output).toContain(`"ran ${COUNT} migration(s) on the embedded SQLite file `);
  const stores = await openStores(config, quiet, new SqlStatementLog(quiet));
  await stores.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
});
