/**
 * A MONITOR connection of its own, on a plain socket, for tests that count the Redis commands
 * a request sends.
 *
 * Why not ioredis's `monitor()`: it switches its connection to monitoring mode in a promise
 * callback after MONITOR's "+OK". When the server's first monitor lines arrive in the same
 * TCP chunk as that "+OK" (a busy server does this), ioredis reads them as replies to commands
 * it never sent and emits "Command queue state error", sometimes twice, the second time with
 * no listener left (CI saw this on inbox.test.ts). Here the "+OK" and every line after it are
 * read by one parser, so there is no window.
 */
import { connect, type Socket } from 'node:net';

/** One command the server saw: its arguments (the name first) and the client's `host:port`. */
export interface MonitoredCommand {
  args: string[];
  source: string;
}

export class RedisMonitor {
  private buffered = '';
  private confirmed = false;
  private stopped = false;
  private readonly listeners: Array<(command: MonitoredCommand) => void> = [];
  /** Rejects when the connection fails or closes before `stop()`: a wait on the monitor's
   * lines can race it instead of waiting for a test timeout. */
  readonly failed: Promise<never>;

  private constructor(private readonly socket: Socket) {
    this.failed = new Promise<never>((_, reject) => {
      socket.on('error', reject);
      socket.on('close', () => {
        if (!this.stopped) reject(new Error('the MONITOR connection closed'));
      });
    });
    this.failed.catch(() => {}); // seen by whoever races it
  }

  /** Connects to `redis://host:port` and resolves once the server has confirmed MONITOR. */
  static async start(url: string): Promise<RedisMonitor> {
    const { hostname, port } = new URL(url);
    const socket = connect({ host: hostname, port: Number(port) });
    const monitor = new RedisMonitor(socket);
    await new Promise<void>((resolve, reject) => {
      monitor.failed.catch(reject);
      socket.on('data', (chunk: Buffer) => {
        try {
          if (monitor.read(chunk.toString('latin1'))) resolve();
        } catch (error) {
          socket.destroy(error as Error); // fails `failed`, and with it a start still waiting
        }
      });
      socket.write('MONITOR\r\n');
    });
    return monitor;
  }

  onCommand(listener: (command: MonitoredCommand) => void): void {
    this.listeners.push(listener);
  }

  stop(): void {
    this.stopped = true;
    this.socket.destroy();
  }

  /** Reads a chunk; true once MONITOR's "+OK" has been read. Lines end in CRLF (Redis escapes
   * CR and LF inside arguments), so a line is complete when its CRLF has arrived. */
  private read(chunk: string): boolean {
    this.buffered += chunk;
    let end: number;
    while ((end = this.buffered.indexOf('\r\n')) >= 0) {
      const line = this.buffered.slice(0, end);
      this.buffered = this.buffered.slice(end + 2);
      if (!this.confirmed) {
        if (line !== '+OK') throw new Error(`MONITOR was answered with ${JSON.stringify(line)}, not +OK`);
        this.confirmed = true;
      } else {
        const command = parseMonitorLine(line);
        for (const listener of this.listeners) listener(command);
      }
    }
    return this.confirmed;
  }
}

/**
 * Parses `+1796475820.768855 [0 127.0.0.1:54378] "info" "replication"`: each argument is a
 * quoted string with C-like escapes (Redis's sdscatrepr); `source` may also be `lua` or a
 * unix socket path.
 */
export function parseMonitorLine(line: string): MonitoredCommand {
  const header = /^\+[\d.]+ \[\d+ ([^\]]*)\]/.exec(line);
  if (!header) throw new Error(`not a MONITOR line: ${JSON.stringify(line)}`);
  const args: string[] = [];
  for (const match of line.slice(header[0].length).matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    args.push(unescapeRepr(match[1]));
  }
  return { args, source: header[1] };
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' };

function unescapeRepr(text: string): string {
  return text.replace(/\\(x[0-9a-f]{2}|.)/g, (_, escape: string) =>
    escape.length === 3 ? String.fromCharCode(parseInt(escape.slice(1), 16)) : (ESCAPES[escape] ?? escape),
  );
}
