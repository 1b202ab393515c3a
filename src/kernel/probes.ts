/**
 * The HTTP probes of a process that serves no API (the fan-out worker, `npm run worker`), on a
 * port of its own (WORKER_PORT), on plain node:http (the worker loads no Express):
 * - GET /healthz: liveness, 200 while the process runs;
 * - GET /readyz: readiness, 200 `{"status":"ready"}` or 503 `{"status":"not ready"}`; what was
 *   checked and why it failed only for a bearer of METRICS_TOKEN (as the API's /readyz);
 * - GET /metrics: the process's Prometheus metrics (with METRICS_TOKEN set, for its bearer only).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from './config';
import type { Metrics } from './observability';

/** What a readiness check found: whether the process can do its work, and what it checked. */
export interface Readiness {
  ready: boolean;
  details: Record<string, unknown>;
}

export interface ProbeOptions {
  host: string;
  port: number;
  /** The setting the port came from, named when it cannot be used. */
  portSetting: string;
  metrics: Pick<Metrics, 'registry'>;
  /** METRICS_TOKEN: who may read /metrics and the details of /readyz. */
  metricsToken: string | null;
  readiness(): Promise<Readiness>;
}

export interface RunningProbes {
  url: string;
  close(): Promise<void>;
}

export async function serveProbes(options: ProbeOptions): Promise<RunningProbes> {
  const isBearer = bearerOf(options.metricsToken);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(res, 405, 'application/json', JSON.stringify({ error: 'GET only' }));
    if (path === '/healthz') return send(res, 200, 'application/json', JSON.stringify({ status: 'ok' }));
    if (path === '/readyz') {
      void options.readiness().then(
        ({ ready, details }) => {
          const status = ready ? 'ready' : 'not ready';
          const body = isBearer(req.headers.authorization) ? { status, ...details } : { status };
          send(res, ready ? 200 : 503, 'application/json', JSON.stringify(body));
        },
        () => send(res, 503, 'application/json', JSON.stringify({ status: 'not ready' })),
      );
      return;
    }
    if (path === '/metrics') {
      if (options.metricsToken !== null && !isBearer(req.headers.authorization)) {
        res.setHeader('www-authenticate', 'Bearer realm="metrics"');
        return send(res, 401, 'text/plain', 'send METRICS_TOKEN as Authorization: Bearer <token>');
      }
      void options.metrics.registry.metrics().then(
        (text) => send(res, 200, options.metrics.registry.contentType, text),
        (error: unknown) => send(res, 500, 'text/plain', `metrics failed: ${String(error)}`),
      );
      return;
    }
    send(
      res,
      404,
      'application/json',
      JSON.stringify({ error: 'not found: /healthz, /readyz and /metrics are served here' }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: NodeJS.ErrnoException) => {
    const why = error.code === 'EADDRINUSE' ? 'it is in use' : error.message;
    throw new ConfigError(`cannot listen on ${options.host}:${options.port} (${options.portSetting}, HOST): ${why}`);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.statusCode = status;
  res.setHeader('content-type', type);
  res.end(body);
}

/**
 * Whether an Authorization header carries `Bearer <token>`; never true without a token. Both
 * sides are hashed first so that timingSafeEqual compares equal lengths, and the time taken
 * says nothing about how much of a guess was right.
 */
export function bearerOf(token: string | null): (header: string | undefined) => boolean {
  if (token === null) return () => false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  // The scheme is case-insensitive (RFC 9110); the token is not.
  return (header) => timingSafeEqual(digest(/^bearer +(.+)$/i.exec(header ?? '')?.[1] ?? ''), expected);
}
