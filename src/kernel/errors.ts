/**
 * The error vocabulary of the API: every `extensions.code` it answers with, and a factory per
 * code. Every error a client can cause carries a code, so a client branches on the code, never
 * on the message; the message says what was received. docs/api.md's "Errors and limits" table
 * lists exactly these codes (test/unit/kernel/error-codes.test.ts holds the two together).
 *
 * Services throw these directly: authorisation and validation live in services (the rules hold
 * whatever calls them), and GraphQLError is a plain Error subclass with no GraphQL coupling that
 * matters to a service.
 */
import { GraphQLError, GraphQLFormattedError } from 'graphql';

export const ErrorCode = {
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  /** The query text is not GraphQL. Answered by Apollo itself; listed so the vocabulary is complete. */
  GRAPHQL_PARSE_FAILED: 'GRAPHQL_PARSE_FAILED',
  /** The query does not fit the schema (Apollo), or breaks a query limit (limits.ts, with extensions.limit). */
  GRAPHQL_VALIDATION_FAILED: 'GRAPHQL_VALIDATION_FAILED',
  /**
   * Over a rate limit; extensions.retryAfterSeconds says when to retry (rate-limits.ts). HTTP 429
   * with Retry-After when the whole request is refused (RATE_LIMIT_ANONYMOUS_PER_IP).
   */
  RATE_LIMITED: 'RATE_LIMITED',
  /**
   * MySQL cannot be reached right now, or is too slow (a statement, or a publish that could not
   * commit within PUBLISH_DEADLINE_MS); the request changed nothing and may be retried.
   */
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  /** A request body that cannot be read (HTTP 400, http.ts); Apollo answers it too, e.g. to a request without `query`. */
  BAD_REQUEST: 'BAD_REQUEST',
  /** A request body over the limit after decompression (HTTP 413, http.ts). */
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  /** A request body in a Content-Encoding the server does not read (HTTP 415, http.ts). */
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  /** An answer over RESPONSE_MAX_BYTES, sent instead of it (HTTP 400, http.ts). */
  RESPONSE_TOO_LARGE: 'RESPONSE_TOO_LARGE',
  /**
   * A request names a trusted document (persisted operation) that the server does not know
   * (graphql/persisted-documents.ts); extensions.field names how it was named. HTTP 200, as
   * Apollo answers the same code, so that persisted-query links read it and may send the
   * document whole where the server allows it.
   */
  PERSISTED_QUERY_NOT_FOUND: 'PERSISTED_QUERY_NOT_FOUND',
  /** With PERSISTED_DOCUMENTS=only, a request that names no trusted document (HTTP 400). */
  PERSISTED_QUERY_ID_REQUIRED: 'PERSISTED_QUERY_ID_REQUIRED',
  /**
   * A request for an automatic persisted query (extensions.persistedQuery) that no trusted
   * document answers while PERSISTED_DOCUMENTS=off: Apollo's own answer, automatic persisted
   * queries being off. Clients' persisted-query links then send the document whole.
   */
  PERSISTED_QUERY_NOT_SUPPORTED: 'PERSISTED_QUERY_NOT_SUPPORTED',
  /**
   * A resumed followFeedAdded(after:) finds more blogs newer than `after` than it replays
   * (extensions.max): the client refetches the first page of followFeed and subscribes again
   * with the cursor of its newest edge.
   */
  RESUME_GAP_TOO_LARGE: 'RESUME_GAP_TOO_LARGE',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Every code the API answers with (docs/api.md's table lists the same ones). */
export const ERROR_CODES: readonly ErrorCode[] = Object.values(ErrorCode);

function typedError(code: ErrorCode, message: string, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extra } });
}

/** No viewer, or a token that is missing, forged or expired, or a wrong password. */
export function unauthenticated(message: string): GraphQLError {
  return typedError(ErrorCode.UNAUTHENTICATED, message);
}

/**
 * A viewer who is not allowed to do this (e.g. deleting someone else's blog); `field` names the
 * argument at fault and `reason` says why in a word (e.g. "blocked"), when there is one.
 */
export function forbidden(message: string, field?: string, reason?: string): GraphQLError {
  return typedError(ErrorCode.FORBIDDEN, message, { ...(field ? { field } : {}), ...(reason ? { reason } : {}) });
}

/**
 * A viewer at a limit of what one account may have (not a rate: waiting does not help), e.g.
 * MAX_FOLLOWING: FORBIDDEN with extensions.limit naming it and extensions.max its value.
 */
export function limitReached(message: string, limit: string, max: number, field?: string): GraphQLError {
  return typedError(ErrorCode.FORBIDDEN, message, { limit, max, ...(field ? { field } : {}) });
}

/** The service cannot do this right now (nothing changed); the request may be retried. */
export function unavailable(message: string): GraphQLError {
  return typedError(ErrorCode.SERVICE_UNAVAILABLE, message);
}

/** A well-formed id that names nothing (or something deleted); `field` names the argument that held it. */
export function notFound(message: string, field?: string): GraphQLError {
  return typedError(ErrorCode.NOT_FOUND, message, field ? { field } : {});
}

/** Input that breaks a rule; `field` names the argument or input field at fault. */
export function badUserInput(message: string, field?: string): GraphQLError {
  return typedError(ErrorCode.BAD_USER_INPUT, message, field ? { field } : {});
}

/** More than `max` blogs to replay for a resumed subscription; `field` names the cursor argument. */
export function resumeGapTooLarge(message: string, field: string, max: number): GraphQLError {
  return typedError(ErrorCode.RESUME_GAP_TOO_LARGE, message, { field, max });
}

/** Over the rate limit `limit`; the client may retry after `retryAfterSeconds`. */
export function rateLimited(message: string, limit: string, retryAfterSeconds: number): GraphQLError {
  return typedError(ErrorCode.RATE_LIMITED, message, { retryAfterSeconds, limit });
}

/**
 * A whole request refused by a rate limit (before it is parsed): HTTP 429 with Retry-After, so
 * that any HTTP client, proxy or load generator backs off without reading the body.
 */
export function requestRateLimited(message: string, limit: string, retryAfterSeconds: number): GraphQLError {
  return typedError(ErrorCode.RATE_LIMITED, message, {
    retryAfterSeconds,
    limit,
    // Apollo takes the status and headers of the answer from here (and leaves `http` out of it).
    http: { status: 429, headers: new Map([['retry-after', String(retryAfterSeconds)]]) },
  });
}

/**
 * An operation over a query limit (limits.ts), refused before anything executes. HTTP 400 like
 * every other validation failure, so a client cannot tell a limit from a schema mismatch by status.
 */
export function queryLimitExceeded(limit: string, actual: number, max: number): GraphQLError {
  return typedError(ErrorCode.GRAPHQL_VALIDATION_FAILED, `query ${limit} ${actual} is over the limit of ${max}`, {
    limit,
    max,
    actual,
    http: { status: 400 },
  });
}

/*
 * formatError (graphql/apollo.ts) replaces an error already formatted by Apollo; these keep its location
 * and path, so the client still sees where the error happened.
 */
type Place = Pick<GraphQLFormattedError, 'locations' | 'path'>;

/** MySQL unreachable or too slow, in place of the driver's error. */
export function serviceUnavailable(message: string, at: Place): GraphQLFormattedError {
  return { message, locations: at.locations, path: at.path, extensions: { code: ErrorCode.SERVICE_UNAVAILABLE } };
}

/** graphql-js's own refusal of a request before any resolver ran (Apollo calls it internal). */
export function validationFailed(message: string, at: Place): GraphQLFormattedError {
  return { message, locations: at.locations, extensions: { code: ErrorCode.GRAPHQL_VALIDATION_FAILED } };
}

/** A fault of ours, as production clients see it: no message, no stack. */
export function internalServerError(at: Place): GraphQLFormattedError {
  return {
    message: 'Internal server error',
    locations: at.locations,
    path: at.path,
    extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR },
  };
}

/** An error answered before GraphQL runs (http.ts): an HTTP status and a GraphQL-shaped body. */
export interface HttpError {
  status: number;
  body: { errors: GraphQLFormattedError[] };
}

function httpError(status: number, code: ErrorCode, message: string, extra: Record<string, unknown> = {}): HttpError {
  return { status, body: { errors: [{ message, extensions: { code, ...extra } }] } };
}

/** A request body that is not JSON, or that broke off. */
export function badRequest(message: string): HttpError {
  return httpError(400, ErrorCode.BAD_REQUEST, message);
}

/** A request body over `maxBytes` after decompression. */
export function payloadTooLarge(maxBytes: number): HttpError {
  return httpError(413, ErrorCode.PAYLOAD_TOO_LARGE, `request body over ${maxBytes} bytes`);
}

/** A request body in a Content-Encoding other than gzip, deflate or br. */
export function unsupportedMediaType(encoding: string): HttpError {
  return httpError(
    415,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    `Content-Encoding "${encoding}" is not supported (gzip, deflate, br or none)`,
  );
}

/**
 * An answer of `actualBytes`, over `maxBytes`, replaced by this error. HTTP 400 like the query
 * limits: the client asked for more than it may receive at once, and the same request would get
 * the same answer. The operation did run: a mutation's change stands.
 */
export function responseTooLarge(maxBytes: number, actualBytes: number): HttpError {
  return httpError(
    400,
    ErrorCode.RESPONSE_TOO_LARGE,
    `the answer is ${actualBytes} bytes, over the limit of ${maxBytes} (RESPONSE_MAX_BYTES); ask for fewer items (first) or fields. ` +
      'The operation ran: a mutation took effect.',
    { max: maxBytes, actual: actualBytes },
  );
}

/** A request that names a trusted document the server does not have; `field` says how it was named. */
export function persistedDocumentNotFound(message: string, field: string): HttpError {
  return httpError(200, ErrorCode.PERSISTED_QUERY_NOT_FOUND, message, { field });
}

/** A request without a trusted document's id while the server runs only those. */
export function persistedDocumentRequired(message: string): HttpError {
  return httpError(400, ErrorCode.PERSISTED_QUERY_ID_REQUIRED, message);
}

/** The same refusals over WebSocket, where there is no status: a GraphQL error with the code. */
export function persistedDocumentRefused(code: ErrorCode, message: string, field?: string): GraphQLError {
  return typedError(code, message, field ? { field } : {});
}

/** A failure of ours before or outside Apollo (a CORS check that threw, a broken response). */
export function httpInternalError(message: string): HttpError {
  return httpError(500, ErrorCode.INTERNAL_SERVER_ERROR, message);
}
