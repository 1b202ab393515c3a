/**
 * Real processes for fault tests: a private redis-server that a test can stop and start again,
 * and the fan-out worker process (node dist/src/worker.js) that a test can kill.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { connect, createServer, Server, Socket } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/**
 * Ports freePort hands out: below the kernel's ephemeral range (32768-60999 on Linux), so that no
 * outgoing connection of a parallel test can be given the port between freePort's check and the
 * server's listen (a port the kernel picked for us, listen(0), is an ephemeral one: a local run's
 * EADDRINUSE in worker-process.test.ts). A Redis Cluster node also uses its port + 10000 for its
 * bus, still below 32768.
 */
const FREE_PORTS = { from: 20_000, to: 22_700 };

/** A port nobody listens on now, outside the ephemeral range (see FREE_PORTS). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const port = FREE_PORTS.from + Math.floor(Math.random() * (FREE_PORTS.to - FREE_PORTS.from));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port found in ${FREE_PORTS.from}-${FREE_PORTS.to} after 100 attempts`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Whether a redis-server on `port` answers PING (not while it loads its data). Over a plain
 * socket: an ioredis client disconnected after a refused connection left its 2 s disconnect
 * timer running (its stream had closed before the timer's listener), which kept Jest's worker
 * alive past its file ("a worker process has failed to exit gracefully").
 */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const done = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}

/**
 * A redis-server of the test's own, on its own port. By default it keeps nothing on disk; a
 * persistent one keeps an append-only file in a temporary folder, so its data outlives a restart;
 * an 'rdb' one keeps only what a SAVE wrote (docker's redis:7 default): killed and started again
 * on the same folder, it comes back with the data of its last SAVE.
 */
export class PrivateRedis {
  private process: ChildProcess | undefined;
  private readonly dir: string | undefined;

  constructor(
    readonly port: number,
    private readonly persistence: boolean | 'rdb' = false,
    /** More redis-server arguments, e.g. ['--maxmemory-policy', 'allkeys-lru']. */
    private readonly extraArgs: string[] = [],
  ) {
    this.dir = persistence ? mkdtempSync(join(tmpdir(), 'feed-redis-')) : undefined;
  }

  private connection: Redis | undefined;

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /** A client of the test's own (closed by stop). */
  client(): Redis {
    this.connection ??= new Redis(this.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    return this.connection;
  }

  async start(): Promise<void> {
    const storage =
      this.persistence === 'rdb'
        ? ['--appendonly', 'no', '--dir', this.dir!, '--dbfilename', 'dump.rdb']
        : this.dir
          ? ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', this.dir]
          : ['--appendonly', 'no'];
    this.process = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', ...storage, ...this.extraArgs],
      {
        stdio: 'ignore',
      },
    );
    await waitFor(`redis-server on ${this.port}`, () => answersPing(this.port));
  }

  /**
   * Freezes the server (SIGSTOP): its connections stay open but nothing answers, like a Redis
   * that hangs or is overloaded, which a client cannot tell from a slow one.
   */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  /** Lets a paused server run again (SIGCONT); it answers what was sent meanwhile. */
  resume(): void {
    this.process?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    this.connection?.disconnect();
    this.connection = undefined;
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    child.kill('SIGCONT'); // a paused server would not act on SIGTERM
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // An append-only server is shut down cleanly (it has synced its file); the others are
    // killed (an 'rdb' one keeps the dump of its last SAVE, not what it held at the end).
    child.kill(this.dir && this.persistence !== 'rdb' ? 'SIGTERM' : 'SIGKILL');
    await exited;
  }
}

export interface WorkerProcess {
  /** Resolves with the exit code when the process ends by itself. */
  exited: Promise<number | null>;
  child: ChildProcess;
  output: () => string;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node dist/src/worker.js` with the given environment (built by the global setup). */
export function startWorkerProcess(env: Record<string, string>): WorkerProcess {
  return startNodeProcess('worker.js', { WORKER_PORT: '0', ...env });
}

/** Starts `node dist/src/<script>` (server.js or worker.js), as `npm start` / `npm run worker` do. */
export function startNodeProcess(script: string, env: Record<string, string>, args: string[] = []): WorkerProcess {
  return startDistProcess(join('src', script), env, args);
}

/** Starts `node dist/<file>` (say scripts/migrate.js, as `npm run migrate` does). */
export function startDistProcess(file: string, env: Record<string, string>, args: string[] = []): WorkerProcess {
  const root = join(__dirname, '..', '..');
  let output = '';
  const child = spawn(process.execPath, [join(root, 'dist', file), ...args], {
    cwd: root,
    // At info whatever the app's env says: tests wait for a process's info lines (listening, migrated).
    env: { PATH: process.env.PATH ?? '', ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => output,
    kill: async (signal) => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

/**
 * A TCP proxy in front of a real server (MySQL here), that a test can cut: `block` drops every
 * connection and refuses new ones, as an unreachable server would; `unblock` lets them through.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private blocked = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      if (this.blocked) {
        client.destroy();
        return;
      }
      const upstream = connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  block(): void {
    this.blocked = true;
    for (const socket of this.sockets) socket.destroy();
  }

  unblock(): void {
    this.blocked = false;
  }

  async stop(): Promise<void> {
    this.block();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
