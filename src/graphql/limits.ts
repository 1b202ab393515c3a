/**
 * Limits on what one request may ask for, checked after parsing and validation and before
 * anything executes. A public GraphQL endpoint otherwise executes whatever a client writes: a
 * query nested 50 levels deep, a connection of 100 inside a connection of 100, a thousand
 * aliases of the same expensive field.
 *
 * Each rejection is GRAPHQL_VALIDATION_FAILED (HTTP 400) with `extensions.limit` naming the
 * limit, `extensions.max` and `extensions.actual`. Introspection fields (`__schema`, `__type`)
 * are not counted: GraphiQL and code generators need them, and their size is bounded by the
 * schema's.
 *
 * The body size (MAX_BODY_BYTES in app.ts) and batching (Apollo refuses JSON arrays of
 * operations unless allowed; they are not) are limited at the HTTP layer.
 */
import type { ApolloServerPlugin } from '@apollo/server';
import {
  DocumentNode,
  FragmentDefinitionNode,
  GraphQLError,
  GraphQLSchema,
  Kind,
  OperationDefinitionNode,
  SelectionSetNode,
} from 'graphql';
import { getVariableValues } from 'graphql/execution/values';
import { fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';

export const QUERY_LIMITS = {
  /** Nesting of fields. The deepest legitimate query (feed > edges > node > author > blogs > edges > node > title) is 8. */
  depth: 10,
  /**
   * Estimated cost: 1 per field, and a connection costs `first` times its selection. A full
   * followFeed(first: 100) page with every Blog field and its author's fields costs about 2,200.
   */
  cost: 10_000,
  /** Aliased fields per operation: enough for a dashboard, too few to multiply one field. */
  aliases: 30,
  /** Top-level fields per operation. */
  rootFields: 10,
} as const;

export type QueryLimit = keyof typeof QUERY_LIMITS;

function limitExceeded(limit: QueryLimit, actual: number): GraphQLError {
  const max = QUERY_LIMITS[limit];
  return new GraphQLError(`query ${limit} ${actual} is over the limit of ${max}`, {
    extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit, max, actual, http: { status: 400 } },
  });
}

const isIntrospection = (name: string) => name.startsWith('__');

/** Depth and alias count of a selection set, fragments followed (each fragment at most once per path). */
function measure(
  selectionSet: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  visiting: Set<string> = new Set(),
): { depth: number; aliases: number } {
  let depth = 0;
  let aliases = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      if (isIntrospection(selection.name.value)) continue;
      if (selection.alias) aliases += 1;
      const inner = selection.selectionSet ? measure(selection.selectionSet, fragments, visiting) : { depth: 0, aliases: 0 };
      depth = Math.max(depth, 1 + inner.depth);
      aliases += inner.aliases;
    } else {
      const name = selection.kind === Kind.FRAGMENT_SPREAD ? selection.name.value : null;
      if (name !== null && visiting.has(name)) continue; // a cycle: validation already rejected it
      const target = selection.kind === Kind.FRAGMENT_SPREAD ? fragments[selection.name.value]?.selectionSet : selection.selectionSet;
      if (!target) continue;
      if (name !== null) visiting.add(name);
      const inner = measure(target, fragments, visiting);
      if (name !== null) visiting.delete(name);
      depth = Math.max(depth, inner.depth);
      aliases += inner.aliases;
    }
  }
  return { depth, aliases };
}

function rootFieldCount(operation: OperationDefinitionNode): number {
  return operation.selectionSet.selections.filter(
    (selection) => selection.kind !== Kind.FIELD || !isIntrospection(selection.name.value),
  ).length;
}

/** Throws the first limit the operation breaks. */
export function checkQueryLimits(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): void {
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
  }
  const roots = rootFieldCount(operation);
  if (roots > QUERY_LIMITS.rootFields) throw limitExceeded('rootFields', roots);
  const { depth, aliases } = measure(operation.selectionSet, fragments);
  if (depth > QUERY_LIMITS.depth) throw limitExceeded('depth', depth);
  if (aliases > QUERY_LIMITS.aliases) throw limitExceeded('aliases', aliases);
  // Variables that do not fit their types are reported by execution as BAD_USER_INPUT; the
  // cost is computed with coerced values (and a request with bad ones never executes).
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) return;
  const cost = getComplexity({
    schema,
    query: document,
    operationName: operation.name?.value,
    variables: coerced.coerced,
    estimators: [fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })],
  });
  if (cost > QUERY_LIMITS.cost) throw limitExceeded('cost', cost);
}

/** The Apollo plugin that applies the limits to every operation. */
export function queryLimitsPlugin(schema: GraphQLSchema): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, operation, request }) {
          if (operation) checkQueryLimits(schema, document, operation, request.variables);
        },
      };
    },
  };
}

/**
 * The cost of a connection field: `first` (default 10, at most 100) times its selection, plus 1.
 * Used as the `complexity` of followFeed and User.blogs.
 */
export function connectionCost({ args, childComplexity }: { args: Record<string, unknown>; childComplexity: number }): number {
  const first = typeof args.first === 'number' ? Math.min(Math.max(args.first, 0), 100) : 10;
  return 1 + first * childComplexity;
}
