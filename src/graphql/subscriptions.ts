/**
 * GraphQL subscriptions over the graphql-ws protocol, on the same port and path as the HTTP
 * endpoint (ws://host:port/graphql), the way Apollo Server documents it: a `ws` server on the
 * HTTP server, graphql-ws's `useServer`, and a plugin that closes it when Apollo drains.
 *
 * What a socket goes through:
 * - connection_init carries `{ "authorization": "Bearer <token>" }`. Without a token, or with one
 *   that is forged or expired, the socket is closed with 4401 and the reason
 *   `UNAUTHENTICATED: <why>`: there is nothing an anonymous viewer can subscribe to.
 * - The token's expiry ends the socket the same way (4401, "the token has expired"): a token
 *   that is no longer valid must not keep a feed flowing. The client logs in again and
 *   reconnects.
 * - Each subscribe message is parsed and validated as an HTTP request is, then checked against
 *   the query limits (limits.ts), the subscribe rate limit (RATE_LIMIT_SUBSCRIBE_PER_USER) and the
 *   per-user cap on open subscriptions in this process (MAX_SUBSCRIPTIONS_PER_USER). A refusal is
 *   an `error` message with the usual `extensions.code`; the socket stays open.
 * - A malformed message or an unknown message type closes the socket with graphql-ws's own codes
 *   (4400 and the like): the protocol's answer, which every graphql-ws client understands.
 */
import type { ApolloServerPlugin } from '@apollo/server';
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { GraphQLError, GraphQLSchema, Kind, OperationDefinitionNode, OperationTypeNode, parse, validate } from 'graphql';
import { CloseCode } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { TokenCheck } from '../auth/auth.tokens';
import { badUserInput, ErrorCode, rateLimited } from '../kernel/errors';
import type { Metrics } from '../kernel/observability';
import { formatError } from './apollo';
import type { Context, Services } from './context';
import { checkQueryLimits } from './limits';

/** The close code of a socket whose viewer is not (or no longer) authenticated (graphql-ws uses 4401 for "Unauthorized"). */
export const CLOSE_UNAUTHENTICATED = CloseCode.Unauthorized;

/** Largest message a client may send: the HTTP body limit applies to a subscribe message too. */
const MAX_MESSAGE_BYTES = 100 * 1024;

/** setTimeout's longest delay (about 24.8 days); a longer-lived token is re-armed in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface SubscriptionDeps {
  schema: GraphQLSchema;
  services: Services;
  checkToken(authorization: string | undefined): TokenCheck;
  /** The client's address of the upgrade request (TRUSTED_PROXIES apply). */
  clientAddress(req: http.IncomingMessage): string;
  /** Builds a request's context the way HTTP requests get theirs. */
  contextOf(auth: TokenCheck, ip: string, requestId: string): Context;
  maxSubscriptionsPerUser: number;
  production: boolean;
  /** Where the open sockets and subscriptions are reported. */
  metrics?: Pick<Metrics, 'watchSubscriptions'>;
}

interface SocketState {
  auth: Extract<TokenCheck, { kind: 'viewer' }>;
  viewerId: number;
  ip: string;
  expiry: NodeJS.Timeout | null;
  /** Ids of this socket's running subscription operations. */
  subscriptions: Set<string>;
}

/** Serves subscriptions on `httpServer`; the returned plugin closes them when Apollo drains. */
export function serveSubscriptions(httpServer: http.Server, deps: SubscriptionDeps): ApolloServerPlugin {
  const wsServer = new WebSocketServer({ server: httpServer, path: '/graphql', maxPayload: MAX_MESSAGE_BYTES });
  const sockets = new WeakMap<object, SocketState>();
  const openByUser = new Map<number, number>();
  const release = (state: SocketState, id: string) => {
    if (!state.subscriptions.delete(id)) return;
    const left = (openByUser.get(state.viewerId) ?? 1) - 1;
    if (left > 0) openByUser.set(state.viewerId, left);
    else openByUser.delete(state.viewerId);
  };

  deps.metrics?.watchSubscriptions(() => ({ sockets: wsServer.clients.size, subscriptions: [...openByUser.values()].reduce((sum, open) => sum + open, 0) }));

  const cleanup = useServer<Record<string, unknown>>(
    {
      schema: deps.schema,
      onConnect(ctx) {
        // `authorization` as the protocol's clients send it, or `Authorization` as GraphiQL sends its Headers tab.
        const header = Object.entries(ctx.connectionParams ?? {}).find(([name]) => name.toLowerCase() === 'authorization')?.[1];
        const auth = deps.checkToken(typeof header === 'string' ? header : undefined);
        const socket = ctx.extra.socket;
        if (auth.kind !== 'viewer') {
          const why = auth.kind === 'rejected' ? auth.reason : 'send { "authorization": "Bearer <token>" } in connection_init';
          socket.close(CLOSE_UNAUTHENTICATED, `${ErrorCode.UNAUTHENTICATED}: ${why}`.slice(0, 120));
          return false;
        }
        const state: SocketState = { auth, viewerId: auth.userId, ip: deps.clientAddress(ctx.extra.request), expiry: null, subscriptions: new Set() };
        sockets.set(socket, state);
        const arm = () => {
          const left = auth.expiresAt - Date.now();
          if (left <= 0) socket.close(CLOSE_UNAUTHENTICATED, `${ErrorCode.UNAUTHENTICATED}: the token has expired; log in again`);
          else state.expiry = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
        };
        arm();
        return true;
      },
      async onSubscribe(ctx, id, payload) {
        const state = sockets.get(ctx.extra.socket);
        if (!state) return [new GraphQLError('the connection is not initialised')];
        let document;
        try {
          document = parse(payload.query);
        } catch (error) {
          return [error instanceof GraphQLError ? withCode(error, ErrorCode.GRAPHQL_PARSE_FAILED) : new GraphQLError(String(error))];
        }
        const invalid = validate(deps.schema, document);
        if (invalid.length > 0) return invalid.map((error) => withCode(error, ErrorCode.GRAPHQL_VALIDATION_FAILED));
        const operation = operationOf(document.definitions, payload.operationName);
        if (!operation) return [badUserInput(`no operation named "${payload.operationName ?? ''}" in the document`, 'operationName')];
        try {
          checkQueryLimits(deps.schema, document, operation, payload.variables ?? undefined, payload.query);
          if (operation.operation === OperationTypeNode.SUBSCRIPTION) {
            await deps.services.rateLimits.subscribe(state.viewerId);
            const open = openByUser.get(state.viewerId) ?? 0;
            if (open >= deps.maxSubscriptionsPerUser) {
              throw rateLimited(
                `at most ${deps.maxSubscriptionsPerUser} open subscriptions per user (MAX_SUBSCRIPTIONS_PER_USER); close one first`,
                'maxSubscriptionsPerUser',
                1,
              );
            }
            openByUser.set(state.viewerId, open + 1);
            state.subscriptions.add(id);
          }
        } catch (error) {
          if (error instanceof GraphQLError) return [error];
          throw error;
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
      onNext(_ctx, _id, _payload, _args, result) {
        if (!result.errors?.length) return;
        return { ...result, errors: result.errors.map((error) => formatError(error.toJSON(), error, deps.production)) };
      },
      onComplete(ctx, id) {
        const state = sockets.get(ctx.extra.socket);
        if (state) release(state, id);
      },
      onClose(ctx) {
        const state = sockets.get(ctx.extra.socket);
        if (!state) return;
        if (state.expiry) clearTimeout(state.expiry);
        for (const id of [...state.subscriptions]) release(state, id);
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

function operationOf(definitions: readonly { kind: Kind }[], name: string | null | undefined): OperationDefinitionNode | undefined {
  const operations = definitions.filter((definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION);
  if (!name) return operations.length === 1 ? operations[0] : undefined;
  return operations.find((operation) => operation.name?.value === name);
}

/** graphql-js's own errors, with the code Apollo gives the same errors over HTTP. */
function withCode(error: GraphQLError, code: ErrorCode): GraphQLError {
  return new GraphQLError(error.message, { nodes: error.nodes, source: error.source, positions: error.positions, extensions: { ...error.extensions, code } });
}
