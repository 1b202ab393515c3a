/**
 * Limits on what one request may ask for, checked after parsing and validation and before
 * anything executes. A public GraphQL endpoint otherwise executes whatever a client writes: a
 * query nested 50 levels deep, a connection of 100 inside a connection of 100, a thousand
 * aliases of the same expensive field.
 *
 * Each rejection is GRAPHQL_VALIDATION_FAILED (HTTP 400) with `extensions.limit` naming the
 * limit, `extensions.max` and `extensions.actual`. Introspection fields (`__schema`, `__type`)
 * count toward neither depth nor root fields: GraphiQL and code generators need them, and one
 * introspection answer is bounded by the schema's size. Their aliases do count (the standard
 * introspection query has none; 1,000 aliases of `__schema` would be 1,000 copies of it), and so
 * do they toward nodes and cost (the introspection query: 230 and 220), so fragments cannot hide
 * an expansion under them.
 *
 * Bytes are a cost: a field that can answer more than a KiB of JSON (a blog's content, title and
 * images, a user's icon) costs a unit per KiB of the most it can answer (LARGE_FIELD_BYTES), so
 * the cost bounds the answer's size as well as the work; the served answer is capped besides
 * (RESPONSE_MAX_BYTES, http.ts).
 *
 * Every figure counts a fragment wherever it is spread, yet each fragment is measured once
 * (OperationMeasurer), so the check takes time linear in the document.
 *
 * The body size (MAX_BODY_BYTES in api.ts) and batching (Apollo refuses JSON arrays of
 * operations unless allowed; they are not) are limited at the HTTP layer.
 */
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../kernel/pagination/page';
import { CONTENT_MAX, IMAGE_URL_MAX, IMAGES_MAX, TITLE_MAX } from '../blog/blog.service';
import type { ApolloServerPlugin } from '@apollo/server';
import { createHash } from 'node:crypto';
import {
  DocumentNode,
  FieldNode,
  FragmentDefinitionNode,
  getVariableValues,
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  GraphQLCompositeType,
  GraphQLField,
  GraphQLIncludeDirective,
  GraphQLSchema,
  GraphQLSkipDirective,
  isAbstractType,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  Kind,
  OperationDefinitionNode,
  SchemaMetaFieldDef,
  SelectionNode,
  SelectionSetNode,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
} from 'graphql';
import { queryLimitExceeded } from '../kernel/errors';

/**
 * A field's cost rule as type-graphql stores it (`@Field({ complexity })`, an untyped field
 * extension), in the signature type-graphql documents (graphql-query-complexity's estimator).
 */
type ComplexityEstimatorArgs = {
  type: GraphQLCompositeType;
  field: GraphQLField<unknown, unknown>;
  node: FieldNode;
  args: Record<string, unknown>;
  childComplexity: number;
  context?: Record<string, unknown>;
};
type ComplexityEstimator = (options: ComplexityEstimatorArgs) => number | void;

export const QUERY_LIMITS = {
  /** Nesting of fields. The deepest legitimate query (feed > edges > node > author > blogs > edges > node > title) is 8. */
  depth: 10,
  /**
   * Selections (fields, fragment spreads, inline fragments) with every fragment spread expanded
   * where it stands, as graphql-query-complexity's cap counted them: `...F ...F` counts F twice.
   * The introspection query has 230; a full feed page 23. It stops documents whose
   * fragments spread each other into millions of paths.
   */
  nodes: 10_000,
  /**
   * Estimated cost: 1 per field, a unit per KiB of the most a large field can answer
   * (LARGE_FIELD_BYTES), and a connection costs `first` times its selection. A full
   * followFeed(first: 100) page with every Blog field and its author's fields costs 8,101, so it
   * passes; three aliased pages of 100 contents cost 12,604 and do not (priced by their fields alone,
   * thirty would pass at 9,031). At about a KiB per unit, an answer within the cost is at most about 10 MB.
   */
  cost: 10_000,
  /** Aliased fields per operation, introspection's included: enough for a dashboard, too few to multiply one field. */
  aliases: 30,
  /** Top-level fields per operation. */
  rootFields: 10,
} as const;

export type QueryLimit = keyof typeof QUERY_LIMITS;
export type QueryLimits = Record<QueryLimit, number>;

/**
 * Counts stop growing here: a document whose fragments double 1,000 times would otherwise
 * overflow to Infinity (printed as null) or, times a `first: 0`, to NaN (which passes every
 * comparison).
 */
const SATURATED = Number.MAX_SAFE_INTEGER;
const add = (a: number, b: number): number => Math.min(a + b, SATURATED);

/**
 * How many verdicts are remembered. Each entry is a 43-character hash and a verdict, so 1,000
 * entries are about 100 kB; they spare repeated documents (a client's few queries, an attacker
 * repeating one) even the linear walk.
 */
const VERDICT_CACHE_ENTRIES = 1000;

const isIntrospection = (name: string) => name.startsWith('__');

/** A cost unit of a large field: a KiB of JSON. */
const BYTES_PER_COST_UNIT = 1024;

/** tb_user.icon is a VARCHAR(512). */
const ICON_MAX = 512;

/**
 * The most JSON a text of `characters` characters answers: its quotes, and at most 4 bytes a
 * character (UTF-8; JSON.stringify escapes only control characters, `"` and `\`, and blog text
 * holds no control characters but newline and tab, whose escapes take 2 bytes). Rows stored
 * before control characters were refused may hold up to 6 bytes a character (`\u0001`); the
 * answer's byte cap (RESPONSE_MAX_BYTES) bounds those.
 */
const jsonTextBytes = (characters: number): number => 2 + 4 * characters;
/** A JSON list of `count` items of `itemBytes` each: brackets and commas. */
const jsonListBytes = (count: number, itemBytes: number): number => 2 + count * itemBytes + Math.max(0, count - 1);

/**
 * The most JSON each field that can answer more than a KiB answers, by type and field name.
 * Checked against the schema when the limits are set up (queryLimitsPlugin), so that a field
 * renamed there cannot silently lose its weight.
 */
export const LARGE_FIELD_BYTES: ReadonlyMap<string, number> = new Map([
  ['Blog.title', jsonTextBytes(TITLE_MAX)],
  ['Blog.content', jsonTextBytes(CONTENT_MAX)],
  ['Blog.images', jsonListBytes(IMAGES_MAX, jsonTextBytes(IMAGE_URL_MAX))],
  ['User.icon', jsonTextBytes(ICON_MAX)],
]);

/** The cost of a field of `type` named `field` that answers up to LARGE_FIELD_BYTES, or undefined for any other field. */
function largeFieldCost(type: string, field: string): number | undefined {
  const bytes = LARGE_FIELD_BYTES.get(`${type}.${field}`);
  return bytes === undefined ? undefined : Math.max(1, Math.ceil(bytes / BYTES_PER_COST_UNIT));
}

/**
 * The weight of large fields as a graphql-query-complexity estimator, for whoever prices a
 * document with that library (the unit tests compare the measure with it).
 */
export function largeFieldEstimator({ type, field, childComplexity }: ComplexityEstimatorArgs): number | void {
  const cost = largeFieldCost(type.name, field.name);
  if (cost !== undefined) return cost + childComplexity;
}

/** Throws when a field of LARGE_FIELD_BYTES is not in `schema` (a rename would otherwise drop its weight). */
function checkLargeFields(schema: GraphQLSchema): void {
  for (const key of LARGE_FIELD_BYTES.keys()) {
    const [typeName, fieldName] = key.split('.');
    const type = schema.getType(typeName);
    if (!(isObjectType(type) || isInterfaceType(type)) || !type.getFields()[fieldName]) {
      throw new Error(`LARGE_FIELD_BYTES names ${key}, which the schema does not have`);
    }
  }
}

/** What an operation asks for, measured with its fragments expanded where they are spread. */
export interface QueryMeasure {
  rootFields: number;
  /** Nesting of fields, introspection fields not counted. */
  depth: number;
  /** Aliased fields, introspection fields included. */
  aliases: number;
  /** Selections, @skip/@include applied (see QUERY_LIMITS.nodes). */
  nodes: number;
  /** Estimated cost (see QUERY_LIMITS.cost), @skip/@include applied; null when the variables do not fit their types. */
  cost: number | null;
  /**
   * Selections the measuring visited: each selection of the document at most once, however
   * often its fragment is spread, so the work is linear in the document (tests check it).
   */
  visits: number;
}

/** One selection set measured: structure (depth, aliases), nodes, and cost per possible type. */
interface SetMeasure {
  depth: number;
  aliases: number;
  nodes: number;
  cost: number;
}

/**
 * Measures one operation in time linear in the document: each fragment is measured once, the
 * first time it is spread, and that measure is reused at every other spread. A fragment's
 * depth, aliases, nodes and cost do not depend on where it is spread (its cost is taken on its
 * own type condition, as graphql-query-complexity takes it), so memoising changes no figure;
 * expanding every spread instead walks 2^24 paths for 24 fragments that each spread the next
 * one twice.
 *
 * The cost rules are graphql-query-complexity's with fieldExtensionsEstimator and
 * simpleEstimator({ defaultComplexity: 1 }), which this replaces because it expands every
 * spread: a field costs its `complexity` (a number, plus its selection's cost; or a function
 * of the arguments and the selection's cost, such as connectionCost) or else 1 plus its
 * selection's cost; a selection set costs, for the costliest of its possible types, the sum of
 * what applies to that type; selections left out by @skip/@include cost nothing.
 */
class OperationMeasurer {
  visits = 0;
  private readonly memo = new Map<string, SetMeasure>();
  private readonly measuring = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly variables: Record<string, unknown>,
  ) {}

  fragment(name: string): SetMeasure | null {
    const known = this.memo.get(name);
    if (known) return known;
    const definition = this.fragments.get(name);
    // Unknown fragments and cycles are validation errors; validation runs first.
    if (!definition || this.measuring.has(name)) return null;
    const type = this.schema.getType(definition.typeCondition.name.value);
    this.measuring.add(name);
    const measure = this.selectionSet(definition.selectionSet, isCompositeType(type) ? type : undefined);
    this.measuring.delete(name);
    this.memo.set(name, measure);
    return measure;
  }

  /** `type` undefined: a type the schema lacks (a validation error); only depth and aliases count. */
  selectionSet(selectionSet: SelectionSetNode, type: GraphQLCompositeType | undefined): SetMeasure {
    let depth = 0;
    let aliases = 0;
    let nodes = 0;
    const costByType = new Map<string, number>();
    const addCost = (cost: number, on: GraphQLCompositeType) => {
      for (const name of this.possibleTypeNames(on)) costByType.set(name, add(costByType.get(name) ?? 0, cost));
    };
    for (const selection of selectionSet.selections) {
      this.visits += 1;
      if (type) nodes = add(nodes, 1);
      const included = this.isIncluded(selection);
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        const field = type ? this.fieldOf(type, name) : undefined;
        const childType = field ? getNamedType(field.type) : undefined;
        const child = selection.selectionSet
          ? this.selectionSet(selection.selectionSet, isCompositeType(childType) ? childType : undefined)
          : null;
        if (selection.alias) aliases = add(aliases, 1);
        aliases = add(aliases, child?.aliases ?? 0);
        if (!isIntrospection(name)) depth = Math.max(depth, 1 + (child?.depth ?? 0));
        if (!type || !field || !included) continue;
        const childCost = child && isCompositeType(childType) ? child.cost : 0;
        if (child && isCompositeType(childType)) nodes = add(nodes, child.nodes);
        const cost = this.fieldCost(field, selection, type, childCost);
        if (cost !== null) addCost(cost, type);
      } else {
        let inner: SetMeasure | null;
        let innerType: GraphQLCompositeType | undefined;
        if (selection.kind === Kind.FRAGMENT_SPREAD) {
          inner = this.fragment(selection.name.value);
          const condition = this.fragments.get(selection.name.value)?.typeCondition.name.value;
          const found = condition === undefined ? undefined : this.schema.getType(condition);
          innerType = isCompositeType(found) ? found : undefined;
        } else {
          const found = selection.typeCondition ? this.schema.getType(selection.typeCondition.name.value) : type;
          innerType = isCompositeType(found) ? found : undefined;
          inner = this.selectionSet(selection.selectionSet, innerType);
        }
        if (!inner) continue;
        depth = Math.max(depth, inner.depth);
        aliases = add(aliases, inner.aliases);
        if (!type || !innerType || !included) continue;
        nodes = add(nodes, inner.nodes);
        addCost(inner.cost, innerType);
      }
    }
    return { depth, aliases, nodes, cost: Math.max(0, ...costByType.values()) };
  }

  private fieldOf(type: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
    if (name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
    if (name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
    if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
    return isObjectType(type) || isInterfaceType(type) ? type.getFields()[name] : undefined;
  }

  private possibleTypeNames(type: GraphQLCompositeType): readonly string[] {
    return isAbstractType(type) ? this.schema.getPossibleTypes(type).map((possible) => possible.name) : [type.name];
  }

  /** @skip / @include with the request's variables; one that cannot be evaluated counts as included. */
  private isIncluded(selection: SelectionNode): boolean {
    if (!selection.directives?.length) return true;
    try {
      if (getDirectiveValues(GraphQLSkipDirective, selection, this.variables)?.if === true) return false;
      if (getDirectiveValues(GraphQLIncludeDirective, selection, this.variables)?.if === false) return false;
    } catch {
      // A variable that does not fit: execution reports it.
    }
    return true;
  }

  /**
   * The field's `complexity` option, else its weight as a large field, else 1, plus its
   * selection's cost; null when its arguments cannot be read (execution reports them).
   */
  private fieldCost(
    field: GraphQLField<unknown, unknown>,
    node: SelectionNode & { kind: Kind.FIELD },
    type: GraphQLCompositeType,
    childComplexity: number,
  ): number | null {
    let args: Record<string, unknown>;
    try {
      args = getArgumentValues(field, node, this.variables);
    } catch {
      return null;
    }
    const complexity = field.extensions?.complexity;
    if (typeof complexity === 'number') return add(childComplexity, complexity);
    if (typeof complexity === 'function') {
      const estimatorArgs: ComplexityEstimatorArgs = { childComplexity, args, field, node, type, context: undefined };
      // type-graphql stores a field's estimator as an untyped extension; this is its documented signature.
      const cost: unknown = (complexity as ComplexityEstimator)(estimatorArgs);
      if (typeof cost === 'number' && !Number.isNaN(cost)) return Math.min(Math.max(cost, 0), SATURATED);
    }
    return add(largeFieldCost(type.name, field.name) ?? 1, childComplexity);
  }
}

function rootFieldCount(operation: OperationDefinitionNode): number {
  return operation.selectionSet.selections.filter(
    (selection) => selection.kind !== Kind.FIELD || !isIntrospection(selection.name.value),
  ).length;
}

/** Measures `operation` of `document` with the request's variables (see OperationMeasurer). */
export function measureOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): QueryMeasure {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  // Variables that do not fit their types are reported by execution as BAD_USER_INPUT (and a
  // request with bad ones never executes); the cost is computed with coerced values only.
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  const measurer = new OperationMeasurer(schema, fragments, coerced.coerced ?? {});
  const rootType = schema.getRootType(operation.operation) ?? undefined;
  const measure = measurer.selectionSet(operation.selectionSet, rootType);
  return {
    rootFields: rootFieldCount(operation),
    depth: measure.depth,
    aliases: measure.aliases,
    nodes: measure.nodes,
    cost: coerced.errors ? null : measure.cost,
    visits: measurer.visits,
  };
}

/** The first limit a measure breaks, in the order the limits are checked, or null. */
export function brokenLimit(
  measure: QueryMeasure,
  limits: QueryLimits = QUERY_LIMITS,
): { limit: QueryLimit; actual: number } | null {
  const order: QueryLimit[] = ['rootFields', 'depth', 'aliases', 'nodes', 'cost'];
  for (const limit of order) {
    const actual = measure[limit];
    if (actual !== null && actual > limits[limit]) return { limit, actual };
  }
  return null;
}

type Verdict = { limit: QueryLimit; actual: number } | null;

/**
 * Verdicts by document text, operation name and variables (the cost depends on them), oldest
 * forgotten first; a hit moves its entry to the back, so the documents in use stay.
 */
const verdicts = new Map<string, Verdict>();

function cachedVerdict(key: string, compute: () => Verdict): Verdict {
  if (verdicts.has(key)) {
    const verdict = verdicts.get(key)!;
    verdicts.delete(key);
    verdicts.set(key, verdict);
    return verdict;
  }
  const verdict = compute();
  if (verdicts.size >= VERDICT_CACHE_ENTRIES) verdicts.delete(verdicts.keys().next().value!);
  verdicts.set(key, verdict);
  return verdict;
}

/**
 * Throws the first limit the operation breaks. `source` (the document's text) keys the verdict
 * cache; without it the operation is measured every time.
 */
export function checkQueryLimits(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  source?: string,
): void {
  const compute = () => brokenLimit(measureOperation(schema, document, operation, variables));
  const verdict =
    source === undefined
      ? compute()
      : cachedVerdict(
          createHash('sha256')
            .update(`${operation.name?.value ?? ''}\0${source}\0${JSON.stringify(variables ?? {})}`)
            .digest('base64url'),
          compute,
        );
  if (verdict) throw queryLimitExceeded(verdict.limit, verdict.actual, QUERY_LIMITS[verdict.limit]);
}

/** The Apollo plugin that applies the limits to every operation. */
export function queryLimitsPlugin(schema: GraphQLSchema): ApolloServerPlugin {
  checkLargeFields(schema);
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, operation, request, source }) {
          if (operation) checkQueryLimits(schema, document, operation, request.variables, source);
        },
      };
    },
  };
}

/**
 * The cost of a connection field: `first` (or `last`, followFeed's page up; at most 100) times its selection, plus 1. Used as the
 * `complexity` of every connection field. An explicit `first: null` is priced at the field's
 * declared default, which is what the resolver then serves (10, or 5 for Blog.likers).
 */
export function connectionCost({
  args,
  childComplexity,
  field,
}: {
  args: Record<string, unknown>;
  childComplexity: number;
  field?: Pick<GraphQLField<unknown, unknown>, 'args'>;
}): number {
  const declared = field?.args.find((arg) => arg.name === 'first')?.defaultValue;
  const fallback = typeof declared === 'number' ? declared : DEFAULT_PAGE_SIZE;
  const asked = typeof args.first === 'number' ? args.first : typeof args.last === 'number' ? args.last : null;
  const size = asked === null ? fallback : Math.min(Math.max(asked, 0), MAX_PAGE_SIZE);
  return 1 + size * childComplexity;
}
