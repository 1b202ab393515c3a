/**
 * What one connection may cost the HTTP server: a refused body is not read on (the answer goes
 * out with Connection: close and the connection ends), and a client that sends its headers or
 * its body too slowly is cut (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS). Raw sockets, so
 * that the test controls every byte and sees what the server does with the connection.
 */
import { connect, Socket } from 'node:net';
import { ok, startTestApp, TestApp } from '../../support/harness';

let app: TestApp;
let port: number;

beforeAll(async () => {
  app = await startTestApp('http_bounds', {
    env: { HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000' },
  });
  port = Number(new URL(app.url).port);
});
afterAll(() => app.close());

/** A raw connection to the app: what it received so far, and whether the server ended it. */
interface RawConnection {
  socket: Socket;
  received(): string;
  /** Resolves when the server has ended or reset the connection. */
  closed: Promise<void>;
}

async function open(): Promise<RawConnection> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  socket.on('data', (chunk: Buffer) => void (text += chunk.toString('latin1')));
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
    socket.once('end', () => resolve());
  });
  // A reset by the server is an outcome the tests look at, not a failure of the test.
  socket.on('error', () => undefined);
  return { socket, received: () => text, closed };
}

/** Resolves true once `condition` holds, or false after `ms` (the caller asserts on the outcome). */
async function within(ms: number, condition: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

/** Writes `bytes` bytes of body every `everyMs` until the connection closes or `total` bytes went out. */
function trickle(connection: RawConnection, bytes: number, everyMs: number, total: number): () => void {
  let written = 0;
  let closed = false;
  void connection.closed.then(() => (closed = true));
  const timer = setInterval(() => {
    if (closed || written >= total || connection.socket.destroyed) return clearInterval(timer);
    connection.socket.write('x'.repeat(bytes));
    written += bytes;
  }, everyMs);
  return () => clearInterval(timer);
}

const headersOf = (path: string, extra: string) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}\r\n`;

describe('a refused body', () => {
  it('is answered 413 with Connection: close before the client finished sending, and the connection ends', async () => {
    const connection = await open();
    // Declares 50 MB, sends 64 kB, then keeps sending slowly: the server must not wait for the rest.
    connection.socket.write(headersOf('/graphql', 'Content-Length: 50000000\r\n'));
    connection.socket.write('{"query":"{ __typename }","variables":{"pad":"' + 'x'.repeat(64 * 1024));
    const stop = trickle(connection, 16 * 1024, 20, 50_000_000);
    const answered = await within(5000, () => connection.received().includes('\r\n\r\n'));
    const ended = await Promise.race([
      connection.closed.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000)),
    ]);
    stop();
    expect(answered).toBe(true);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 413 /);
    expect(connection.received().toLowerCase()).toContain('connection: close');
    expect(connection.received()).toContain('PAYLOAD_TOO_LARGE');
    expect(ended).toBe(true);
    expect(connection.socket.bytesWritten).toBeLessThan(50_000_000);
    connection.socket.destroy();
  });

  it('streamed without a Content-Length: answered 413 once over the limit, and the connection ends', async () => {
    const connection = await open();
    connection.socket.write(headersOf('/graphql', 'Transfer-Encoding: chunked\r\n'));
    const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    connection.socket.write(chunk('{"query":"{ __typename }","variables":{"pad":"'));
    let closed = false;
    void connection.closed.then(() => (closed = true));
    const timer = setInterval(() => {
      if (closed || connection.socket.destroyed) return clearInterval(timer);
      connection.socket.write(chunk('x'.repeat(16 * 1024)));
    }, 20);
    const answered = await within(5000, () => connection.received().includes('\r\n\r\n'));
    const ended = await Promise.race([
      connection.closed.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000)),
    ]);
    clearInterval(timer);
    expect(answered).toBe(true);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 413 /);
    expect(connection.received().toLowerCase()).toContain('connection: close');
    expect(ended).toBe(true);
    connection.socket.destroy();
  });

  it('in an unknown Content-Encoding: answered 415 without reading on, and the connection ends', async () => {
    const connection = await open();
    connection.socket.write(headersOf('/graphql', 'Content-Encoding: compress\r\nContent-Length: 50000000\r\n'));
    const stop = trickle(connection, 16 * 1024, 20, 50_000_000);
    const answered = await within(5000, () => connection.received().includes('\r\n\r\n'));
    const ended = await Promise.race([
      connection.closed.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000)),
    ]);
    stop();
    expect(answered).toBe(true);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 415 /);
    expect(ended).toBe(true);
    connection.socket.destroy();
  });
});

describe('slow clients', () => {
  it('cuts a body sent a byte at a time (HTTP_REQUEST_TIMEOUT_MS)', async () => {
    const connection = await open();
    connection.socket.write(headersOf('/graphql', 'Content-Length: 100000\r\n'));
    const stop = trickle(connection, 1, 100, 100_000);
    const ended = await Promise.race([
      connection.closed.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000)),
    ]);
    stop();
    expect(ended).toBe(true);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
    connection.socket.destroy();
  });

  it('cuts headers sent a byte at a time (HTTP_HEADERS_TIMEOUT_MS)', async () => {
    const connection = await open();
    connection.socket.write('POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    let closed = false;
    void connection.closed.then(() => (closed = true));
    const timer = setInterval(() => {
      if (closed || connection.socket.destroyed) return clearInterval(timer);
      connection.socket.write('X-Slow: a\r\n');
    }, 100);
    const ended = await Promise.race([
      connection.closed.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000)),
    ]);
    clearInterval(timer);
    expect(ended).toBe(true);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
    connection.socket.destroy();
  });

  it('serves ordinary requests as before', async () => {
    expect(ok(await app.gql('{ __typename }')).__typename).toBe('Query');
  });
});
