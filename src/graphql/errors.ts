/**
 * The typed errors of the API. Every error a client can cause carries `extensions.code`, so a
 * client branches on the code, never on the message; the message says what was received.
 *
 * Services throw these directly: authorisation and validation live in services (the rules hold
 * whatever calls them), and GraphQLError is a plain Error subclass with no GraphQL coupling that
 * matters to a service.
 */
import { GraphQLError } from 'graphql';

export const ErrorCode = {
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  /** Over a rate limit; extensions.retryAfterSeconds says when to retry (rate-limits.ts). */
  RATE_LIMITED: 'RATE_LIMITED',
  /** MySQL cannot be reached right now; the request changed nothing and may be retried. */
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

function typedError(code: ErrorCode, message: string, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extra } });
}

/** No viewer, or a token that is missing, forged or expired, or a wrong password. */
export function unauthenticated(message: string): GraphQLError {
  return typedError(ErrorCode.UNAUTHENTICATED, message);
}

/** A viewer who is not allowed to do this (e.g. deleting someone else's blog). */
export function forbidden(message: string): GraphQLError {
  return typedError(ErrorCode.FORBIDDEN, message);
}

/** A well-formed id that names nothing (or something deleted). */
export function notFound(message: string): GraphQLError {
  return typedError(ErrorCode.NOT_FOUND, message);
}

/** Input that breaks a rule; `field` names the argument or input field at fault. */
export function badUserInput(message: string, field?: string): GraphQLError {
  return typedError(ErrorCode.BAD_USER_INPUT, message, field ? { field } : {});
}
