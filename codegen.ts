/**
 * `npm run codegen`: TypeScript types for the example operations (examples/*.graphql) from the
 * committed schema, as typed document nodes a client passes to any GraphQL client, and the
 * manifest of trusted documents for the server (README, "Trusted documents").
 */
import type { CodegenConfig } from '@graphql-codegen/cli';
import { addTypenameSelectionDocumentTransform } from '@graphql-codegen/client-preset';

const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['examples/**/*.graphql'],
  generates: {
    // Every type of the schema, for code that handles them outside an operation.
    'examples/generated/schema.ts': {
      plugins: ['typescript'],
      config: { scalars: { DateTime: 'string' }, enumsAsTypes: true },
    },
    // The client preset: each operation's variables, result and typed document (graphql.ts), and
    // the trusted documents' manifest (persisted-documents.json), which a server run with
    // PERSISTED_DOCUMENTS=allow or only loads (PERSISTED_DOCUMENTS_MANIFEST). Each document
    // carries its id (`__meta__.hash`, SHA-256 of its text), which the client sends instead of it.
    'examples/generated/': {
      preset: 'client',
      presetConfig: {
        fragmentMasking: false,
        persistedDocuments: { mode: 'embedHashInDocument', hashAlgorithm: 'sha256' },
      },
      // Normalized caches (Apollo Client, urql's graphcache) add __typename to every selection and
      // need it in the answer; the server runs the manifest's text, so the text carries it too.
      documentTransforms: [addTypenameSelectionDocumentTransform],
      config: { scalars: { DateTime: 'string' }, enumsAsTypes: true, useTypeImports: true },
    },
  },
};

export default config;
