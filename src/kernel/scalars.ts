/** Custom scalars. */
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { charLength, httpUrlProblem } from './validation';

/**
 * The contract's DateTime: ISO-8601 in UTC with milliseconds, e.g. 2026-11-30T09:52:42.123Z.
 * graphql-scalars does the parsing and validation; serialising to the string here (rather than
 * leaving a Date for JSON.stringify) keeps the wire format explicit.
 */
export const DateTimeScalar = new GraphQLScalarType({
  ...DateTimeResolver.toConfig(),
  name: 'DateTime',
  description: 'An instant in UTC, ISO-8601 with milliseconds, e.g. 2026-11-30T09:52:42.123Z',
  specifiedByURL: 'https://www.rfc-editor.org/rfc/rfc3339',
  // A valid Date (every DateTime the resolvers answer) is written at once; anything else goes
  // through graphql-scalars' checks, which answer the same for a Date at several times the cost.
  serialize: (value) =>
    value instanceof Date && !Number.isNaN(value.getTime())
      ? value.toISOString()
      : DateTimeResolver.serialize(value).toISOString(),
});

/** Longest URL the URL scalar accepts, in characters: the width of the columns that store one (tb_user.icon). */
export const URL_MAX = 512;

function parseUrl(value: unknown): string {
  if (typeof value !== 'string')
    throw new GraphQLError(`a URL is a string (got ${value === null ? 'null' : typeof value})`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  const length = charLength(value);
  const problem =
    length < 1 || length > URL_MAX
      ? `must be 1..${URL_MAX} characters (got ${length})`
      : CONTROL_OR_SPACE.test(value)
        ? 'must not contain white space or control characters'
        : httpUrlProblem(value);
  if (problem !== null) throw new GraphQLError(`URL ${problem}`, { extensions: { code: 'BAD_USER_INPUT' } });
  return value;
}

// eslint-disable-next-line no-control-regex -- matching control characters is the point of this pattern
const CONTROL_OR_SPACE = /[\u0000-\u0020\u007f-\u009f]/;

/**
 * The contract's URL: an absolute http or https URL (WHATWG URL standard), 1..512 characters,
 * stored and answered as sent. Other schemes (`javascript:`, `data:`) are refused: BAD_USER_INPUT
 * naming the argument and the scheme.
 */
export const UrlScalar = new GraphQLScalarType<string, string>({
  name: 'URL',
  description: 'An absolute http or https URL',
  specifiedByURL: 'https://url.spec.whatwg.org/',
  serialize: (value) => String(value),
  parseValue: parseUrl,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING)
      throw new GraphQLError(`a URL is a string (got ${ast.kind})`, { extensions: { code: 'BAD_USER_INPUT' } });
    return parseUrl(ast.value);
  },
});
