/**
 * `npm run codegen`: TypeScript types for the example operations (examples/*.graphql) from the
 * committed schema, as typed document nodes a client passes to any GraphQL client.
 */
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['examples/**/*.graphql'],
  generates: {
    // Every type of the schema, for code that handles them outside an operation.
    'examples/generated/schema.ts': {
      plugins: ['typescript'],
      config: { scalars: { DateTime: 'string' }, enumsAsTypes: true },
    },
    // The operations' variables and results, and their typed documents. (typescript-operations
    // 6 emits the input types an operation needs itself, so it is kept apart from the above.)
    'examples/generated/graphql.ts': {
      plugins: ['typescript-operations', 'typed-document-node'],
      config: { scalars: { DateTime: 'string' }, enumsAsTypes: true, useTypeImports: true },
    },
  },
};

export default config;
