/**
 * The layers of src/, enforced in `npm run lint` (dependency-cruiser). Imports only point down:
 *
 *   entry points & composition   server.ts, worker.ts, app.ts, composition.ts
 *   API                          graphql/ (schema, context, loaders, HTTP, limits, Apollo), *.resolver.ts
 *   domain                       *.service.ts and the rest of each domain folder (feed rules, fan-out jobs, auth)
 *   storage                      db/, redis/, live/ (the bus between processes), stores.ts, *.store.ts, the inbox
 *                                (feed/inbox*.ts), the fan-out queue
 *   types                        *.types.ts: the objects the API returns, built from rows
 *   kernel                       kernel/: errors, global ids, pagination, config, observability; only the
 *                                files in KERNEL_GRAPHQL may import graphql or type-graphql
 *
 * and the fan-out worker process (worker.ts) cannot reach the API layer, Apollo or Express.
 */
const KERNEL = '^src/kernel/';
const TYPES = '[.]types[.]ts$';
const STORAGE = [
  '^src/db/',
  '^src/redis/',
  '^src/live/',
  '^src/stores[.]ts$',
  '[.]store[.]ts$',
  '^src/feed/inbox[.a-z]*[.]ts$',
  '^src/fanout/fanout[.]queue[.]ts$',
];
const API = ['^src/graphql/', '[.]resolver[.]ts$'];
const ROOT = ['^src/composition[.]ts$', '^src/app[.]ts$', '^src/server[.]ts$', '^src/worker[.]ts$'];
const SRC = '^src/';
/**
 * The kernel files that speak GraphQL: errors (GraphQLError with extensions.code), scalars, the
 * Node interface, the connection types and arguments, and the operation label of a request's log
 * line. Everything else in the kernel is plain TypeScript.
 */
const KERNEL_GRAPHQL = [
  '^src/kernel/errors[.]ts$',
  '^src/kernel/scalars[.]ts$',
  '^src/kernel/node[.]ts$',
  '^src/kernel/pagination/connection[.]ts$',
  '^src/kernel/observability[.]ts$',
];

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'modules must not import each other in a circle',
      from: {},
      to: { circular: true },
    },
    {
      name: 'kernel-is-the-bottom',
      severity: 'error',
      comment: 'the kernel imports only the kernel',
      from: { path: KERNEL },
      to: { path: SRC, pathNot: KERNEL },
    },
    {
      name: 'kernel-graphql-allowlist',
      severity: 'error',
      comment: 'in the kernel only the files of KERNEL_GRAPHQL import graphql or type-graphql',
      from: { path: KERNEL, pathNot: KERNEL_GRAPHQL },
      to: { path: ['node_modules/graphql/', 'node_modules/type-graphql/'] },
    },
    {
      name: 'types-above-kernel-only',
      severity: 'error',
      comment: '*.types.ts import only the kernel and other types',
      from: { path: TYPES },
      to: { path: SRC, pathNot: [KERNEL, TYPES] },
    },
    {
      name: 'storage-below-domain',
      severity: 'error',
      comment: 'storage adapters import only storage, types and the kernel',
      from: { path: STORAGE },
      to: { path: SRC, pathNot: [KERNEL, TYPES, ...STORAGE] },
    },
    {
      name: 'domain-below-api',
      severity: 'error',
      comment: 'domain code never imports the API layer or the composition root',
      from: { path: SRC, pathNot: [KERNEL, TYPES, ...STORAGE, ...API, ...ROOT] },
      to: { path: [...API, ...ROOT] },
    },
    {
      name: 'api-below-root',
      severity: 'error',
      comment: "the API layer may name the composition root's types, never import its code",
      from: { path: API },
      to: { path: ROOT, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'worker-without-api',
      severity: 'error',
      comment: 'the fan-out worker process must not load the API layer, Apollo or Express',
      from: { path: '^src/worker[.]ts$' },
      to: {
        path: [
          ...API,
          'node_modules/@apollo/server/',
          'node_modules/express/',
          'node_modules/cors/',
          'node_modules/graphql-ws/',
          'node_modules/ws/',
        ],
        reachable: true,
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|web)/' },
  },
};
