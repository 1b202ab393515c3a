/**
 * The served schema is documentation for client developers: every type, field, argument, input
 * field and enum value says what it is, in words a client developer can use (no server settings,
 * file names or notes of ours), DateTime names its specification, and arguments come in the
 * order of the clients' contract (schema/contract-client.graphql).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildSchema,
  GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
} from 'graphql';
import { buildFeedSchema } from '../../../src/graphql/schema';

/** Every description of the schema's own types, by where it stands (`Type.field(arg)`); undefined where there is none. */
function descriptions(schema: GraphQLSchema): Array<[string, string | null | undefined]> {
  const found: Array<[string, string | null | undefined]> = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || (isScalarType(type) && isSpecifiedScalarType(type))) continue;
    found.push([type.name, type.description]);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        found.push([`${type.name}.${field.name}`, field.description]);
        for (const arg of field.args) found.push([`${type.name}.${field.name}(${arg.name})`, arg.description]);
      }
    }
    if (isInputObjectType(type))
      for (const field of Object.values(type.getFields()))
        found.push([`${type.name}.${field.name}`, field.description]);
    if (isEnumType(type))
      for (const value of type.getValues()) found.push([`${type.name}.${value.name}`, value.description]);
  }
  return found;
}

/**
 * What a description for clients must not hold: environment variable names (SCREAMING_SNAKE
 * with an underscore: RATE_LIMIT_..., MAX_...), file names, and notes about the project's history.
 * Error codes (BAD_USER_INPUT) are part of the API and allowed.
 */
const ERROR_CODES =
  /\b(UNAUTHENTICATED|FORBIDDEN|NOT_FOUND|BAD_USER_INPUT|RATE_LIMITED|SERVICE_UNAVAILABLE|RESUME_GAP_TOO_LARGE)\b/g;
const FORBIDDEN: Array<[string, RegExp]> = [
  ['an environment variable', /\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/],
  ['a file name', /\b[\w-]+\.(ts|js|mjs|json|graphql|lua|md|sql)\b/],
  ['a note about the project', /\b(issues?|seed|TODO|FIXME|XXX|hack|workaround)\b/i],
];

describe('the schema as documentation', () => {
  const schema = buildFeedSchema();

  it('describes every type, field, argument, input field and enum value', () => {
    const missing = descriptions(schema)
      .filter(([, description]) => !description?.trim())
      .map(([place]) => place);
    expect(missing).toEqual([]);
  });

  it('says nothing a client developer cannot use', () => {
    const offending = descriptions(schema).flatMap(([place, description]) =>
      FORBIDDEN.filter(([, pattern]) => pattern.test((description ?? '').replace(ERROR_CODES, ''))).map(
        ([what]) => `${place}: ${what} in "${description}"`,
      ),
    );
    expect(offending).toEqual([]);
  });

  it('names the specification of DateTime', () => {
    const dateTime = schema.getType('DateTime');
    expect(isScalarType(dateTime) && dateTime.specifiedByURL).toBe('https://www.rfc-editor.org/rfc/rfc3339');
  });

  it('lists arguments in the order of the clients contract', () => {
    const contract = buildSchema(
      readFileSync(join(__dirname, '..', '..', '..', 'schema', 'contract-client.graphql'), 'utf8'),
    );
    const misordered: string[] = [];
    for (const type of Object.values(contract.getTypeMap())) {
      if (isIntrospectionType(type) || !(isObjectType(type) || isInterfaceType(type))) continue;
      const served = schema.getType(type.name);
      if (!served || !(isObjectType(served) || isInterfaceType(served))) continue;
      for (const field of Object.values(type.getFields())) {
        const servedField = served.getFields()[field.name];
        if (!servedField) continue;
        // The contract's arguments that the server has (others may be added in parallel), in the server's order.
        const expected = field.args
          .map((arg) => arg.name)
          .filter((name) => servedField.args.some((arg) => arg.name === name));
        const actual = servedField.args.map((arg) => arg.name).filter((name) => expected.includes(name));
        if (actual.join() !== expected.join())
          misordered.push(`${type.name}.${field.name}(${actual.join(', ')}), contract (${expected.join(', ')})`);
      }
    }
    expect(misordered).toEqual([]);
  });
});
