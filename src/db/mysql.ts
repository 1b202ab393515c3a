/**
 * The MySQL (or MariaDB) Database: two mysql2 pools, used through their callback API so that a
 * statement costs one promise and nothing else (no per-query wrapper object, no captured stack:
 * `trace: false`). See database.ts for the rules every store follows.
 *
 * Why separate pools (DATABASE_POOL_SIZE connections each): single statements (a page's reads, most
 * of a request's) and transactions take their connections from pools of their own, a bulkhead.
 * A transaction holds its connection for several round trips, some of them to Redis (a publish
 * takes the new blog's cache lease and enters the fan-out watermark before its commit), and for
 * its commit's flush of the redo log. In one pool, a burst of writes, or a Redis that hangs while
 * publishes wait on it up to their deadline, could take every connection and queue the reads behind
 * them, pages that fall back to MySQL included; now neither kind can take the other's
 * connections, and a transaction that awaits a single statement cannot starve itself of one.
 * (bench:mixed did not tell the two layouts apart on a machine with 2 cores: the mix ran at
 * 0.75x of its parts with one pool of 10 and 0.74x with 10 + 10, within the run-to-run spread.)
 * Connections open only when needed, so an idle pool costs nothing.
 *
 * Why transactions that ask for a level have a pool per level (READ COMMITTED: the follow changes,
 * follow, mute, block; REPEATABLE READ: the feed's rebuild snapshots): the level is set once per
 * connection, on its session, instead of with a SET TRANSACTION before each transaction, one round
 * trip fewer a follow (8.1 statements in bench:mixed before). In one pool, a session level would
 * leak into the other transactions, and mysql2 hands out the connection released last, so setting
 * it back and forth would move the round trip, not save it. The snapshots' pool is also a
 * bulkhead: after a Redis loss every active reader's inbox is rebuilt, FEED_REBUILDS_IN_FLIGHT at a
 * time per process (feed.service.ts), each holding a connection for its snapshot's statements;
 * on the pool of the writes they held 8 of its 10 connections (when 8 ran at once), and
 * publishes, likes and follows queued behind them. It has as many connections as rebuilds run.
 * Only processes that run such transactions open connections of these pools (the fan-out
 * workers open neither).
 */
import mysql, { Pool, PoolConnection, PoolOptions } from 'mysql2';
import {
  Database,
  insertInBatches,
  Isolation,
  isTransient,
  LogSink,
  MysqlDatabase,
  Params,
  Sql,
  SqlStatementLog,
  WriteResult,
} from './database';

/** The limits of a pool (DATABASE_POOL_SIZE, DATABASE_STATEMENT_TIMEOUT_MS). */
export interface PoolLimits {
  /** Connections in each pool (single statements, transactions, and transactions at each level asked for). */
  poolSize: number;
  /**
   * Connections of the REPEATABLE READ pool when more than poolSize (the feed's rebuild snapshots,
   * FEED_REBUILDS_IN_FLIGHT at once after a Redis loss); those beyond poolSize close after a
   * minute idle (mysql2's idleTimeout), so the burst of a loss does not stay open.
   */
  snapshotPoolSize?: number;
  /** 0 = statements may run as long as they like (migrations, tools). */
  statementTimeoutMs: number;
  /**
   * A connection or statement without an answer after this long fails on the client's side
   * (the replicas' pools: a frozen server must not hold a request); unset = mysql2's defaults.
   */
  clientTimeoutMs?: number;
}

/**
 * Attempts of a transaction that InnoDB rolled back as a deadlock victim (or after a lock wait
 * timeout). Concurrent follows, mutes and blocks of the same users take their rows in different
 * orders (a follow its follow row first, a mute its user row), and a burst of them made one
 * transaction the victim three times in a row under CI's load.
 */
const TRANSACTION_ATTEMPTS = 5;

/**
 * Before attempt n + 1, a random wait of up to RETRY_JITTER_MS * 2^(n - 1) ms (5, 10, 20, 40):
 * transactions that deadlocked together and run again at once tend to meet again in the same
 * order; a random wait lets one of them finish first.
 */
const RETRY_JITTER_MS = 5;

type Runner = Pick<Pool, 'query'> | Pick<PoolConnection, 'query'>;

export class MysqlPool implements MysqlDatabase {
  readonly dialect = 'mysql' as const;
  /** Single statements (autocommit). */
  private readonly statements: Pool;
  /** Transactions: a connection each, from its first statement to COMMIT or ROLLBACK. */
  private readonly transactions: Pool;
  /** Transactions that ask for a level: the same, on connections whose session runs at that level. */
  private readonly atLevel: Record<Isolation, Pool>;
  /**
   * The transaction pools' connections whose session is set up (see transactionOnce): autocommit
   * off, and in atLevel's pools the level; only those may start a transaction with their first statement.
   */
  private readonly prepared = new WeakSet<PoolConnection>();
  private readonly clientTimeoutMs: number | undefined;

  constructor(
    databaseUrl: string,
    limits: PoolLimits,
    private readonly log: SqlStatementLog,
  ) {
    const options: PoolOptions = {
      uri: databaseUrl,
      connectionLimit: limits.poolSize,
      // utf8mb4 end to end, and UTC so DATETIME(3) <-> epoch ms is exact whatever the host zone.
      charset: 'utf8mb4_unicode_ci',
      timezone: 'Z',
      // BIGINT ids arrive as strings (exact); the stores turn them into numbers (ids stay far below 2^53).
      supportBigNumbers: true,
      bigNumberStrings: true,
      // No stack captured per statement: an error still says what failed, and the hot path saves the capture.
      trace: false,
      enableKeepAlive: true,
      ...(limits.clientTimeoutMs === undefined ? {} : { connectTimeout: limits.clientTimeoutMs }),
    };
    this.clientTimeoutMs = limits.clientTimeoutMs;
    this.statements = createPool(options, limits, log.sink);
    this.transactions = createPool(options, limits, log.sink);
    this.atLevel = {
      'READ COMMITTED': createPool(options, limits, log.sink),
      'REPEATABLE READ': createPool(
        {
          ...options,
          connectionLimit: Math.max(limits.poolSize, limits.snapshotPoolSize ?? 0),
          maxIdle: limits.poolSize,
        },
        limits,
        log.sink,
      ),
    };
  }

  select<Row>(statement: string, params: Params = []): Promise<Row[]> {
    return this.run<Row[]>(this.statements, statement, params);
  }

  write(statement: string, params: Params = []): Promise<WriteResult> {
    return this.run<WriteResult>(this.statements, statement, params);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw results for scripts and tests, whose callers know the shape
  query<T = any>(statement: string, params: Params = []): Promise<T> {
    return this.run<T>(this.statements, statement, params);
  }

  insertRows(statement: string, rows: readonly unknown[][]): Promise<void> {
    return insertInBatches(this, statement, rows);
  }

  /**
   * A SELECT on a connection of its own, whose failure says whether the statement had left this
   * process: it rejects with StatementNotSent when no connection could be had (the server is
   * unreachable, refuses, or the connection was already closed), else with the driver's error.
   * A replica's read (replicas.ts) may be run again on the primary only in the first case: one
   * that timed out may still be running on the replica.
   */
  async selectOnce<Row>(statement: string, params: Params = []): Promise<Row[]> {
    const connection = await this.connection(this.statements).catch((error: unknown) => {
      throw new StatementNotSent(error);
    });
    try {
      const rows = await this.run<Row[]>(connection, statement, params);
      connection.release();
      return rows;
    } catch (error) {
      // A connection that timed out or broke is in an unknown state: it leaves the pool.
      if ((error as { fatal?: boolean }).fatal) connection.destroy();
      else connection.release();
      if (/closed state/.test(String((error as Error).message))) throw new StatementNotSent(error);
      throw error;
    }
  }

  unionTerm(select: string, _columns: string, _alias: string): string {
    return `(${select})`;
  }

  /** A pool without replicas reads everything itself. */
  lagging(): Sql {
    return this;
  }

  async now(): Promise<number> {
    const [row] = await this.select<{ ms: string }>('SELECT ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS ms');
    return Number(row.ms);
  }

  async transaction<T>(work: (sql: Sql) => Promise<T>, isolation?: Isolation): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.transactionOnce(work, isolation);
      } catch (error) {
        if (attempt >= TRANSACTION_ATTEMPTS || !isTransient(error)) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * RETRY_JITTER_MS * 2 ** (attempt - 1)));
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.statements, this.transactions, ...Object.values(this.atLevel)].map(endPool));
  }

  private connection(pool: Pool): Promise<PoolConnection> {
    return new Promise<PoolConnection>((resolve, reject) =>
      pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection))),
    );
  }

  private async transactionOnce<T>(work: (sql: Sql) => Promise<T>, isolation: Isolation | undefined): Promise<T> {
    const connection = await this.connection(isolation ? this.atLevel[isolation] : this.transactions);
    const sql: Sql = {
      select: <Row>(statement: string, params: Params = []) => this.run<Row[]>(connection, statement, params),
      write: (statement: string, params: Params = []) => this.run<WriteResult>(connection, statement, params),
    };
    let reusable = true;
    try {
      // No START TRANSACTION: these pools' connections run with autocommit off, so the first
      // statement starts the transaction (InnoDB takes its snapshot at the first read either
      // way), one round trip fewer per transaction. Each round trip is a socket write that wakes a
      // MariaDB thread, which on a small machine preempts this process: in bench:mixed a publish's
      // five statements cost the server more than its JavaScript. Every transaction ends in COMMIT
      // or ROLLBACK (or its connection is destroyed), so none goes back to the pool open. A
      // connection is set up on its first transaction, and trusted only once that succeeded.
      // A level asked for is set on the session even where it is the server's default (InnoDB's
      // is REPEATABLE READ, but a server may be set otherwise). `isolation` is one of the two
      // constants of Isolation, never input.
      if (!this.prepared.has(connection)) {
        await this.run(connection, 'SET SESSION autocommit = 0', []);
        if (isolation) await this.run(connection, `SET SESSION TRANSACTION ISOLATION LEVEL ${isolation}`, []);
        this.prepared.add(connection);
      }
      const result = await work(sql);
      await this.run(connection, 'COMMIT', []);
      return result;
    } catch (error) {
      // A connection whose rollback failed is in an unknown state: it leaves the pool.
      await this.run(connection, 'ROLLBACK', []).catch(() => {
        reusable = false;
      });
      throw error;
    } finally {
      if (reusable) connection.release();
      else connection.destroy();
    }
  }

  private run<T>(runner: Runner, statement: string, params: Params): Promise<T> {
    const started = performance.now();
    return new Promise<T>((resolve, reject) => {
      // Always the options form: mysql2 treats a missing timeout as none.
      runner.query(
        { sql: statement, timeout: this.clientTimeoutMs },
        params as unknown[],
        (error: Error | null, result: unknown) => {
          this.log.ran(statement, performance.now() - started);
          if (error) reject(error);
          else resolve(result as T);
        },
      );
    });
  }
}

/** A pool whose connections each stop statements after DATABASE_STATEMENT_TIMEOUT_MS (when set). */
function createPool(options: PoolOptions, limits: PoolLimits, sink: LogSink): Pool {
  const pool = mysql.createPool(options);
  if (limits.statementTimeoutMs > 0) limitStatementTime(pool, limits.statementTimeoutMs, sink);
  return pool;
}

function endPool(pool: Pool): Promise<void> {
  return new Promise((resolve, reject) => pool.end((error) => (error ? reject(error) : resolve())));
}

/** A statement that never reached the server: running it elsewhere runs it once. `cause` is the driver's error. */
export class StatementNotSent extends Error {
  override name = 'StatementNotSent';

  constructor(override readonly cause: unknown) {
    super(`the statement was not sent: ${String((cause as Error)?.message ?? cause)}`);
  }
}

/** What limitStatementTime needs of mysql2's connections (callback API). */
/**
 * The server's version string from the connection's handshake. mysql2 keeps the handshake on an
 * undeclared field (`_handshakePacket`), read here without pretending the connection is typed so.
 */
function handshakeServerVersion(connection: PoolConnection): string {
  const packet: unknown = Reflect.get(connection, '_handshakePacket');
  const version: unknown = packet && typeof packet === 'object' ? Reflect.get(packet, 'serverVersion') : undefined;
  return typeof version === 'string' ? version : '';
}

/**
 * A session limit on statement time for every connection the pool opens, set before the
 * connection's first statement (mysql2 runs a connection's commands in order): MariaDB's
 * max_statement_time (seconds; it also interrupts a statement waiting for a row lock) or MySQL's
 * max_execution_time (ms, SELECTs only). A statement over the limit fails with
 * ER_STATEMENT_TIMEOUT / ER_QUERY_TIMEOUT, answered SERVICE_UNAVAILABLE: a slow database costs a
 * request a bounded wait, and the connection returns to the pool.
 */
function limitStatementTime(pool: Pool, timeoutMs: number, sink: LogSink): void {
  pool.on('connection', (connection) => {
    const mariaDb = /mariadb/i.test(handshakeServerVersion(connection));
    const [statement, value] = mariaDb
      ? ['SET SESSION max_statement_time = ?', timeoutMs / 1000]
      : ['SET SESSION max_execution_time = ?', timeoutMs];
    connection.query(statement, [value], (error) => {
      if (error) sink.warn(`[sql] cannot limit statement time (DATABASE_STATEMENT_TIMEOUT_MS): ${error.message}`);
    });
  });
}

/** Whether a Database is MySQL: the stores with MySQL-only SQL need one. */
export function isMysql(db: Database): db is MysqlDatabase {
  return db.dialect === 'mysql';
}
