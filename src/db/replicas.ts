/**
 * Read replicas (DATABASE_REPLICA_URLS): a MysqlDatabase whose every method runs on the primary
 * (writes, transactions, the fan-out's reads, read-your-writes), plus `lagging()`, the reads
 * that may be a little stale: a healthy replica, taken in turn, or the primary when there is
 * none or when the request is a recent writer's (see `withReadScope`).
 *
 * A replica is healthy when a health check, every REPLICA_CHECK_INTERVAL_MS, finds both its
 * replication threads running and its lag at most REPLICA_MAX_LAG_MS. The lag is measured with
 * MariaDB's GTIDs: the primary's @@gtid_binlog_pos is read each round, and a replica is as far
 * behind as the oldest recent position it has not applied (one round's precision); MySQL, which
 * has no such positions, falls back to Seconds_Behind_Master. A replica that does not answer the
 * check within REPLICA_CHECK_TIMEOUT_MS (down, or frozen) is "down". A skipped replica costs the
 * client nothing: its reads go to the primary, and a read that fails on a replica is run once
 * more on the primary.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { withTimeout } from '../kernel/timeout';
import { hidePasswords } from '../kernel/redaction';
import { isDatabaseUnavailable, Isolation, MysqlDatabase, Params, Sql, SqlStatementLog, WriteResult } from './database';
import { MysqlPool, PoolLimits } from './mysql';

/** How often each replica's health is checked: the precision of its lag, and how soon a failure is seen. */
export const REPLICA_CHECK_INTERVAL_MS = 250;
/** A health check (connection and SHOW SLAVE STATUS) not answered this fast marks the replica down: a frozen server must not stall the checks. */
const REPLICA_CHECK_TIMEOUT_MS = 500;
/**
 * A read on a replica (connection included) without an answer after this long is given up and
 * run on the primary: long enough for any page read on a healthy server, short enough that a
 * replica frozen between two checks costs a request a bounded wait.
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

/** A request's routing: set to primary when the viewer wrote recently, or the operation writes. */
interface ReadScope {
  primary: boolean;
}

const scopes = new AsyncLocalStorage<ReadScope>();

/** Runs `work` (a request) in a scope of its own, whose lag-tolerant reads go to replicas until readPrimaryInScope(). */
export function withReadScope<T>(work: () => T): T {
  return scopes.run({ primary: false }, work);
}

/** From here on, the current request reads the primary only (its viewer wrote recently, or it writes). */
export function readPrimaryInScope(): void {
  const scope = scopes.getStore();
  if (scope) scope.primary = true;
}

/** A GTID position, "domain-server-seq,...", as the highest seq_no per domain. */
function parseGtids(position: string): Map<string, bigint> {
  const seqs = new Map<string, bigint>();
  for (const gtid of position.split(',')) {
    const match = /^\s*(\d+)-\d+-(\d+)\s*$/.exec(gtid);
    if (match) seqs.set(match[1], BigInt(match[2]));
  }
  return seqs;
}

/** Whether the position `applied` includes everything of `position`. */
function covers(applied: Map<string, bigint>, position: Map<string, bigint>): boolean {
  for (const [domain, seq] of position) if ((applied.get(domain) ?? -1n) < seq) return false;
  return true;
}

/** The URL without its password, for /readyz, /metrics and messages. */
export function redactUrl(url: string): string {
  return hidePasswords(url);
}

type SlaveStatus = {
  Slave_IO_Running?: string;
  Slave_SQL_Running?: string;
  Seconds_Behind_Master?: number | string | null;
  Last_IO_Error?: string;
  Last_SQL_Error?: string;
};

class Replica {
  status: ReplicaStatus;
  /** Lag-tolerant reads of this replica, falling back to the primary. */
  readonly reads: Sql;

  constructor(
    readonly url: string,
    readonly pool: MysqlPool,
    fallback: (statement: string, params: Params | undefined, error: unknown) => Promise<unknown[]>,
    counted: (target: ReadTarget) => void,
  ) {
    // Down until the first check says otherwise.
    this.status = { replica: redactUrl(url), state: 'down', lagMs: null, reason: 'not checked yet' };
    this.reads = {
      select: async <Row>(statement: string, params?: Params): Promise<Row[]> => {
        try {
          const rows = await pool.select<Row>(statement, params);
          counted('replica');
          return rows;
        } catch (error) {
          return (await fallback(statement, params, error)) as Row[];
        }
      },
      write: () => Promise.reject(new Error('a write through lagging(): writes go to the primary')),
    };
  }
}

export interface ReplicaSettings {
  maxLagMs: number;
}

export class ReplicatedDatabase implements MysqlDatabase {
  readonly dialect = 'mysql' as const;
  /** Lag-tolerant reads by where they ran (mysql_reads_total). */
  readonly reads: Record<ReadTarget, number> = { primary: 0, replica: 0 };
  private readonly replicas: Replica[];
  private readonly primaryReads: Sql;
  private next = 0;
  /** The primary's recent GTID positions, oldest first, with when they were read. */
  private readonly positions: Array<{ at: number; seqs: Map<string, bigint> }> = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly primary: MysqlPool,
    replicaUrls: readonly string[],
    limits: PoolLimits,
    log: SqlStatementLog,
    private readonly settings: ReplicaSettings,
  ) {
    this.primaryReads = {
      select: <Row>(statement: string, params?: Params) => {
        this.reads.primary += 1;
        return primary.select<Row>(statement, params);
      },
      write: (statement: string, params?: Params) => primary.write(statement, params),
    };
    const fallback = (replica: () => Replica) => (statement: string, params: Params | undefined, error: unknown) => {
      // Unreachable or frozen: skipped from now until a check finds it healthy again. (A
      // statement that fails for its own sake fails on the primary too, and says why there.)
      if (isDatabaseUnavailable(error) || (error as { code?: string })?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') {
        replica().status = { ...replica().status, state: 'down', lagMs: null, reason: `a read failed: ${String(error)}` };
      }
      return this.primaryReads.select<unknown>(statement, params);
    };
    this.replicas = replicaUrls.map((url) => {
      const pool = new MysqlPool(url, { ...limits, clientTimeoutMs: REPLICA_READ_TIMEOUT_MS }, log);
      const replica: Replica = new Replica(
        url,
        pool,
        fallback(() => replica),
        (target) => (this.reads[target] += 1),
      );
      return replica;
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
    if (scopes.getStore()?.primary) return this.primaryReads;
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
    const position = await withTimeout(
      this.primary.select<{ Value: string }>("SHOW GLOBAL VARIABLES LIKE 'gtid_binlog_pos'"),
      REPLICA_CHECK_TIMEOUT_MS,
      'the primary',
    ).then(
      ([row]) => (row ? parseGtids(row.Value) : null),
      () => null,
    );
    if (position) {
      this.positions.push({ at, seqs: position });
      if (this.positions.length > POSITION_HISTORY) this.positions.shift();
    }
    await Promise.all(this.replicas.map((replica) => this.check(replica, position !== null)));
  }

  private async check(replica: Replica, gtidsKnown: boolean): Promise<void> {
    const name = replica.status.replica;
    let rows: SlaveStatus[];
    let applied: Array<{ Value: string }>;
    try {
      // What it applied: @@gtid_slave_pos (MariaDB; SHOW SLAVE STATUS shows only what it received).
      [rows, applied] = await withTimeout(
        Promise.all([
          replica.pool.select<SlaveStatus>('SHOW SLAVE STATUS'),
          replica.pool.select<{ Value: string }>("SHOW GLOBAL VARIABLES LIKE 'gtid_slave_pos'"),
        ]),
        REPLICA_CHECK_TIMEOUT_MS,
        'the replica',
      );
    } catch (error) {
      replica.status = { replica: name, state: 'down', lagMs: null, reason: String((error as Error).message ?? error) };
      return;
    }
    const [row] = rows;
    if (!row) {
      replica.status = { replica: name, state: 'down', lagMs: null, reason: 'not a replica (SHOW SLAVE STATUS is empty)' };
      return;
    }
    const lagMs = gtidsKnown && applied[0] ? this.gtidLagMs(parseGtids(applied[0].Value)) : secondsBehindMs(row);
    const running = row.Slave_IO_Running === 'Yes' && row.Slave_SQL_Running === 'Yes';
    if (!running) {
      const why = [row.Last_IO_Error, row.Last_SQL_Error].filter(Boolean).join('; ');
      replica.status = {
        replica: name,
        state: 'lagging',
        lagMs,
        reason: `replication stopped (IO ${row.Slave_IO_Running ?? '?'}, SQL ${row.Slave_SQL_Running ?? '?'})${why ? `: ${why}` : ''}`,
      };
      return;
    }
    if (lagMs === null || lagMs > this.settings.maxLagMs) {
      replica.status = { replica: name, state: 'lagging', lagMs, reason: `lag over REPLICA_MAX_LAG_MS (${this.settings.maxLagMs} ms)` };
      return;
    }
    replica.status = { replica: name, state: 'ok', lagMs };
  }

  /**
   * How far behind the primary a replica that has applied `applied` is: 0 when it has the
   * primary's newest position; else the age of the newest position it has applied (everything it
   * lacks was committed after that), or of the oldest kept when it has none of them.
   */
  private gtidLagMs(applied: Map<string, bigint>): number {
    const newest = this.positions[this.positions.length - 1];
    if (!newest || covers(applied, newest.seqs)) return 0;
    const now = Date.now();
    for (let i = this.positions.length - 2; i >= 0; i -= 1) {
      if (covers(applied, this.positions[i].seqs)) return now - this.positions[i].at;
    }
    return now - this.positions[0].at;
  }
}

function secondsBehindMs(row: SlaveStatus): number | null {
  const seconds = row.Seconds_Behind_Master;
  return seconds === null || seconds === undefined ? null : Number(seconds) * 1000;
}

/** The replicas of a database, when it has any. */
export function replicasOf(db: unknown): ReplicatedDatabase | null {
  return db instanceof ReplicatedDatabase ? db : null;
}
