/**
 * Read replicas (DATABASE_REPLICA_URLS): a MysqlDatabase whose every method runs on the primary
 * (writes, transactions, the fan-out's reads, read-your-writes), plus `lagging()`, the reads
 * that may be a little stale: a healthy replica, taken in turn, or the primary when there is
 * none or when the request is a recent writer's (see read-scope.ts).
 *
 * A replica is healthy when a health check, every REPLICA_CHECK_INTERVAL_MS, finds both its
 * replication threads running and its lag at most REPLICA_MAX_LAG_MS. The statements are those
 * the server's own version serves (replication.ts: SHOW REPLICA STATUS and the GTID positions of
 * MySQL 8.4 or MariaDB). The lag is measured with GTIDs: the primary's committed position is
 * read each round, and a replica is as far behind as the oldest recent position it has not
 * applied (one round's precision); without positions (GTIDs off) the server's own
 * Seconds_Behind_Source is used. A replica that does not answer the check within
 * REPLICA_CHECK_TIMEOUT_MS (down, or frozen) is "down". A skipped replica costs the client
 * nothing: its reads go to the primary.
 *
 * A read that fails on a replica is run on the primary only when that cannot make it run twice:
 * when it never reached the replica (no connection could be had), or the replica answered it
 * with an error of the statement's own (a table it lacks). A read that timed out, or whose
 * connection broke while the replica had it, may still be running there: it fails (the client
 * gets SERVICE_UNAVAILABLE), and the replica is skipped until a check finds it well; a slow
 * statement is not run a second time on the primary, which would double the load that made it slow.
 */
import { withTimeout } from '../kernel/timeout';
import { hidePasswords } from '../kernel/redaction';
import { isDatabaseTooSlow, Isolation, MysqlDatabase, Params, Sql, SqlStatementLog, WriteResult } from './database';
import { MysqlPool, PoolLimits, StatementNotSent } from './mysql';
import { readsPrimaryInScope } from './read-scope';
import {
  covers,
  GtidSet,
  parseGtidSet,
  readReplicationThreads,
  readServerVariables,
  replicaStatusStatement,
  ReplicaStatusRow,
  SERVER_VARIABLES_STATEMENT,
  ServerFamily,
  ServerVariables,
} from './replication';

/** How often each replica's health is checked: the precision of its lag, and how soon a failure is seen. */
export const REPLICA_CHECK_INTERVAL_MS = 250;
/** A health check (connection, the server's variables and SHOW REPLICA STATUS) not answered this fast marks the replica down: a frozen server must not stall the checks. */
const REPLICA_CHECK_TIMEOUT_MS = 500;
/**
 * A read on a replica (connection included) without an answer after this long is given up (and
 * not run again elsewhere): long enough for any page read on a healthy server, short enough that
 * a replica frozen between two checks costs a request a bounded wait.
 */
const REPLICA_READ_TIMEOUT_MS = 2000;
/** Recent primary positions kept for measuring lag: one per round, enough to cover a lag well past any sensible REPLICA_MAX_LAG_MS. */
const POSITION_HISTORY = 240;

export type ReplicaState = 'ok' | 'lagging' | 'down';

export interface ReplicaStatus {
  /** The replica's URL without its password. */
  replica: string;
  state: ReplicaState;
  /** How far behind the primary, in ms; null when it could not be measured (down). */
  lagMs: number | null;
  /** Why it is not ok. */
  reason?: string;
}

export type ReadTarget = 'primary' | 'replica';

/** The URL without its password, for /readyz, /metrics and messages. */
export function redactUrl(url: string): string {
  return hidePasswords(url);
}

export interface ReplicaDeps {
  url: string;
  pool: MysqlPool;
  /** Runs a read on the primary: where a read goes that never reached the replica. */
  onPrimary: <Row>(statement: string, params: Params | undefined) => Promise<Row[]>;
  /** Counts a lag-tolerant read where it ran (mysql_reads_total). */
  counted: (target: ReadTarget) => void;
}

class Replica {
  status: ReplicaStatus;
  /** Lag-tolerant reads of this replica, falling back to the primary. */
  readonly reads: Sql;
  readonly url: string;
  readonly pool: MysqlPool;

  constructor({ url, pool, onPrimary, counted }: ReplicaDeps) {
    this.url = url;
    this.pool = pool;
    // Down until the first check says otherwise.
    this.status = { replica: redactUrl(url), state: 'down', lagMs: null, reason: 'not checked yet' };
    this.reads = {
      select: async <Row>(statement: string, params?: Params): Promise<Row[]> => {
        try {
          const rows = await pool.selectOnce<Row>(statement, params);
          counted('replica');
          return rows;
        } catch (error) {
          if (error instanceof StatementNotSent) {
            this.skip(`a read could not reach it: ${String((error.cause as Error)?.message ?? error.cause)}`);
            return onPrimary<Row>(statement, params);
          }
          if (mayStillRun(error)) {
            if ((error as { fatal?: boolean }).fatal)
              this.skip(`a read got no answer: ${String((error as Error).message)}`);
            throw error;
          }
          // The replica answered with the statement's own error (say a table it does not have yet): the primary says.
          return onPrimary<Row>(statement, params);
        }
      },
      write: () => Promise.reject(new Error('a write through lagging(): writes go to the primary')),
    };
  }

  /** Skipped from now until a check finds it healthy again. */
  private skip(reason: string): void {
    this.status = { ...this.status, state: 'down', lagMs: null, reason };
  }
}

/**
 * A read that got no answer (the client's timeout, a connection that broke with the statement on
 * it) or that the server stopped at its time limit: it may have run, or still run, on the
 * replica. Running it again on the primary would run it twice.
 */
function mayStillRun(error: unknown): boolean {
  return Boolean((error as { fatal?: boolean })?.fatal) || isDatabaseTooSlow(error);
}

export interface ReplicaSettings {
  maxLagMs: number;
}

export interface ReplicatedDatabaseDeps {
  /** Runs every write, transaction and read-your-writes read; a read a replica cannot serve falls back to it. */
  primary: MysqlPool;
  /** DATABASE_REPLICA_URLS: each gets its own pool, with REPLICA_READ_TIMEOUT_MS as the client timeout. */
  replicaUrls: readonly string[];
  limits: PoolLimits;
  log: SqlStatementLog;
  settings: ReplicaSettings;
}

export class ReplicatedDatabase implements MysqlDatabase {
  readonly dialect = 'mysql' as const;
  /** Lag-tolerant reads by where they ran (mysql_reads_total). */
  readonly reads: Record<ReadTarget, number> = { primary: 0, replica: 0 };
  private readonly replicas: Replica[];
  private readonly primaryReads: Sql;
  private next = 0;
  /** The primary's recent GTID positions, oldest first, with when they were read. */
  private readonly positions: Array<{ at: number; set: GtidSet }> = [];
  /** The primary's family, from its version: its positions compare only with a replica of the same family. */
  private primaryFamily: ServerFamily | null = null;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly primary: MysqlPool;
  private readonly settings: ReplicaSettings;

  constructor({ primary, replicaUrls, limits, log, settings }: ReplicatedDatabaseDeps) {
    this.primary = primary;
    this.settings = settings;
    this.primaryReads = {
      select: <Row>(statement: string, params?: Params) => {
        this.reads.primary += 1;
        return primary.select<Row>(statement, params);
      },
      write: (statement: string, params?: Params) => primary.write(statement, params),
    };
    this.replicas = replicaUrls.map((url) => {
      const pool = new MysqlPool(url, { ...limits, clientTimeoutMs: REPLICA_READ_TIMEOUT_MS }, log);
      return new Replica({
        url,
        pool,
        onPrimary: (statement, params) => this.primaryReads.select(statement, params),
        counted: (target) => (this.reads[target] += 1),
      });
    });
  }

  /** Checks the replicas once, then every REPLICA_CHECK_INTERVAL_MS until close(). */
  async start(): Promise<void> {
    await this.checkAll();
    const loop = (): void => {
      this.timer = setTimeout(() => {
        void this.checkAll().finally(() => {
          if (!this.closed) loop();
        });
      }, REPLICA_CHECK_INTERVAL_MS);
      this.timer.unref();
    };
    loop();
  }

  /** Each replica's state and lag (/readyz, /metrics). */
  replicaStatuses(): ReplicaStatus[] {
    return this.replicas.map((replica) => replica.status);
  }

  lagging(): Sql {
    if (readsPrimaryInScope()) return this.primaryReads;
    for (let tried = 0; tried < this.replicas.length; tried += 1) {
      const replica = this.replicas[this.next % this.replicas.length];
      this.next = (this.next + 1) % this.replicas.length;
      if (replica.status.state === 'ok') return replica.reads;
    }
    return this.primaryReads;
  }

  select<Row>(statement: string, params?: Params): Promise<Row[]> {
    return this.primary.select<Row>(statement, params);
  }

  write(statement: string, params?: Params): Promise<WriteResult> {
    return this.primary.write(statement, params);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw results for scripts and tests, whose callers know the shape
  query<T = any>(statement: string, params?: Params): Promise<T> {
    return this.primary.query<T>(statement, params);
  }

  insertRows(statement: string, rows: readonly unknown[][]): Promise<void> {
    return this.primary.insertRows(statement, rows);
  }

  unionTerm(select: string, columns: string, alias: string): string {
    return this.primary.unionTerm(select, columns, alias);
  }

  now(): Promise<number> {
    return this.primary.now();
  }

  transaction<T>(work: (sql: Sql) => Promise<T>, isolation?: Isolation): Promise<T> {
    return this.primary.transaction(work, isolation);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await Promise.allSettled([this.primary.close(), ...this.replicas.map((replica) => replica.pool.close())]);
  }

  /** One round: the primary's position, then every replica's state against it. */
  private async checkAll(): Promise<void> {
    const at = Date.now();
    // SHOW, not SELECT: the check's statements stay out of the SELECT counts.
    const primary = await withTimeout(
      this.primary.select<VariableRow>(SERVER_VARIABLES_STATEMENT),
      REPLICA_CHECK_TIMEOUT_MS,
      'the primary',
    ).then(
      (rows) => readServerVariables(rows),
      () => null,
    );
    const position = primary?.committed ? parseGtidSet(primary.committed, primary.family) : null;
    if (primary && primary.family !== this.primaryFamily) this.positions.length = 0;
    this.primaryFamily = primary?.family ?? this.primaryFamily;
    if (position && position.size > 0) {
      this.positions.push({ at, set: position });
      if (this.positions.length > POSITION_HISTORY) this.positions.shift();
    }
    await Promise.all(this.replicas.map((replica) => this.check(replica, position !== null && position.size > 0)));
  }

  private async check(replica: Replica, positionKnown: boolean): Promise<void> {
    const name = replica.status.replica;
    let server: ServerVariables;
    let rows: ReplicaStatusRow[];
    try {
      // The version first: it says which status statement this server serves.
      [server, rows] = await withTimeout(
        (async (): Promise<[ServerVariables, ReplicaStatusRow[]]> => {
          const variables = readServerVariables(await replica.pool.select<VariableRow>(SERVER_VARIABLES_STATEMENT));
          return [variables, await replica.pool.select<ReplicaStatusRow>(replicaStatusStatement(variables.version))];
        })(),
        REPLICA_CHECK_TIMEOUT_MS,
        'the replica',
      );
    } catch (error) {
      replica.status = { replica: name, state: 'down', lagMs: null, reason: String((error as Error).message ?? error) };
      return;
    }
    const [row] = rows;
    if (!row) {
      replica.status = {
        replica: name,
        state: 'down',
        lagMs: null,
        reason: `not a replica (${replicaStatusStatement(server.version)} is empty)`,
      };
      return;
    }
    const threads = readReplicationThreads(row);
    const comparable = positionKnown && server.applied !== null && server.family === this.primaryFamily;
    const lagMs = comparable ? this.gtidLagMs(parseGtidSet(server.applied!, server.family)) : threads.secondsBehindMs;
    if (!threads.running) {
      replica.status = {
        replica: name,
        state: 'lagging',
        lagMs,
        reason: `replication stopped (IO ${threads.io}, SQL ${threads.sql})${threads.errors ? `: ${threads.errors}` : ''}`,
      };
      return;
    }
    if (lagMs === null || lagMs > this.settings.maxLagMs) {
      replica.status = {
        replica: name,
        state: 'lagging',
        lagMs,
        reason: `lag over REPLICA_MAX_LAG_MS (${this.settings.maxLagMs} ms)`,
      };
      return;
    }
    replica.status = { replica: name, state: 'ok', lagMs };
  }

  /**
   * How far behind the primary a replica that has applied `applied` is: 0 when it has the
   * primary's newest position; else the age of the newest position it has applied (everything it
   * lacks was committed after that), or of the oldest kept when it has none of them.
   */
  private gtidLagMs(applied: GtidSet): number {
    const newest = this.positions[this.positions.length - 1];
    if (!newest || covers(applied, newest.set)) return 0;
    const now = Date.now();
    for (let i = this.positions.length - 2; i >= 0; i -= 1) {
      if (covers(applied, this.positions[i].set)) return now - this.positions[i].at;
    }
    return now - this.positions[0].at;
  }
}

type VariableRow = { Variable_name: string; Value: string };

/** The replicas of a database, when it has any. */
export function replicasOf(db: unknown): ReplicatedDatabase | null {
  return db instanceof ReplicatedDatabase ? db : null;
}
