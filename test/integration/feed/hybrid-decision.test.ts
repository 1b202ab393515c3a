/**
 * The hybrid model's decision per publish (FeedStore.hasFewerFollowers): whether an author's new
 * blog goes into inboxes. The calls of one turn of the event loop (the publishes that start
 * together under load) share one statement beside their transactions; a call alone reads in its
 * own transaction. Either way each call gets its own author's answer.
 */
import type { Sql } from '../../../src/db/database';
import { SqlStatementLog } from '../../../src/db/database';
import { MysqlPool } from '../../../src/db/mysql';
import { FeedStore } from '../../../src/feed/feed.store';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { MYSQL_URL, signUp, startTestApp, TestApp, testDatabase } from '../../support/harness';

let app: TestApp;
let pool: MysqlPool;
/** The first words of each statement the store ran on its own pool. */
const onPool: string[] = [];

beforeAll(async () => {
  app = await startTestApp('hybrid_decision', { env: { FEED_MODEL: 'hybrid' } });
  const log = new SqlStatementLog(console);
  log.ran = (statement) => void onPool.push(statement.replace(/\s+/g, ' ').slice(0, 60));
  pool = new MysqlPool(`${MYSQL_URL}/${testDatabase('hybrid_decision')}`, { poolSize: 2, statementTimeoutMs: 0 }, log);
});
afterAll(async () => {
  await pool.close();
  await app.close();
});

/** A stand-in for a publishing transaction's `sql` that records what ran in it (on the test's connection). */
function transactionOf(ran: string[]): Sql {
  return {
    select: (statement, params) => {
      ran.push(statement);
      return app.db.select(statement, params);
    },
    write: (statement, params) => {
      ran.push(statement);
      return app.db.write(statement, params);
    },
  };
}

async function authorWithFollowers(name: string, followers: number): Promise<number> {
  const id = fromGlobalId((await signUp(app, name)).id).id;
  await app.db.query('UPDATE tb_user SET follower_count = ? WHERE id = ?', [followers, id]);
  return id;
}

it("answers the calls of one turn in one statement beside their transactions, each its own author's", async () => {
  const store = new FeedStore(pool);
  const small = await authorWithFollowers('decide-small', 9);
  const big = await authorWithFollowers('decide-big', 10);
  const none = await authorWithFollowers('decide-none', 0);
  const inTransactions: string[][] = [[], [], [], []];
  onPool.length = 0;
  const answers = await Promise.all(
    [small, big, none, big].map((authorId, i) =>
      store.hasFewerFollowers(transactionOf(inTransactions[i]), authorId, 10),
    ),
  );
  expect(answers).toEqual([true, false, true, false]);
  expect(onPool).toEqual(['SELECT id, follower_count FROM tb_user WHERE id IN (?, ?, ?)']);
  expect(inTransactions).toEqual([[], [], [], []]);
});

it('reads a call alone in its turn in its own transaction, and takes an author without a row for one without followers', async () => {
  const store = new FeedStore(pool);
  const big = await authorWithFollowers('decide-alone', 50);
  const ran: string[] = [];
  onPool.length = 0;
  expect(await store.hasFewerFollowers(transactionOf(ran), big, 50)).toBe(false);
  expect(await store.hasFewerFollowers(transactionOf(ran), big, 51)).toBe(true);
  expect(await store.hasFewerFollowers(transactionOf(ran), 987_654_321, 1)).toBe(true);
  expect(ran).toHaveLength(3);
  expect(onPool).toEqual([]);
});
