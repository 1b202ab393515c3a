/**
 * A MariaDB primary and a replica of a test file's own, with GTID replication between them, for
 * tests of reads that go to a replica: it can be made to lag (replication stopped), to hang
 * (SIGSTOP) or to die (SIGKILL) while the primary goes on.
 *
 * Each test file starts its pair in beforeAll and stops it in afterAll, instead of the global
 * setup starting one pair for the whole run as it does the Redis Cluster: these tests stop, freeze
 * and kill the replica, and files run in parallel, so a shared pair would let one file's fault
 * break another file's reads. A pair starts in about a second (one mariadb-install-db,
 * copied for the second server), so owning one costs a file little.
 *
 * The servers never outlive the process that started them, however it ends: they start under
 * `setpriv --pdeathsig KILL` (util-linux, Linux), so the kernel kills them when it exits, also
 * by SIGKILL or a crash, and also when a file forgot stop(). That covers what a pid file for the
 * global teardown would (and sooner: a jest worker can end long before the run), and what a
 * process 'exit' hook would not: inside a test file `process` is jest's copy, whose 'exit'
 * listeners never run. A folder left behind that way is removed by the next start.
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { Connection, createConnection, RowDataPacket } from 'mysql2/promise';
import { freePort } from './processes';

export interface MariaDbPair {
  /** `mysql://root@127.0.0.1:<port>`, no database name: the primary. */
  primaryUrl: string;
  /** `mysql://root@127.0.0.1:<port>`: the replica (read_only, which root bypasses). */
  replicaUrl: string;
  /**
   * Resolves when the replica has applied everything the primary had committed when it was
   * called (MASTER_GTID_WAIT on the primary's @@gtid_binlog_pos); rejects after `timeoutMs` with
   * both positions and the replication threads' state.
   */
  synced(timeoutMs?: number): Promise<void>;
  /** STOP SLAVE: the replica lags from here on, and still answers. */
  stopReplication(): Promise<void>;
  /** START SLAVE; resolves once both replication threads run. */
  startReplication(): Promise<void>;
  /** The replica applies each transaction `seconds` after the primary committed it (MASTER_DELAY): a steady lag. */
  delayReplication(seconds: number): Promise<void>;
  /** Freezes the replica (SIGSTOP): connections stay open, nothing answers. */
  pauseReplica(): void;
  /** Lets a paused replica run again (SIGCONT). */
  resumeReplica(): void;
  /** SIGKILLs the replica: its port refuses connections until restartReplica(). */
  killReplica(): Promise<void>;
  /**
   * Starts the killed replica again on its data and port; replication resumes by itself (also
   * when it had been stopped), and its selects() count starts again from 0.
   */
  restartReplica(): Promise<void>;
  /**
   * SELECT statements each server has run for root, the user of the URLs, since it started (0 at
   * first): the pair's own statements (this probe, synced()) and the replication connection run
   * as other users and are not counted.
   */
  selects(): Promise<{ primary: number; replica: number }>;
  /** Kills both servers and removes their folders. */
  stop(): Promise<void>;
}

/** selects(): the gap between two readings of the counters, and the readings at most (see there). */
const SELECTS_SETTLE_MS = 25;
const SELECTS_READINGS = 40;

/** The user of the pair's own connections (over the Unix socket), not counted by selects(). */
const ADMIN_USER = 'pair_admin';
/** The user of the replica's replication connection to the primary, not counted either. */
const REPLICATION_USER = 'pair_repl';
const CLIENT_USER = 'root';
const FOLDER_PREFIX = 'feed-mariadb-';
/** How long a server may take to answer its first connection, or a setup statement. */
const START_TIMEOUT_MS = 20_000;

const execFileAsync = promisify(execFile);

export async function startMariaDbPair(): Promise<MariaDbPair> {
  removeAbandonedFolders();
  // The pid in the name tells a later start whether the owner still runs.
  const root = mkdtempSync(join(tmpdir(), `${FOLDER_PREFIX}${process.pid}-`));
  const primary = new Server('primary', join(root, 'primary'), 1);
  const replica = new Server('replica', join(root, 'replica'), 2);
  const stop = async (): Promise<void> => {
    await Promise.all([primary.kill(), replica.kill()]);
    rmSync(root, { recursive: true, force: true });
  };

  try {
    await install(root, [primary.dir, replica.dir]);
    await Promise.all([primary.start(), replica.start()]);
    await setUp(primary, replica);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    primaryUrl: primary.url,
    replicaUrl: replica.url,

    async synced(timeoutMs = 10_000) {
      const [{ position }] = await primary.admin('read @@gtid_binlog_pos', 5_000, (c) =>
        rows(c, 'SELECT @@GLOBAL.gtid_binlog_pos AS position'),
      );
      const failure = `the replica did not catch up with the primary within ${timeoutMs} ms`;
      let result: number;
      try {
        // The server ends the wait after timeoutMs; the client's own limit is for a replica that
        // does not answer at all (paused).
        [{ result }] = await replica.admin('MASTER_GTID_WAIT', timeoutMs + 1_000, (c) =>
          rows(c, 'SELECT MASTER_GTID_WAIT(?, ?) AS result', [position, timeoutMs / 1000]),
        );
      } catch (error) {
        throw new Error(`${failure}: ${(error as Error).message}`);
      }
      if (Number(result) === 0) return;
      const state = await replicationState(replica);
      throw new Error(
        `${failure}: the primary is at GTID ${position || '(none)'}, the replica at ${state.position || '(none)'}; ${state.threads}`,
      );
    },

    async stopReplication() {
      await replica.admin('STOP SLAVE', START_TIMEOUT_MS, (c) => c.query('STOP SLAVE'));
    },

    async startReplication() {
      await replica.admin('START SLAVE', START_TIMEOUT_MS, (c) => c.query('START SLAVE'));
      await replicationRunning(replica);
    },

    async delayReplication(seconds: number) {
      await replica.admin('MASTER_DELAY', START_TIMEOUT_MS, async (c) => {
        await c.query('STOP SLAVE');
        await c.query('CHANGE MASTER TO MASTER_DELAY = ?', [seconds]);
        await c.query('START SLAVE');
      });
      await replicationRunning(replica);
    },

    pauseReplica: () => replica.signal('SIGSTOP'),
    resumeReplica: () => replica.signal('SIGCONT'),
    killReplica: () => replica.kill(),

    async restartReplica() {
      await replica.start();
      await replicationRunning(replica);
    },

    async selects() {
      const count = (server: Server) =>
        server
          .admin('read USER_STATISTICS', 5_000, (c) =>
            rows(c, 'SELECT SELECT_COMMANDS AS count FROM information_schema.USER_STATISTICS WHERE USER = ?', [
              CLIENT_USER,
            ]),
          )
          .then((found) => Number(found[0]?.count ?? 0));
      const read = async () => {
        const [primaryCount, replicaCount] = await Promise.all([count(primary), count(replica)]);
        return { primary: primaryCount, replica: replicaCount };
      };
      // MariaDB adds a statement to USER_STATISTICS as the statement ends, which may be after
      // its client has its result: a read right after a SELECT returned once found it not
      // counted yet (CI, Node 24, replica 0 where 1 was due). So: readings SELECTS_SETTLE_MS
      // apart until two agree.
      let last = await read();
      for (let attempt = 0; attempt < SELECTS_READINGS; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, SELECTS_SETTLE_MS));
        const next = await read();
        if (next.primary === last.primary && next.replica === last.replica) return next;
        last = next;
      }
      return last;
    },

    stop,
  };
}

/**
 * Servers of a pair that crashed, by URL, with their restart: MariaDB 10.11 has crashed
 * (SIGSEGV in get_schema_tables_result) on the INFORMATION_SCHEMA queries of TypeORM's
 * migrations, which a test app runs at its start (startTestApp migrates again on the restarted
 * server). A crash anywhere else still fails its test, with the server's log on stderr.
 */
const restarts = new Map<string, Promise<void>>();

/** The restart of the pair server at `url` after a crash (null: it has not crashed). */
export function restartAfterCrash(url: string): Promise<void> | null {
  return restarts.get(url) ?? null;
}

/** One mariadbd of the pair: its folder, port and process. */
class Server {
  port = 0;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  /** kill() was called: the coming exit is ours. */
  private killing = false;

  constructor(
    readonly role: 'primary' | 'replica',
    readonly dir: string,
    private readonly serverId: number,
  ) {}

  get url(): string {
    return `mysql://${CLIENT_USER}@127.0.0.1:${this.port}`;
  }

  private get socket(): string {
    return join(this.dir, 'sock');
  }

  private get errorLog(): string {
    return join(this.dir, 'error.log');
  }

  /** What setpriv, or mariadbd before it opens its error log, has to say. */
  private get output(): string {
    return join(this.dir, 'output.log');
  }

  /**
   * Starts mariadbd and waits until root can connect over TCP. At the first start a port taken
   * meanwhile is replaced; a restart keeps its port, which the URLs name.
   */
  async start(): Promise<void> {
    if (this.alive()) throw new Error(`the ${this.role} mariadbd is already running`);
    const firstStart = this.port === 0;
    for (let attempt = 1; ; attempt += 1) {
      if (this.port === 0) this.port = await freePort();
      rmSync(this.errorLog, { force: true });
      rmSync(this.output, { force: true });
      this.spawn();
      try {
        await this.answering();
        return;
      } catch (error) {
        await this.kill();
        // freePort's port is free only until someone else binds it (other runs share the machine).
        if (firstStart && attempt < 3 && /Address already in use/.test(this.log())) {
          this.port = 0;
          continue;
        }
        throw error;
      }
    }
  }

  private spawn(): void {
    const options = [
      '--no-defaults',
      `--datadir=${join(this.dir, 'data')}`,
      `--port=${this.port}`,
      '--bind-address=127.0.0.1',
      `--socket=${this.socket}`,
      `--pid-file=${join(this.dir, 'mariadbd.pid')}`,
      `--log-error=${this.errorLog}`,
      // mariadbd refuses to run as root unless told to; as anyone else, --user is ignored.
      `--user=${userInfo().username}`,
      `--server-id=${this.serverId}`,
      // Named: the defaults derive from the pid file's name and the host name.
      '--log-bin=mariadb-bin',
      '--relay-log=relay-bin',
      '--gtid-strict-mode=1',
      '--log-slave-updates',
      '--skip-name-resolve',
      // As the suite's server (/etc/mysql/my.cnf): --no-defaults would leave latin1.
      '--character-set-server=utf8mb4',
      '--collation-server=utf8mb4_general_ci',
      // Per-user counters, read by selects().
      '--userstat=1',
      // Small: the data of a test is tiny, and other runs share the machine's memory.
      '--innodb-buffer-pool-size=64M',
      '--innodb-log-file-size=8M',
      '--aria-pagecache-buffer-size=8M',
      '--key-buffer-size=1M',
      // No fsync per commit: the log still reaches the OS at each commit, which is all that a
      // killed (not a crashed machine's) server needs to keep every committed row.
      '--innodb-flush-log-at-trx-commit=2',
      ...(this.role === 'replica' ? ['--read-only=1'] : []),
    ];
    const output = openSync(this.output, 'a');
    const child = spawn('setpriv', ['--pdeathsig', 'KILL', 'mariadbd', ...options], {
      stdio: ['ignore', output, output],
      detached: true,
    });
    closeSync(output);
    // A pair left running must not keep the test process alive: it dies with it.
    child.unref();
    this.child = child;
    this.killing = false;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        if (!this.killing) this.reportUnexpectedExit(code, signal);
        resolve();
      });
      // No setpriv: 'error' instead of 'exit'.
      child.once('error', (error) => {
        appendFileSync(this.output, `${String(error)}\n`);
        resolve();
      });
    });
  }

  private async answering(): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (!this.alive()) throw new Error(`the ${this.role} mariadbd exited at start:\n${this.log()}`);
      try {
        const connection = await createConnection({ uri: this.url, connectTimeout: 1_000 });
        await connection.ping().finally(() => connection.destroy());
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(
            `the ${this.role} mariadbd did not answer within ${START_TIMEOUT_MS} ms (${String(error)}):\n${this.log()}`,
          );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private alive(): boolean {
    return this.child?.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  private log(): string {
    return [this.output, this.errorLog]
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file, 'utf8'))
      .join('');
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.alive()) throw new Error(`the ${this.role} mariadbd is not running`);
    this.child!.kill(signal);
  }

  /**
   * A server that dies on its own (a crash, a signal from elsewhere) shows up in a test only as
   * "Connection lost: The server closed the connection": its error log says why (a replica pass
   * failed that way once, with nothing to read after).
   */
  private reportUnexpectedExit(code: number | null, signal: NodeJS.Signals | null): void {
    const tail = this.log().split('\n').slice(-40).join('\n');
    process.stderr.write(
      `the ${this.role} mariadbd on port ${this.port} exited by itself (code ${code}, signal ${signal}); the end of its log:\n${tail}\nrestarting it on the same port and data\n`,
    );
    // InnoDB recovers what was committed; a replica reconnects within MASTER_CONNECT_RETRY (1 s).
    restarts.set(
      this.url,
      this.start().catch((error: unknown) => {
        process.stderr.write(`restarting the ${this.role} mariadbd failed: ${String(error)}\n`);
      }),
    );
  }

  /** SIGKILL, which also ends a paused server; resolves once it is gone. */
  async kill(): Promise<void> {
    this.killing = true;
    if (this.alive()) this.child!.kill('SIGKILL');
    await this.exited;
  }

  /** Runs `work` on a connection of the pair's own user, over the Unix socket. */
  async admin<T>(
    what: string,
    timeoutMs: number,
    work: (connection: Connection) => Promise<T>,
    user = ADMIN_USER,
  ): Promise<T> {
    // A socket of our own, to close at once: mysql2's destroy() only half-closes its socket and
    // waits for the server to close the other half, which a paused server never does, and the
    // open socket would keep the test process alive.
    const socket = connect(this.socket);
    // The limit below covers the connection too, and names what did not answer.
    const opened = createConnection({ stream: socket, user, connectTimeout: timeoutMs + 1_000 });
    let connected = false;
    const done = opened.then((connection) => {
      connected = true;
      return work(connection);
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the ${this.role} did not answer ${what} within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([done, timeout]);
    } finally {
      clearTimeout(timer);
      done.catch(() => undefined); // its failure after a timeout is already reported
      // Still connecting after the time limit: nothing will come of it.
      if (!connected) socket.destroy();
      void opened.then(
        (connection) => {
          connection.destroy(); // first, so that mysql2 takes the close for its own
          socket.destroy();
        },
        () => socket.destroy(),
      );
    }
  }
}

async function rows(connection: Connection, sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
  const [result] = await connection.query<RowDataPacket[]>(sql, params);
  return result;
}

/** One fresh data folder, copied for each server: they start identical, and a copy is cheaper than an install. */
async function install(root: string, dirs: string[]): Promise<void> {
  const data = join(root, 'template');
  await execFileAsync('mariadb-install-db', [
    '--no-defaults',
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
    `--datadir=${data}`,
    // Its temporary tables in the pair's folder: two files installing at once in a shared /tmp
    // have collided there ("Error on delete of '/tmp/#sql-temptable-...'").
    `--tmpdir=${root}`,
    `--user=${userInfo().username}`,
    // The server must start with the same redo log size, or it resizes the log first.
    '--innodb-log-file-size=8M',
    '--innodb-buffer-pool-size=64M',
  ]).catch((error: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(`mariadb-install-db failed: ${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  });
  for (const dir of dirs) {
    mkdirSync(dir);
    cpSync(data, join(dir, 'data'), { recursive: true });
  }
  rmSync(data, { recursive: true, force: true });
}

/**
 * The pair's users on each server, then replication. Outside the binary log (sql_log_bin=0): the
 * replica replays the primary's whole log from the start, and in GTID strict mode a transaction of
 * the replica's own would stop it; so the primary's log starts with the tests' first statement.
 */
async function setUp(primary: Server, replica: Server): Promise<void> {
  for (const server of [primary, replica]) {
    await server.admin(
      'setup',
      START_TIMEOUT_MS,
      async (c) => {
        await c.query('SET SESSION sql_log_bin = 0');
        await c.query(`CREATE USER '${ADMIN_USER}'@'localhost'`);
        await c.query(`GRANT ALL PRIVILEGES ON *.* TO '${ADMIN_USER}'@'localhost'`);
        if (server === primary) {
          await c.query(`CREATE USER '${REPLICATION_USER}'@'127.0.0.1'`);
          await c.query(`GRANT REPLICATION SLAVE ON *.* TO '${REPLICATION_USER}'@'127.0.0.1'`);
        }
      },
      'root',
    );
  }
  await replica.admin('CHANGE MASTER', START_TIMEOUT_MS, async (c) => {
    await c.query(
      `CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ${primary.port}, MASTER_USER = '${REPLICATION_USER}', MASTER_PASSWORD = '',
       MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1`,
    );
    await c.query('START SLAVE');
  });
  await replicationRunning(replica);
}

interface ReplicationState {
  running: boolean;
  /** The SQL thread stopped on an error: it will not start again by itself. */
  failed: boolean;
  /** @@gtid_slave_pos: what the replica has applied. */
  position: string;
  /** The threads' states and last errors, for messages. */
  threads: string;
}

async function replicationState(replica: Server): Promise<ReplicationState> {
  return replica.admin('SHOW SLAVE STATUS', 5_000, async (c) => {
    const [status] = await rows(c, 'SHOW SLAVE STATUS');
    const [{ position }] = await rows(c, 'SELECT @@GLOBAL.gtid_slave_pos AS position');
    if (!status)
      return { running: false, failed: true, position: String(position), threads: 'replication is not set up' };
    const errors = [status.Last_IO_Error, status.Last_SQL_Error].filter(Boolean).join('; ');
    return {
      running: status.Slave_IO_Running === 'Yes' && status.Slave_SQL_Running === 'Yes',
      failed: status.Slave_SQL_Running === 'No' && Boolean(status.Last_SQL_Error),
      position: String(position),
      threads: `replication threads: IO ${status.Slave_IO_Running}, SQL ${status.Slave_SQL_Running}${errors ? `; last errors: ${errors}` : ''}`,
    };
  });
}

async function replicationRunning(replica: Server): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const state = await replicationState(replica);
    if (state.running) return;
    if (state.failed || Date.now() > deadline) throw new Error(`replication did not start: ${state.threads}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Folders of pairs whose process died without removing them (their servers died with it). */
function removeAbandonedFolders(): void {
  const folder = new RegExp(`^${FOLDER_PREFIX}(\\d+)-`);
  for (const name of readdirSync(tmpdir())) {
    const owner = folder.exec(name);
    if (owner && !processRuns(Number(owner[1]))) rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
