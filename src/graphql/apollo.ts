/**
 * Apollo Server and its options: error policy, the request log, the query limits, and the
 * plugins that are off because this API has no use for them.
 */
import { ApolloServer, ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { GraphQLError, GraphQLFormattedError, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import type http from 'node:http';
import { isDatabaseTooSlow, isDatabaseUnavailable } from '../db/database';
import type { Config } from '../kernel/config';
import { ErrorCode, internalServerError, serviceUnavailable, validationFailed } from '../kernel/errors';
import { logger, Metrics, operationLabeler } from '../kernel/observability';
import { hidePasswords } from '../kernel/redaction';
import type { Context } from './context';
import { queryLimitsPlugin } from './limits';
import { operationEnded, operationStarts } from './read-your-writes';

export function createApollo(
  schema: GraphQLSchema,
  httpServer: http.Server,
  config: Pick<Config, 'nodeEnv' | 'introspection' | 'shutdownTimeoutMs'>,
  metrics: Metrics,
  /** More plugins: the subscription server's, which closes its sockets when Apollo drains. */
  extraPlugins: ApolloServerPlugin<Context>[] = [],
): ApolloServer<Context> {
  return new ApolloServer<Context>({
    schema,
    includeStacktraceInErrorResponses: config.nodeEnv !== 'production',
    // Apollo's default turns introspection off under NODE_ENV=production, which leaves GraphiQL
    // without a schema and codegen without input; the schema is public anyway
    // (schema/schema.graphql). INTROSPECTION=off turns it off.
    introspection: config.introspection,
    // server.ts owns SIGTERM/SIGINT; a second, overlapping stop() from Apollo's own handler
    // never settles and would keep the process from exiting.
    stopOnTerminationSignals: false,
    // Automatic persisted queries stay off: Apollo would keep every document a client registers in
    // this process's memory only (each process of a deployment its own cache, and as many
    // documents as clients care to send). Trusted documents replace them
    // (persisted-documents.ts, PERSISTED_DOCUMENTS); a request for one answers
    // PERSISTED_QUERY_NOT_SUPPORTED, on which clients' links send the document whole.
    persistedQueries: false,
    formatError: (formatted, error) => formatError(formatted, error, config.nodeEnv === 'production'),
    plugins: [
      // Connections still open halfway through SHUTDOWN_TIMEOUT_MS are cut (a keep-alive client
      // may never close its side), leaving the other half to fan-out jobs and the pools.
      ApolloServerPluginDrainHttpServer({
        httpServer,
        stopGracePeriodMillis: Math.floor(config.shutdownTimeoutMs / 2),
      }),
      ApolloServerPluginLandingPageDisabled(),
      // The default cache-control plugin wraps every field resolver to compute HTTP cache hints;
      // feeds are per viewer and never cacheable, and the wrapping halved feed throughput.
      ApolloServerPluginCacheControlDisabled(),
      // Inline traces go to an Apollo gateway; there is none.
      ApolloServerPluginInlineTraceDisabled(),
      queryLimitsPlugin(schema),
      requestLogPlugin(metrics, operationLabeler(schema)),
      readYourWritesPlugin(),
      refusedWholePlugin(),
      ...extraPlugins,
    ],
  });
}

/** Longest operationName written to a log line (a client may send 100 kB of it). */
const MAX_LOGGED_OPERATION_NAME = 100;

/**
 * One log line and one latency observation per GraphQL request. The metric is labelled with
 * the bounded `label` (see operationLabeler); the log line, where cardinality costs nothing,
 * also keeps the client's operationName.
 */
function requestLogPlugin(
  metrics: Metrics,
  label: (operation: OperationDefinitionNode | undefined) => string,
): ApolloServerPlugin<Context> {
  return {
    async requestDidStart({ contextValue }) {
      const started = performance.now();
      return {
        async willSendResponse({ operationName, operation: definition, errors, response }) {
          const seconds = (performance.now() - started) / 1000;
          const rootField = label(definition);
          metrics.request(rootField, seconds);
          const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
          const codes = [...(errors ?? []), ...(body?.errors ?? [])]
            .map((error) => error.extensions?.code)
            .filter(Boolean);
          metrics.errored(errorCodesOf(body?.errors ?? errors ?? []));
          logger.info({
            requestId: contextValue.requestId,
            operation: (operationName ?? 'anonymous').slice(0, MAX_LOGGED_OPERATION_NAME),
            rootField,
            durationMs: Math.round(seconds * 1000 * 10) / 10,
            viewerId: contextValue.auth?.kind === 'viewer' ? contextValue.auth.userId : null,
            ...(codes.length ? { errors: [...new Set(codes)] } : {}),
          });
        },
      };
    },
  };
}

/**
 * The codes a response answered, one per error: the response's own errors (formatted, with the
 * code the client sees) when it has them, else the request's (a parse or validation failure).
 * A code is one of the API's (kernel/errors.ts): anything else counts as INTERNAL_SERVER_ERROR,
 * so the metric's label set stays bounded.
 */
function errorCodesOf(errors: ReadonlyArray<{ extensions?: Record<string, unknown> }>): string[] {
  return errors.map((error) => {
    const code = error.extensions?.code;
    return typeof code === 'string' && KNOWN_CODES.has(code) ? code : ErrorCode.INTERNAL_SERVER_ERROR;
  });
}

const KNOWN_CODES = new Set<string>(Object.values(ErrorCode));

/**
 * A request refused whole by rate limits answers HTTP 429 with Retry-After, wherever the limit
 * was met: the anonymous per-address limit refuses it before it runs (its error carries the
 * status itself, kernel/errors.ts requestRateLimited), and a mutation over a per-user limit
 * (publishBlog, likeBlog, follow, signUp, login...) leaves it without data. So: no data at all,
 * and every error RATE_LIMITED, is 429, and Retry-After is the longest wait they ask for. A
 * response with data (a partial response: some fields refused, others answered) stays 200 with
 * the refusals in its errors.
 */
function refusedWholePlugin(): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const { data, errors } = response.body.singleResult;
          if ((data !== null && data !== undefined) || !errors?.length) return;
          if (!errors.every((error) => error.extensions?.code === ErrorCode.RATE_LIMITED)) return;
          const waits = errors
            .map((error) => Number(error.extensions?.retryAfterSeconds))
            .filter((seconds) => Number.isFinite(seconds) && seconds > 0);
          response.http.status = 429;
          response.http.headers.set('retry-after', String(Math.max(1, ...waits)));
        },
      };
    },
  };
}

/** Read-your-writes with replicas (read-your-writes.ts): a mutation reads the primary, and marks its viewer as a recent writer once it ran. */
function readYourWritesPlugin(): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation }) {
          operationStarts(operation?.operation);
        },
        async willSendResponse({ operation, contextValue }) {
          operationEnded(operation?.operation, contextValue);
        },
      };
    },
  };
}

/**
 * Errors the client caused keep their message and code. Anything else is a fault of ours: it is
 * logged in full, and in production the client sees only a generic message (no internals).
 */
export function formatError(
  formatted: GraphQLFormattedError,
  error: unknown,
  production: boolean,
): GraphQLFormattedError {
  const original = (error as { originalError?: unknown })?.originalError;
  // MySQL too slow: a statement ran past DATABASE_STATEMENT_TIMEOUT_MS and was stopped.
  if (isDatabaseTooSlow(original ?? error)) {
    return serviceUnavailable(
      'the database is too slow right now (a statement ran out of time); nothing changed; retry shortly',
      formatted,
    );
  }
  // MySQL unreachable: the request failed for a reason the client can wait out.
  if (isDatabaseUnavailable(original ?? error)) {
    return serviceUnavailable('the database is unavailable; retry shortly', formatted);
  }
  // graphql-js's own refusals before any resolver ran carry no original error: the request was
  // at fault, not the server.
  if (
    formatted.extensions?.code === ErrorCode.INTERNAL_SERVER_ERROR &&
    error instanceof GraphQLError &&
    !original &&
    !formatted.path
  ) {
    return validationFailed(formatted.message, formatted);
  }
  // Our typed errors and Apollo's own (GRAPHQL_PARSE_FAILED, ...) carry their code; Apollo
  // marks everything else INTERNAL_SERVER_ERROR.
  // A stack trace of an error the client caused only says where we noticed it: leave it out.
  if (formatted.extensions?.code !== ErrorCode.INTERNAL_SERVER_ERROR) {
    const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
    return { ...formatted, extensions };
  }
  const cause = original ?? error;
  // A driver's message may quote a connection URL: its password stays out of the log.
  logger.error({
    msg: 'internal error',
    err:
      cause instanceof Error
        ? { message: hidePasswords(cause.message), stack: cause.stack && hidePasswords(cause.stack) }
        : hidePasswords(String(cause)),
  });
  if (!production) return formatted;
  return internalServerError(formatted);
}
