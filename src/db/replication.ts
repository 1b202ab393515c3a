/**
 * What the replica health check (replicas.ts) asks a server, and how it reads the answers, for
 * the two families it runs on: MySQL (8.0.22 and later, 8.4 LTS) and MariaDB (10.5 and later,
 * 10.11 and 11.4 LTS). Pure: no I/O, so every branch is unit-tested on both families' answers.
 *
 * Which statement a server gets is chosen by the version it reports itself:
 * - replication status: `SHOW REPLICA STATUS` on MySQL >= 8.0.22 and MariaDB >= 10.5.1, the
 *   servers that know it; `SHOW SLAVE STATUS` only on older ones (MySQL 8.4 removed it). The
 *   answer's columns are MySQL's new names (Replica_IO_Running, Seconds_Behind_Source) or the
 *   old ones (Slave_IO_Running, Seconds_Behind_Master, which MariaDB keeps): both are read.
 * - positions: MariaDB's @@gtid_binlog_pos (primary) and @@gtid_slave_pos (what a replica
 *   applied), "domain-server-seq,..."; MySQL's @@gtid_executed on both, a GTID set
 *   "uuid:1-5:7-9,uuid2[:tag]:1-3". Both are read into one shape (GtidSet) with one test:
 *   whether a replica's set covers a position of the primary.
 * Both families answer `SHOW GLOBAL VARIABLES WHERE Variable_name IN (...)` (no privilege
 * needed, and not counted as a SELECT), so one statement brings the version and the positions.
 */

export type ServerFamily = 'mysql' | 'mariadb';

/** One statement for the version and the GTID positions of either family. */
export const SERVER_VARIABLES_STATEMENT =
  "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'gtid_binlog_pos', 'gtid_slave_pos', 'gtid_executed')";

export interface ServerVariables {
  version: string;
  family: ServerFamily;
  /** What the server has committed (a primary's position): MariaDB's gtid_binlog_pos, MySQL's gtid_executed. */
  committed: string | null;
  /** What a replica has applied: MariaDB's gtid_slave_pos, MySQL's gtid_executed. */
  applied: string | null;
}

/** The rows of SERVER_VARIABLES_STATEMENT, read. */
export function readServerVariables(rows: ReadonlyArray<{ Variable_name: string; Value: string }>): ServerVariables {
  const value = new Map(rows.map((row) => [row.Variable_name.toLowerCase(), row.Value]));
  const version = value.get('version') ?? '';
  const family = familyOf(version);
  return family === 'mariadb'
    ? { version, family, committed: value.get('gtid_binlog_pos') ?? null, applied: value.get('gtid_slave_pos') ?? null }
    : { version, family, committed: value.get('gtid_executed') ?? null, applied: value.get('gtid_executed') ?? null };
}

/** MariaDB says so in its version ("10.11.19-MariaDB-0+deb12u1"); MySQL does not ("8.4.3"). */
export function familyOf(version: string): ServerFamily {
  return /mariadb/i.test(version) ? 'mariadb' : 'mysql';
}

function versionNumbers(version: string): [number, number, number] {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
}

function atLeast(version: string, minimum: [number, number, number]): boolean {
  const actual = versionNumbers(version);
  for (let i = 0; i < 3; i += 1) if (actual[i] !== minimum[i]) return actual[i] > minimum[i];
  return true;
}

/** The replication status statement this server serves: SHOW REPLICA STATUS wherever it exists. */
export function replicaStatusStatement(version: string): 'SHOW REPLICA STATUS' | 'SHOW SLAVE STATUS' {
  const knowsReplica = familyOf(version) === 'mariadb' ? atLeast(version, [10, 5, 1]) : atLeast(version, [8, 0, 22]);
  return knowsReplica ? 'SHOW REPLICA STATUS' : 'SHOW SLAVE STATUS';
}

/** A row of SHOW REPLICA STATUS (or SHOW SLAVE STATUS), under either family's column names. */
export type ReplicaStatusRow = Record<string, unknown>;

export interface ReplicationThreads {
  /** Both threads (receiving and applying) run. */
  running: boolean;
  io: string;
  sql: string;
  /** The threads' last errors, joined; '' when none. */
  errors: string;
  /** The server's own estimate of its lag in ms (Seconds_Behind_Source/Master); null when it has none. */
  secondsBehindMs: number | null;
}

function column(row: ReplicaStatusRow, ...names: string[]): unknown {
  for (const name of names) if (row[name] !== undefined) return row[name];
  return undefined;
}

/** A thread's state as the server wrote it ("Yes", "No", "Connecting"), '?' when missing. */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '?';
}

export function readReplicationThreads(row: ReplicaStatusRow): ReplicationThreads {
  const io = text(column(row, 'Replica_IO_Running', 'Slave_IO_Running'));
  const sql = text(column(row, 'Replica_SQL_Running', 'Slave_SQL_Running'));
  const seconds = column(row, 'Seconds_Behind_Source', 'Seconds_Behind_Master');
  const errors = [column(row, 'Last_IO_Error'), column(row, 'Last_SQL_Error')]
    .filter((error) => typeof error === 'string' && error !== '')
    .join('; ');
  return {
    running: io === 'Yes' && sql === 'Yes',
    io,
    sql,
    errors,
    secondsBehindMs: seconds === null || seconds === undefined || seconds === '' ? null : Number(seconds) * 1000,
  };
}

/**
 * A set of transactions: for each source (a MariaDB replication domain; a MySQL server uuid,
 * with its tag if any) the ranges of sequence numbers it holds, inclusive.
 */
export type GtidSet = Map<string, Array<[bigint, bigint]>>;

/**
 * A position or set of either family, read into a GtidSet. MariaDB's "domain-server-seq" means
 * every transaction of the domain up to seq (positions in a domain are ordered, whatever server
 * wrote them); MySQL lists the ranges themselves.
 */
export function parseGtidSet(text: string, family: ServerFamily): GtidSet {
  const set: GtidSet = new Map();
  const add = (source: string, from: bigint, through: bigint) => {
    if (from > through) return;
    const ranges = set.get(source) ?? [];
    ranges.push([from, through]);
    set.set(source, ranges);
  };
  for (const entry of text.split(',')) {
    const trimmed = entry.trim();
    if (trimmed === '') continue;
    if (family === 'mariadb') {
      const match = /^(\d+)-\d+-(\d+)$/.exec(trimmed);
      if (match) add(match[1], 1n, BigInt(match[2]));
      continue;
    }
    const [uuid, ...parts] = trimmed.split(':');
    let source = uuid.toLowerCase();
    for (const part of parts) {
      const range = /^(\d+)(?:-(\d+))?$/.exec(part);
      if (range) add(source, BigInt(range[1]), BigInt(range[2] ?? range[1]));
      // A tag (MySQL 8.3+: uuid:tag:1-5) names the source of the ranges after it.
      else source = `${uuid.toLowerCase()}:${part.toLowerCase()}`;
    }
  }
  for (const [source, ranges] of set) set.set(source, merged(ranges));
  return set;
}

/** Ranges sorted, with overlapping and adjacent ones joined ("1-5:6-9" holds 1-9). */
function merged(ranges: Array<[bigint, bigint]>): Array<[bigint, bigint]> {
  const sorted = [...ranges].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out: Array<[bigint, bigint]> = [];
  for (const [from, through] of sorted) {
    const last = out[out.length - 1];
    if (last && from <= last[1] + 1n) last[1] = through > last[1] ? through : last[1];
    else out.push([from, through]);
  }
  return out;
}

/** Whether `applied` holds every transaction of `position`. */
export function covers(applied: GtidSet, position: GtidSet): boolean {
  for (const [source, ranges] of position) {
    const held = applied.get(source) ?? [];
    for (const [from, through] of ranges) {
      if (!held.some(([start, end]) => start <= from && through <= end)) return false;
    }
  }
  return true;
}
