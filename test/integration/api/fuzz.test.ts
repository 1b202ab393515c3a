/**
 * Fuzzing: random GraphQL documents and variables, generated from the schema (fast-check), sent
 * to a production-mode server with no, a valid, or a garbage token. Whatever arrives: no 5xx, no
 * stack trace, an answer in bounded time, and the server answers a health query right after.
 */
import fc from 'fast-check';
import {
  getNamedType,
  GraphQLField,
  GraphQLInputType,
  GraphQLObjectType,
  GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from 'graphql';
import { buildFeedSchema } from '../../../src/graphql/schema';
import { publish, signUp, startTestApp, TestApp } from '../../support/harness';

const schema: GraphQLSchema = buildFeedSchema();

/** Strings that have broken servers before: SQL, script, unicode edge cases, huge and empty. */
const nastyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    "'; DROP TABLE tb_user; --",
    '<script>alert(1)</script>',
    '\u0000',
    '\uD800',
    '😀'.repeat(300),
    'x'.repeat(20_000),
    'VXNlcjox',
    'QmxvZzox',
    'VXNlcjow',
    'Rm9vOjE=',
    '%%%',
    '{}',
    'null',
  ),
);

/** A literal for an input type, sometimes of the wrong type on purpose. */
function literalFor(type: GraphQLInputType, depth = 0): fc.Arbitrary<string> {
  const named = getNamedType(type);
  const wrong = fc.constantFrom('null', '1', '"x"', 'true', '[1, 2]', '{ a: 1 }', '-2147483649', '1.5');
  let right: fc.Arbitrary<string>;
  if (isListType(isNonNullType(type) ? type.ofType : type)) {
    right = fc
      .array(literalFor(named as GraphQLInputType, depth + 1), { maxLength: 12 })
      .map((items) => `[${items.join(', ')}]`);
  } else if (isInputObjectType(named) && depth < 3) {
    const fields = Object.values(named.getFields());
    right = fc
      .subarray(fields)
      .chain((chosen) =>
        fc
          .tuple(...chosen.map((field) => literalFor(field.type, depth + 1)))
          .map((values) => `{ ${chosen.map((f, i) => `${f.name}: ${values[i]}`).join(', ')} }`),
      );
  } else if (isScalarType(named) && named.name === 'Int') {
    right = fc.oneof(fc.integer({ min: -5, max: 120 }), fc.integer()).map(String);
  } else if (isScalarType(named) && named.name === 'Boolean') {
    right = fc.boolean().map(String);
  } else if (isEnumType(named)) {
    right = fc.constantFrom(...named.getValues().map((value) => value.name));
  } else {
    right = nastyString.map((text) => JSON.stringify(text));
  }
  return fc.oneof({ weight: 5, arbitrary: right }, { weight: 1, arbitrary: wrong });
}

/** A selection set for an object type, to a random depth, sometimes with aliases and typos. */
function selectionFor(type: GraphQLObjectType, depth: number): fc.Arbitrary<string> {
  const fields = Object.values(type.getFields());
  return fc
    .subarray(fields, { minLength: 1, maxLength: Math.min(4, fields.length) })
    .chain((chosen) => fc.tuple(...chosen.map((field) => fieldSelection(field, depth))))
    .map((parts) => `{ ${parts.join(' ')} }`);
}

function fieldSelection(field: GraphQLField<unknown, unknown>, depth: number): fc.Arbitrary<string> {
  const args = fc
    .subarray([...field.args])
    .chain((chosen) =>
      fc
        .tuple(...chosen.map((arg) => literalFor(arg.type)))
        .map((values) =>
          chosen.length === 0 ? '' : `(${chosen.map((arg, i) => `${arg.name}: ${values[i]}`).join(', ')})`,
        ),
    );
  const alias = fc.option(fc.constantFrom('a', 'b', 'c'), { freq: 4 }).map((name) => (name ? `${name}: ` : ''));
  const named = getNamedType(field.type);
  const inner: fc.Arbitrary<string> =
    isObjectType(named) && depth > 0
      ? selectionFor(named, depth - 1)
      : isInterfaceType(named)
        ? fc.constant('{ id ... on User { nickName } ... on Blog { title } }')
        : isObjectType(named)
          ? fc.constant('{ __typename }')
          : fc.constant('');
  return fc.tuple(alias, args, inner).map(([a, args_, sel]) => `${a}${field.name}${args_} ${sel}`);
}

const document = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .integer({ min: 0, max: 6 })
      .chain((depth) => selectionFor(schema.getQueryType()!, depth).map((s) => `query ${s}`)),
  },
  {
    weight: 4,
    arbitrary: fc
      .integer({ min: 0, max: 3 })
      .chain((depth) => selectionFor(schema.getMutationType()!, depth).map((s) => `mutation ${s}`)),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '{',
      '{ viewer { id }',
      'query($a: Int!) { followFeed(first: $a) { edges { cursor } } }',
      '{ __schema { types { name } } }',
      'subscription { x }',
      '{ viewer { ...F } } fragment F on User { ...F }',
    ),
  },
);

const variables = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(
    fc.constantFrom('a', 'first', 'after', 'id', 'i'),
    fc.oneof(fc.integer(), nastyString, fc.constant(null), fc.array(fc.integer(), { maxLength: 3 })),
  ),
);

let app: TestApp;
let validToken: string;

beforeAll(async () => {
  app = await startTestApp('fuzz', { env: { NODE_ENV: 'production' } });
  const user = await signUp(app, 'fuzzer');
  const other = await signUp(app, 'other');
  await publish(app, other, 'something to find');
  validToken = user.token;
});
afterAll(() => app.close());

it('survives random documents and variables: no 5xx, no stack trace, no hang', async () => {
  const tokens = fc.constantFrom<string | undefined>(undefined, 'garbage.token.here', 'VALID');
  await fc.assert(
    fc.asyncProperty(document, variables, tokens, async (query, vars, token) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 10_000);
      try {
        const response = await fetch(app.url, {
          method: 'POST',
          signal: controller.signal,
          headers: {
            'content-type': 'application/json',
            ...(token ? { authorization: `Bearer ${token === 'VALID' ? validToken : token}` } : {}),
          },
          body: JSON.stringify({ query, variables: vars }),
        });
        const text = await response.text();
        expect(response.status).toBeLessThan(500);
        expect(text).not.toMatch(/stacktrace|at .*\.(js|ts):\d+/);
        // Every error is one the client caused, with its code: a fault of ours is a finding.
        expect(text).not.toContain('INTERNAL_SERVER_ERROR');
        JSON.parse(text);
      } finally {
        clearTimeout(timer);
      }
    }),
    { numRuns: 250 },
  );
  // Still serving. A fresh login: the fuzzed mutations may have ended the fuzzer's sessions (logout).
  const login = await app.gql('mutation { login(nickName: "fuzzer", password: "password-123") { token } }');
  const health = await app.gql('{ viewer { nickName } }', {}, login.data.login.token);
  expect(health.data).toEqual({ viewer: { nickName: 'fuzzer' } });
}, 120_000);
