/** Custom scalars. */
import { GraphQLScalarType } from 'graphql';
import { DateTimeResolver } from 'graphql-scalars';

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
  serialize: (value) => DateTimeResolver.serialize(value).toISOString(),
});
