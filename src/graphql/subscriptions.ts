/**
 * GraphQL over WebSocket (the graphql-ws protocol), on the same port and path as the HTTP
 * endpoint (ws://host:port/graphql), the way Apollo Server documents it: a `ws` server on the
 * HTTP server, graphql-ws's `useServer`, and a plugin that closes it when Apollo drains.
 * Subscriptions are what it is for; queries and mutations run on it too, under the same rules as
 * over HTTP.
 *
 * What a socket goes through:
 * - Past MAX_WEBSOCKETS open sockets in this process, a new one is closed at once with 4430 and
 *   the reason `RATE_LIMITED: ...`. graphql-ws clients retry a 4430 later, with backoff (it is
 *   none of the codes they give up on).
 * - connection_init carries `{ "authorization": "Bearer <token>" }`. Without a token, or with one
 *   that is forged or expired, the socket is closed with 4401 and the reason
 *   `UNAUTHENTICATED: <why>`: there is nothing an anonymous viewer can subscribe to. A user who
 *   holds MAX_WEBSOCKETS_PER_USER sockets in this process has the next one closed with 4430.
 * - The token's expiry ends the socket the same way (4401, "the token has expired"), and so does
 *   the end of its session (`logout`, `logoutEverywhere`, in any API process; auth.sessions.ts):
 *   a token that is no longer valid must not keep a feed flowing. The client logs in again and
 *   reconnects.
 * - Each subscribe message is parsed and validated as an HTTP request is, then checked against
 *   MAX_OPERATIONS_PER_WEBSOCKET (operations of any kind running on the socket), the query
 *   limits (limits.ts), and for a subscription the subscribe rate limit
 *   (RATE_LIMIT_SUBSCRIBE_PER_USER) and the per-user cap on open subscriptions in this process
 *   (MAX_SUBSCRIPTIONS_PER_USER). A refusal is an `error` message with the usual
 *   `extensions.code`; the socket stays open.
 * - Queries and mutations get what they get over HTTP: the resolvers' rate limits, and with read
 *   replicas a read scope of their own, in which a recent writer reads the primary and a
 *   mutation marks its viewer as a recent writer (read-your-writes.ts). A subscription's events
 *   are blogs just written: their reads go to the primary.
 * - The server never queues without bound for a client that stopped reading: before each message
 *   it sends, it looks at what still waits to be sent on the socket, and past
 *   WEBSOCKET_MAX_BUFFERED_BYTES it closes the socket with 4413. (A subscription waits for each
 *   event to be written before it takes the next, its events wait in its own bounded queue, see
 *   live/live.queue.ts; what piles up is the answers of operations running at once, bounded by
 *   MAX_OPERATIONS_PER_WEBSOCKET, and refusals and pongs, which a client can ask for endlessly.)
 * - A malformed message or an unknown message type closes the socket with graphql-ws's own codes
 *   (4400 and the like): the protocol's answer, which every graphql-ws client understands.
 */
import type { ApolloServerPlugin } from '@apollo/server';
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import {
  execute,
  ExecutionArgs,
  ExecutionResult,
  getOperationAST,
  GraphQLError,
  GraphQLSchema,
  Kind,
  OperationDefinitionNode,
  OperationTypeNode,
  parse,
  subscribe,
  validate,
} from 'graphql';
import { CloseCode } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { Counter, Gauge, Registry } from 'prom-client';
import { WebSocket, WebSocketServer } from 'ws';
import { SESSION_END_REASON, type SessionEnd } from '../auth/auth.sessions';
import type { TokenCheck, ViewerToken } from '../auth/auth.tokens';
import { readPrimaryInScope, withReadScope } from '../db/read-scope';
import type { WebSocketLimits } from '../kernel/config';
import { badUserInput, ErrorCode, persistedDocumentRefused, rateLimited } from '../kernel/errors';
import type { Metrics } from '../kernel/observability';
import { formatError } from './apollo';
import type { Context, Services } from './context';
import { checkQueryLimits } from './limits';
import type { PersistedDocuments } from './persisted-documents';
import { operationEnded, operationStarts } from './read-your-writes';

/** The close code of a socket whose viewer is not (or no longer) authenticated (graphql-ws uses 4401 for "Unauthorized"). */
export const CLOSE_UNAUTHENTICATED = CloseCode.Unauthorized;

/**
 * The close code of a socket over MAX_WEBSOCKETS or MAX_WEBSOCKETS_PER_USER. Not graphql-ws's
 * 4429 ("too many initialisation requests"), which its clients take as final: this one they
 * retry, with backoff, as they should (a place frees up when another socket closes).
 */
export const CLOSE_TOO_MANY_SOCKETS = 4430;

/** The close code of a socket whose client stopped reading (WEBSOCKET_MAX_BUFFERED_BYTES); graphql-ws clients reconnect. */
export const CLOSE_NOT_READING = 4413;

/** Largest message a client may send: the HTTP body limit applies to a subscribe message too. */
const MAX_MESSAGE_BYTES = 100 * 1024;

/** setTimeout's longest delay (about 24.8 days); a longer-lived token is re-armed in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The limit names of refusals, in `extensions.limit` and the refusals metric's label. */
type SocketLimit = 'maxWebSockets' | 'maxWebSocketsPerUser' | 'maxOperationsPerWebSocket' | 'webSocketMaxBufferedBytes';

export interface SubscriptionDeps {
  schema: GraphQLSchema;
  services: Services;
  checkToken(authorization: string | undefined): Promise<TokenCheck>;
  /** Calls `ended` when the viewer's session ends (a logout) while the socket is open; returns the function that stops watching. */
  watchSession(viewer: ViewerToken, ended: (why: SessionEnd) => void): () => void;
  /** The client's address of the upgrade request (TRUSTED_PROXIES apply). */
  clientAddress(req: http.IncomingMessage): string;
  /** Builds a request's context the way HTTP requests get theirs. */
  contextOf(auth: TokenCheck, ip: string, requestId: string): Context;
  /** What an operation's reads need before it runs, as over HTTP: a recent writer's go to the primary (api.ts). */
  readsOf(context: Context): Promise<void>;
  /** The trusted documents (PERSISTED_DOCUMENTS): a subscribe message may name one instead of sending it. */
  documents: PersistedDocuments;
  /** Whether operations run in read scopes of their own (replicas are configured), as HTTP requests do. */
  readScopes: boolean;
  maxSubscriptionsPerUser: number;
  limits: WebSocketLimits;
  /** Where the sockets' gauge and refusals counter are registered (/metrics). */
  registry: Registry;
  warn(message: string): void;
  production: boolean;
  /** Where the open sockets and subscriptions are reported. */
  metrics?: Pick<Metrics, 'watchSubscriptions'>;
}

interface SocketState {
  auth: Extract<TokenCheck, { kind: 'viewer' }>;
  viewerId: number;
  ip: string;
  expiry: NodeJS.Timeout | null;
  /** Stops watching the session (auth/auth.sessions.ts). */
  unwatch: () => void;
  /**
   * This socket's running operations, each by its subscribe message's payload: the message id is
   * the client's to reuse once it completed an operation, even one still running here.
   */
  operations: Set<object>;
  /** Those of them that are subscriptions. */
  subscriptions: Set<object>;
}

/** Serves GraphQL over WebSocket on `httpServer`; the returned plugin closes it when Apollo drains. */
export function serveSubscriptions(httpServer: http.Server, deps: SubscriptionDeps): ApolloServerPlugin {
  const { limits } = deps;
  const wsServer = new WebSocketServer({ server: httpServer, path: '/graphql', maxPayload: MAX_MESSAGE_BYTES });
  const states = new WeakMap<object, SocketState>();
  const openByUser = new Map<number, number>();
  const socketsByUser = new Map<number, number>();
  const places = socketPlaces(deps.registry);

  const refuse = (socket: WebSocket, code: number, reason: string, limit: SocketLimit) => {
    places.refused(limit);
    places.release(socket);
    socket.close(code, reason);
  };
  const count = (counts: Map<number, number>, userId: number, by: 1 | -1) => {
    const next = (counts.get(userId) ?? 0) + by;
    if (next > 0) counts.set(userId, next);
    else counts.delete(userId);
  };
  const release = (state: SocketState, payload: object) => {
    state.operations.delete(payload);
    if (state.subscriptions.delete(payload)) count(openByUser, state.viewerId, -1);
  };
  /** Closes the socket once what waits to be sent on it passes the bound (see the top of the file). */
  const notReading = (socket: WebSocket, state: SocketState | undefined): boolean => {
    if (socket.readyState !== WebSocket.OPEN || socket.bufferedAmount <= limits.maxBufferedBytes) return false;
    deps.warn(
      `closed a WebSocket${state ? ` of user ${state.viewerId}` : ''}: its client is not reading (${socket.bufferedAmount} bytes wait to be sent, over WEBSOCKET_MAX_BUFFERED_BYTES)`,
    );
    refuse(
      socket,
      CLOSE_NOT_READING,
      `the client is not reading: over ${limits.maxBufferedBytes} bytes wait to be sent (WEBSOCKET_MAX_BUFFERED_BYTES); reconnect`,
      'webSocketMaxBufferedBytes',
    );
    return true;
  };

  // Before graphql-ws's own listener: a socket over the process's bound is closed before it is served.
  wsServer.on('connection', (socket) => {
    if (places.taken >= limits.maxSockets) {
      refuse(
        socket,
        CLOSE_TOO_MANY_SOCKETS,
        `${ErrorCode.RATE_LIMITED}: this process holds its most WebSockets (MAX_WEBSOCKETS: ${limits.maxSockets}); retry shortly`,
        'maxWebSockets',
      );
      return;
    }
    places.take(socket);
    socket.once('close', () => places.release(socket));
  });

  // Without replicas no scope is made (see http.ts: entering one makes Node track every promise).
  const scoped = <T>(work: () => Promise<T>): Promise<T> => (deps.readScopes ? withReadScope(work) : work());
  const run = async (args: ExecutionArgs): Promise<ExecutionResult> => {
    const context = args.contextValue as Context;
    const kind = getOperationAST(args.document, args.operationName)?.operation;
    await deps.readsOf(context);
    operationStarts(kind);
    try {
      return await execute(args);
    } finally {
      operationEnded(kind, context);
    }
  };

  deps.metrics?.watchSubscriptions(() => ({
    sockets: wsServer.clients.size,
    subscriptions: [...openByUser.values()].reduce((sum, open) => sum + open, 0),
  }));

  const cleanup = useServer<Record<string, unknown>>(
    {
      schema: deps.schema,
      execute: (args) => scoped(() => run(args)),
      subscribe: async (args) => {
        const result = await subscribe(args);
        return deps.readScopes && Symbol.asyncIterator in result ? readingPrimary(result) : result;
      },
      async onConnect(ctx) {
        const socket = ctx.extra.socket;
        // Refused at connection (MAX_WEBSOCKETS): already closing.
        if (!places.holds(socket)) return false;
        // `authorization` as the protocol's clients send it, or `Authorization` as GraphiQL sends its Headers tab.
        const header = Object.entries(ctx.connectionParams ?? {}).find(
          ([name]) => name.toLowerCase() === 'authorization',
        )?.[1];
        const auth = await deps.checkToken(typeof header === 'string' ? header : undefined);
        // Closed while its token was checked: its place is given back on close, nothing to set up.
        if (socket.readyState !== socket.OPEN) return false;
        if (auth.kind !== 'viewer') {
          const why =
            auth.kind === 'rejected' ? auth.reason : 'send { "authorization": "Bearer <token>" } in connection_init';
          places.release(socket);
          socket.close(CLOSE_UNAUTHENTICATED, `${ErrorCode.UNAUTHENTICATED}: ${why}`.slice(0, 120));
          return false;
        }
        if ((socketsByUser.get(auth.userId) ?? 0) >= limits.maxSocketsPerUser) {
          refuse(
            socket,
            CLOSE_TOO_MANY_SOCKETS,
            `${ErrorCode.RATE_LIMITED}: at most ${limits.maxSocketsPerUser} WebSockets per user in one process (MAX_WEBSOCKETS_PER_USER); close one first`,
            'maxWebSocketsPerUser',
          );
          return false;
        }
        count(socketsByUser, auth.userId, 1);
        const state: SocketState = {
          auth,
          viewerId: auth.userId,
          ip: deps.clientAddress(ctx.extra.request),
          expiry: null,
          operations: new Set(),
          subscriptions: new Set(),
          // A logout ends the socket as an expiry does.
          unwatch: deps.watchSession(auth, (why) =>
            socket.close(
              CLOSE_UNAUTHENTICATED,
              `${ErrorCode.UNAUTHENTICATED}: ${SESSION_END_REASON[why]}`.slice(0, 120),
            ),
          ),
        };
        states.set(socket, state);
        const arm = () => {
          const left = auth.expiresAt - Date.now();
          if (left <= 0)
            socket.close(CLOSE_UNAUTHENTICATED, `${ErrorCode.UNAUTHENTICATED}: the token has expired; log in again`);
          else state.expiry = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
        };
        arm();
        return true;
      },
      async onSubscribe(ctx, _id, payload) {
        const state = states.get(ctx.extra.socket);
        if (!state) return [new GraphQLError('the connection is not initialised')];
        // Checked and counted before anything is awaited: messages that arrive together are counted one by one.
        if (state.operations.size >= limits.maxOperationsPerSocket) {
          places.refused('maxOperationsPerWebSocket');
          return [
            rateLimited(
              `at most ${limits.maxOperationsPerSocket} operations may run at once on one WebSocket (MAX_OPERATIONS_PER_WEBSOCKET); wait for one to finish`,
              'maxOperationsPerWebSocket',
              1,
            ),
          ];
        }
        // A trusted document's id, in the message's documentId or extensions, with an empty query.
        const resolved = deps.documents.resolve({
          query: payload.query,
          documentId: (payload as { documentId?: unknown }).documentId,
          extensions: payload.extensions,
        });
        if ('refusal' in resolved)
          return [persistedDocumentRefused(resolved.refusal.code, resolved.refusal.message, resolved.refusal.field)];
        const query = typeof resolved.query === 'string' ? resolved.query : '';
        let document;
        try {
          document = parse(query);
        } catch (error) {
          return [
            error instanceof GraphQLError
              ? withCode(error, ErrorCode.GRAPHQL_PARSE_FAILED)
              : new GraphQLError(String(error)),
          ];
        }
        const invalid = validate(deps.schema, document);
        if (invalid.length > 0) return invalid.map((error) => withCode(error, ErrorCode.GRAPHQL_VALIDATION_FAILED));
        const operation = operationOf(document.definitions, payload.operationName);
        if (!operation)
          return [badUserInput(`no operation named "${payload.operationName ?? ''}" in the document`, 'operationName')];
        try {
          checkQueryLimits(deps.schema, document, operation, payload.variables ?? undefined, query);
        } catch (error) {
          if (error instanceof GraphQLError) return [error];
          throw error;
        }
        state.operations.add(payload);
        if (operation.operation === OperationTypeNode.SUBSCRIPTION) {
          try {
            await deps.services.rateLimits.subscribe(state.viewerId);
            const open = openByUser.get(state.viewerId) ?? 0;
            if (open >= deps.maxSubscriptionsPerUser) {
              throw rateLimited(
                `at most ${deps.maxSubscriptionsPerUser} open subscriptions per user (MAX_SUBSCRIPTIONS_PER_USER); close one first`,
                'maxSubscriptionsPerUser',
                1,
              );
            }
            count(openByUser, state.viewerId, 1);
            state.subscriptions.add(payload);
          } catch (error) {
            state.operations.delete(payload);
            if (error instanceof GraphQLError) return [error];
            throw error;
          }
        }
        return {
          schema: deps.schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: deps.contextOf(state.auth, state.ip, randomUUID()),
        };
      },
      // Results go out with the error policy of HTTP responses (apollo.ts): in production, no internals.
      onNext(ctx, _id, _payload, _args, result) {
        if (notReading(ctx.extra.socket, states.get(ctx.extra.socket))) return;
        if (!result.errors?.length) return;
        return { ...result, errors: result.errors.map((error) => formatError(error.toJSON(), error, deps.production)) };
      },
      onError(ctx) {
        notReading(ctx.extra.socket, states.get(ctx.extra.socket));
      },
      onPing(ctx) {
        notReading(ctx.extra.socket, states.get(ctx.extra.socket));
      },
      onComplete(ctx, _id, payload) {
        const state = states.get(ctx.extra.socket);
        if (!state) return;
        release(state, payload);
        notReading(ctx.extra.socket, state);
      },
      onClose(ctx) {
        const state = states.get(ctx.extra.socket);
        if (!state) return;
        states.delete(ctx.extra.socket);
        if (state.expiry) clearTimeout(state.expiry);
        state.unwatch();
        for (const payload of [...state.operations]) release(state, payload);
        count(socketsByUser, state.viewerId, -1);
      },
    },
    wsServer,
  );
  return {
    async serverWillStart() {
      return {
        async drainServer() {
          await cleanup.dispose();
        },
      };
    },
  };
}

/**
 * The sockets that hold a place under MAX_WEBSOCKETS, and the metrics of places and refusals. A
 * socket lets go of its place when it closes, or as soon as it is refused (its close may take the
 * client a while).
 */
function socketPlaces(registry: Registry) {
  const holding = new WeakSet<WebSocket>();
  let taken = 0;
  new Gauge({
    name: 'graphql_ws_sockets',
    help: 'Open WebSockets of this process (MAX_WEBSOCKETS)',
    registers: [registry],
    collect() {
      this.set(taken);
    },
  });
  const refusals = new Counter({
    name: 'graphql_ws_refusals_total',
    help: 'WebSockets closed and operations refused over a WebSocket limit, by limit',
    labelNames: ['limit'],
    registers: [registry],
  });
  return {
    get taken(): number {
      return taken;
    },
    holds: (socket: WebSocket) => holding.has(socket),
    take(socket: WebSocket): void {
      holding.add(socket);
      taken += 1;
    },
    release(socket: WebSocket): void {
      if (holding.delete(socket)) taken -= 1;
    },
    refused(limit: SocketLimit): void {
      refusals.inc({ limit });
    },
  };
}

/** A subscription's event stream whose events are read on the primary: each is a blog just written, which a replica may not have yet. */
function readingPrimary<T>(events: AsyncIterableIterator<T>): AsyncIterableIterator<T> {
  const onPrimary = <R>(step: () => Promise<R>): Promise<R> =>
    withReadScope(() => {
      readPrimaryInScope();
      return step();
    });
  // return() as graphql-ws needs it to end the stream when the client completes the subscription.
  const stream: AsyncIterableIterator<T> = {
    next: () => onPrimary(() => events.next()),
    return: (value?: unknown) => events.return?.(value) ?? Promise.resolve({ done: true, value: undefined }),
    [Symbol.asyncIterator]: () => stream,
  };
  return stream;
}

function operationOf(
  definitions: readonly { kind: Kind }[],
  name: string | null | undefined,
): OperationDefinitionNode | undefined {
  const operations = definitions.filter(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  if (!name) return operations.length === 1 ? operations[0] : undefined;
  return operations.find((operation) => operation.name?.value === name);
}

/** graphql-js's own errors, with the code Apollo gives the same errors over HTTP. */
function withCode(error: GraphQLError, code: ErrorCode): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    extensions: { ...error.extensions, code },
  });
}
