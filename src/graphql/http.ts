/**
 * The GraphQL endpoint on plain node:http: Apollo Server's integration interface
 * (`executeHTTPGraphQLRequest`) fed directly, without an Express integration.
 *
 * Why: nearly every request of the API is a POST to /graphql, and Express's router, body
 * parser and `res.send` cost more than Apollo itself. Measured on this project's machine with
 * `{ __typename }`: Apollo behind Express 8,000 requests/s, the same Apollo behind this handler
 * 25,000/s. So the server hands POST /graphql straight to this handler; the rest of /graphql
 * (GET queries, CORS preflights) reaches it through Express, which also serves GraphiQL,
 * /healthz, /readyz and /metrics.
 *
 * What an Express integration's middleware would do is done here: CORS headers (the `cors`
 * middleware, which answers preflights itself), the request id, gzip/deflate/br request
 * bodies, a body limit (413 PAYLOAD_TOO_LARGE, counted after decompression), an unknown
 * Content-Encoding (415 UNSUPPORTED_MEDIA_TYPE) and JSON that does not parse (400
 * BAD_REQUEST), all as GraphQL-shaped JSON errors. A refused body is not read on: the answer
 * goes out with Connection: close and the connection ends. An answer over RESPONSE_MAX_BYTES is
 * replaced by RESPONSE_TOO_LARGE.
 */
import { withReadScope } from '../db/read-scope';
import type { ApolloServer, HTTPGraphQLRequest } from '@apollo/server';
import { HeaderMap } from '@apollo/server';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Context } from './context';
import type { PersistedDocuments } from './persisted-documents';
import {
  badRequest,
  HttpError,
  httpInternalError,
  payloadTooLarge,
  responseTooLarge,
  unsupportedMediaType,
} from '../kernel/errors';
import { logger } from '../kernel/observability';

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

export interface GraphQLHandlerOptions {
  apollo: ApolloServer<Context>;
  /** CORS (the `cors` package's middleware): headers for browsers, and the preflight answers. */
  cors: Middleware;
  /** Largest body accepted. */
  maxBodyBytes: number;
  /** The trusted documents (PERSISTED_DOCUMENTS): a request's document id becomes its document, or the request is refused. */
  documents: PersistedDocuments;
  /** Largest answer sent (RESPONSE_MAX_BYTES); a larger one is replaced by RESPONSE_TOO_LARGE. */
  maxResponseBytes: number;
  /**
   * Whether requests get a read scope (replicas are configured). Without replicas there is
   * nothing to route, and no scope is made: the scope is an AsyncLocalStorage, and once one is
   * entered Node 20 tracks every promise of the process (about 6% of a feed page's CPU).
   */
  readScopes: boolean;
  requestIdOf(req: IncomingMessage): string;
  contextOf(req: IncomingMessage, requestId: string): Promise<Context>;
}

/** Whether a request is POST /graphql (with or without a query string): the server's fast path. */
export function isGraphQLPost(req: IncomingMessage): boolean {
  if (req.method !== 'POST' || !req.url) return false;
  const path = req.url.split('?', 1)[0];
  return path === '/graphql' || path === '/graphql/';
}

/** The handler of every request to /graphql but GraphiQL's page. */
export function graphqlHandler(options: GraphQLHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    options.cors(req, res, (error?: unknown) => {
      if (error) return sendError(res, httpInternalError('CORS check failed'));
      const requestId = options.requestIdOf(req);
      res.setHeader('x-request-id', requestId);
      // Only POST carries a body (Apollo refuses other methods but GET).
      const reading: Promise<Body> =
        req.method === 'POST' ? readBody(req, options.maxBodyBytes) : Promise.resolve({ kind: 'ok', value: undefined });
      // With replicas, each request in a read scope of its own: its context and operation decide
      // whether its lag-tolerant reads may go to a replica (db/replicas.ts).
      void reading.then((body) => {
        if (body.kind !== 'ok') return rejectBody(req, res, body, options.maxBodyBytes);
        const run = () => execute(options, req, res, requestId, body.value);
        return options.readScopes ? withReadScope(run) : run();
      });
    });
  };
}

type Body =
  | { kind: 'ok'; value: unknown }
  | { kind: 'too-large' }
  | { kind: 'unreadable'; reason: string }
  | { kind: 'unsupported-encoding'; encoding: string };

/** The decompressor the body needs: none (plain body), one, or 'unsupported'. */
function inflaterFor(req: IncomingMessage): Transform | null | 'unsupported' {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return null;
  if (encoding === 'gzip' || encoding === 'x-gzip') return createGunzip();
  if (encoding === 'deflate') return createInflate();
  if (encoding === 'br') return createBrotliDecompress();
  return 'unsupported';
}

/** JSON bodies only (as express.json): any other content type leaves the body to Apollo's checks. */
function isJson(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';', 1)[0].trim().toLowerCase();
  return type === 'application/json';
}

/**
 * How long the connection of a refused body stays open, half-closed and unread, after its answer
 * went out. Closing a socket that holds unread bytes makes the kernel send a reset, which can
 * overtake the answer and void it before the client reads it (1 connection in 40 on loopback,
 * measured); a second lets the answer arrive first.
 */
const REFUSED_LINGER_MS = 1000;

/**
 * Stops reading the request: what the client still sends is never read (TCP holds it back),
 * and the connection is ended once the answer is out (rejectBody). A 413 that waited for the
 * rest of the body would let a client keep the server reading for as long as it sends.
 */
function stopReading(req: IncomingMessage, inflater: Transform | null): void {
  if (inflater) {
    req.unpipe(inflater);
    inflater.destroy();
  }
  req.removeAllListeners('data');
  req.pause();
}

function readBody(req: IncomingMessage, maxBytes: number): Promise<Body> {
  return new Promise((resolve) => {
    const inflater = inflaterFor(req);
    if (inflater === 'unsupported') {
      stopReading(req, null);
      return resolve({ kind: 'unsupported-encoding', encoding: String(req.headers['content-encoding']) });
    }
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      stopReading(req, null);
      return resolve({ kind: 'too-large' });
    }
    const stream = inflater ? req.pipe(inflater) : req;
    const chunks: Buffer[] = [];
    let size = 0;
    // Over the limit, nothing more is read; a compressed body stops being decompressed there,
    // so a zip bomb costs no more than the limit.
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      stream.off('data', onData).off('end', onEnd);
      stopReading(req, inflater);
      resolve({ kind: 'too-large' });
    };
    const onEnd = () => {
      if (!isJson(req)) return resolve({ kind: 'ok', value: undefined });
      try {
        resolve({ kind: 'ok', value: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch (error) {
        resolve({ kind: 'unreadable', reason: (error as Error).message });
      }
    };
    stream.on('data', onData).on('end', onEnd);
    stream.on('error', (error: Error) => {
      stream.off('data', onData).off('end', onEnd);
      stopReading(req, inflater);
      resolve({ kind: 'unreadable', reason: error.message });
    });
  });
}

/**
 * Answers a body that could not be used. One that was not read to its end also ends the
 * connection: its unread rest would otherwise be read as the next request, or dropped by reading
 * it all. (JSON that does not parse was read whole: that connection stays usable.)
 */
function rejectBody(
  req: IncomingMessage,
  res: ServerResponse,
  body: Exclude<Body, { kind: 'ok' }>,
  maxBodyBytes: number,
): void {
  if (!req.readableEnded) closeAfterAnswer(req, res);
  if (body.kind === 'too-large') sendError(res, payloadTooLarge(maxBodyBytes));
  else if (body.kind === 'unsupported-encoding') sendError(res, unsupportedMediaType(body.encoding));
  else sendError(res, badRequest(`unreadable request body: ${body.reason}`));
}

async function execute(
  options: GraphQLHandlerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  body: unknown,
): Promise<void> {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  const queryAt = req.url!.indexOf('?');
  const sent: HTTPGraphQLRequest = {
    method: req.method!.toUpperCase(),
    headers,
    search: queryAt >= 0 ? req.url!.slice(queryAt) : '',
    body,
  };
  const httpGraphQLRequest = options.documents.resolveHttp(sent);
  if (!('method' in httpGraphQLRequest)) return sendError(res, httpGraphQLRequest);
  try {
    const response = await options.apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest,
      context: () => options.contextOf(req, requestId),
    });
    if (response.body.kind === 'complete') {
      const oversize = bytesOver(response.body.string, options.maxResponseBytes);
      if (oversize !== null) return refuseAnswer(res, requestId, options.maxResponseBytes, oversize);
    }
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    // Incremental delivery (@defer, which graphql 16 does not have): past the cap the
    // connection is cut, since the status has gone out.
    let sent = 0;
    for await (const chunk of response.body.asyncIterator) {
      sent += Buffer.byteLength(chunk);
      if (sent > options.maxResponseBytes) return void res.destroy();
      res.write(chunk);
    }
    res.end();
  } catch {
    // Apollo answers its own failures; this is a broken connection or a bug of ours.
    if (!res.headersSent) sendError(res, httpInternalError('Internal server error'));
    else res.destroy();
  }
}

/**
 * The answer's size in bytes when it is over `maxBytes`, else null. A UTF-16 code unit is at
 * most 3 bytes of UTF-8, so an answer of at most maxBytes / 3 code units (every feed page) is
 * let through without counting its bytes.
 */
function bytesOver(answer: string, maxBytes: number): number | null {
  if (answer.length * 3 <= maxBytes) return null;
  const bytes = Buffer.byteLength(answer);
  return bytes > maxBytes ? bytes : null;
}

function refuseAnswer(res: ServerResponse, requestId: string, maxBytes: number, bytes: number): void {
  logger.warn({
    requestId,
    bytes,
    max: maxBytes,
    msg: 'an answer over RESPONSE_MAX_BYTES was replaced by RESPONSE_TOO_LARGE',
  });
  sendError(res, responseTooLarge(maxBytes, bytes));
}

/**
 * Sends the answer with Connection: close, then ends the connection without reading on: the FIN
 * follows the answer, and the socket is destroyed REFUSED_LINGER_MS later (at once if the
 * client closes first). node:http would instead resume the request to drop the rest of its body,
 * and destroy the socket as soon as the answer is handed to the kernel (Socket#destroySoon, which
 * it calls on the socket of a Connection: close answer): that close is the reset above.
 */
function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  res.setHeader('connection', 'close');
  socket.destroySoon = () => {
    req.pause();
    socket.end();
    const cut = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
    cut.unref();
    socket.once('close', () => clearTimeout(cut));
  };
}

function sendError(res: ServerResponse, error: HttpError): void {
  res.statusCode = error.status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(error.body));
}
