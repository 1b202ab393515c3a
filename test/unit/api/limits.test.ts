/**
 * The query-limit measure (src/graphql/limits.ts) against brute force: for small documents of
 * random fragment DAGs (repeated spreads, nested connections, inline fragments on an interface,
 * @include/@skip), its depth, aliases, node count and cost equal those of expanding every
 * spread on every path (graphql-query-complexity's getComplexity for the cost and the node
 * count, which it expands itself; a path-by-path walk for depth and aliases), and so does its
 * verdict. For large ones, the selections it visits never exceed those the document holds.
 */
import 'reflect-metadata';
import fc from 'fast-check';
import {
  DocumentNode,
  FragmentDefinitionNode,
  getIntrospectionQuery,
  Kind,
  OperationDefinitionNode,
  parse,
  SelectionSetNode,
  validate,
  visit,
} from 'graphql';
import { fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';
import {
  brokenLimit,
  largeFieldEstimator,
  measureOperation,
  QUERY_LIMITS,
  QueryLimits,
  QueryMeasure,
} from '../../../src/graphql/limits';
import { buildFeedSchema } from '../../../src/graphql/schema';

const schema = buildFeedSchema();

// ---- documents ---------------------------------------------------------------------------

/** A selection inside a User selection set; `spread` may name only fragments after the one it is in (a DAG). */
type Sel =
  | {
      kind: 'leaf';
      field: 'id' | 'nickName' | 'followerCount' | '__typename';
      alias: boolean;
      skip: 'none' | 'skip' | 'include';
    }
  | { kind: 'spread'; target: number; include: boolean }
  | { kind: 'blogs'; first: 0 | 2 | 5; inner: Sel[] }
  | { kind: 'onNode' }
  | { kind: 'onUser'; inner: Sel[] };

/** Selections for a User selection set in fragment `from` (-1: the operation), spreading fragments > from. */
function selectionsArb(from: number, count: number, depth: number): fc.Arbitrary<Sel[]> {
  const options: Array<fc.Arbitrary<Sel>> = [
    fc.record({
      kind: fc.constant('leaf' as const),
      field: fc.constantFrom('id' as const, 'nickName' as const, 'followerCount' as const, '__typename' as const),
      alias: fc.boolean(),
      skip: fc.constantFrom('none' as const, 'skip' as const, 'include' as const),
    }),
    fc.constant({ kind: 'onNode' as const }),
  ];
  if (from + 1 < count) {
    options.push(
      fc.record({
        kind: fc.constant('spread' as const),
        target: fc.integer({ min: from + 1, max: count - 1 }),
        include: fc.boolean(),
      }),
    );
  }
  if (depth > 0) {
    const inner = selectionsArb(from, count, depth - 1);
    options.push(
      fc.record({
        kind: fc.constant('blogs' as const),
        first: fc.constantFrom(0 as const, 2 as const, 5 as const),
        inner,
      }),
    );
    options.push(fc.record({ kind: fc.constant('onUser' as const), inner }));
  }
  return fc.array(fc.oneof(...options), { minLength: 1, maxLength: 5 });
}

function printSelections(selections: Sel[]): string {
  return selections
    .map((sel) => {
      switch (sel.kind) {
        case 'leaf': {
          const directive =
            sel.skip === 'skip' ? ' @skip(if: $flag)' : sel.skip === 'include' ? ' @include(if: $flag)' : '';
          // One alias per field name, so that merged selections never conflict.
          return `${sel.alias ? `${sel.field.replace(/^__/, 'tn')}Alias: ` : ''}${sel.field}${directive}`;
        }
        case 'spread':
          return `...F${sel.target}${sel.include ? ' @include(if: $flag)' : ''}`;
        case 'blogs':
          return `b${sel.first}: blogs(first: ${sel.first}) { edges { cursor node { title author { ${printSelections(sel.inner)} } } } }`;
        case 'onNode':
          return '... on Node { id }';
        case 'onUser':
          return `... on User { ${printSelections(sel.inner)} }`;
      }
    })
    .join(' ');
}

interface Generated {
  text: string;
  flag: boolean;
}

/** A query over `count` fragments on User, each spread by the operation (so none is unused) and at random by earlier ones. */
const documentArb = (maxFragments: number, depth: number): fc.Arbitrary<Generated> =>
  fc.integer({ min: 1, max: maxFragments }).chain((count) =>
    fc
      .record({
        fragments: fc.tuple(...Array.from({ length: count }, (_, i) => selectionsArb(i, count, depth))),
        operation: selectionsArb(-1, count, depth),
        flag: fc.boolean(),
      })
      .map(({ fragments, operation, flag }) => {
        const all = Array.from({ length: count }, (_, i) => `...F${i}`).join(' ');
        const text = [
          `query Q($flag: Boolean!) { viewer { flagged: __typename @include(if: $flag) ${all} ${printSelections(operation)} } }`,
          ...fragments.map((selections, i) => `fragment F${i} on User { ${printSelections(selections)} }`),
        ].join('\n');
        return { text, flag };
      }),
  );

function operationOf(document: DocumentNode): OperationDefinitionNode {
  return document.definitions.find(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  )!;
}

// ---- brute force -------------------------------------------------------------------------

/** Depth and aliases by walking every path, each spread expanded where it stands (the checker's former walk). */
function bruteStructure(
  set: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
): { depth: number; aliases: number } {
  let depth = 0;
  let aliases = 0;
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      // Introspection fields add no depth, but their aliases count like any other.
      if (selection.alias) aliases += 1;
      const inner = selection.selectionSet
        ? bruteStructure(selection.selectionSet, fragments)
        : { depth: 0, aliases: 0 };
      if (!selection.name.value.startsWith('__')) depth = Math.max(depth, 1 + inner.depth);
      aliases += inner.aliases;
    } else {
      const target =
        selection.kind === Kind.FRAGMENT_SPREAD ? fragments[selection.name.value].selectionSet : selection.selectionSet;
      const inner = bruteStructure(target, fragments);
      depth = Math.max(depth, inner.depth);
      aliases += inner.aliases;
    }
  }
  return { depth, aliases };
}

const ESTIMATORS = [fieldExtensionsEstimator(), largeFieldEstimator, simpleEstimator({ defaultComplexity: 1 })];

/** graphql-query-complexity, which expands every spread: the cost, and whether it visits at least `nodes` selections. */
function libraryCost(document: DocumentNode, variables: Record<string, unknown>): number {
  return getComplexity({
    schema,
    query: document,
    variables,
    estimators: ESTIMATORS,
    maxQueryNodes: Number.MAX_SAFE_INTEGER,
  });
}
function libraryVisitsAtLeast(document: DocumentNode, variables: Record<string, unknown>, nodes: number): boolean {
  try {
    getComplexity({ schema, query: document, variables, estimators: ESTIMATORS, maxQueryNodes: nodes });
    return false;
  } catch (error) {
    if (!String(error).includes('maximum allowed number of nodes')) throw error;
    return true;
  }
}

function bruteMeasure(
  document: DocumentNode,
  variables: Record<string, unknown>,
  nodes: number,
): Omit<QueryMeasure, 'visits'> {
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
  }
  const operation = operationOf(document);
  // The library counts a selection as it reaches it and stops at maxQueryNodes: reaching
  // `nodes` but not `nodes + 1` means it visits exactly `nodes`.
  expect(libraryVisitsAtLeast(document, variables, nodes + 1)).toBe(false);
  if (nodes > 0) expect(libraryVisitsAtLeast(document, variables, nodes)).toBe(true);
  return {
    rootFields: operation.selectionSet.selections.length,
    ...bruteStructure(operation.selectionSet, fragments),
    nodes,
    cost: libraryCost(document, variables),
  };
}

/** Fields, fragment spreads and inline fragments written in the document. */
function selectionsIn(document: DocumentNode): number {
  let count = 0;
  visit(document, {
    Field: () => void (count += 1),
    FragmentSpread: () => void (count += 1),
    InlineFragment: () => void (count += 1),
  });
  return count;
}

/** Small limits, so that random documents break each of them now and then. */
const limitsArb: fc.Arbitrary<QueryLimits> = fc.record({
  depth: fc.integer({ min: 0, max: 12 }),
  nodes: fc.integer({ min: 0, max: 300 }),
  cost: fc.integer({ min: 0, max: 300 }),
  aliases: fc.integer({ min: 0, max: 10 }),
  rootFields: fc.integer({ min: 0, max: 2 }),
});

// ---- properties --------------------------------------------------------------------------

describe('query limit measure', () => {
  it('equals the brute-force expansion, and gives the same verdict, for small fragment DAGs', () => {
    fc.assert(
      fc.property(documentArb(5, 2), limitsArb, ({ text, flag }, limits) => {
        const document = parse(text);
        expect(validate(schema, document)).toEqual([]);
        const variables = { flag };
        const measured = measureOperation(schema, document, operationOf(document), variables);
        const { visits, ...figures } = measured;
        const brute = bruteMeasure(document, variables, measured.nodes);
        expect(figures).toEqual(brute);
        expect(brokenLimit(measured, limits)).toEqual(brokenLimit({ ...brute, visits }, limits));
        expect(brokenLimit(measured)).toEqual(brokenLimit({ ...brute, visits }, QUERY_LIMITS));
        // Every selection of the document is visited once, whatever the expansion holds.
        expect(visits).toBeLessThanOrEqual(selectionsIn(document));
      }),
      { numRuns: 300 },
    );
  });

  it('visits no more selections than a large fragment-heavy document holds, and refuses it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 20, max: 400 }),
        fc.array(fc.integer({ min: 2, max: 3 }), { minLength: 400, maxLength: 400 }),
        (levels, repeats) => {
          // Fragment i spreads fragment i + 1 twice, and now and then fragment i + 2 too.
          const fragments = Array.from({ length: levels }, (_, i) => {
            const skipping = repeats[i] === 3 ? ` ...F${Math.min(levels, i + 2)}` : '';
            return `fragment F${i} on User { id ...F${i + 1} ...F${i + 1}${skipping} }`;
          });
          fragments.push(`fragment F${levels} on User { nickName blogs(first: 2) { edges { node { title } } } }`);
          // Valid by construction (graphql-js's own validation may stop early on such documents: it budgets its work).
          const document = parse(`query Q { viewer { ...F0 } }\n${fragments.join('\n')}`);
          const measured = measureOperation(schema, document, operationOf(document), {});
          expect(measured.visits).toBeLessThanOrEqual(selectionsIn(document));
          // At least 2^20 paths: far over the node cap, and counted without overflowing.
          expect(measured.nodes).toBeGreaterThan(2 ** 20);
          expect(Number.isSafeInteger(measured.nodes)).toBe(true);
          expect(brokenLimit(measured)).toEqual({ limit: 'nodes', actual: measured.nodes });
        },
      ),
      { numRuns: 50 },
    );
  });

  it('measures 1,000 levels of doubling fragments in one visit per selection', () => {
    const levels = 1000;
    const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`);
    fragments.push(`fragment F${levels} on Query { __typename viewer { id } }`);
    const document = parse(`query Q { ...F0 }\n${fragments.join('\n')}`);
    const measured = measureOperation(schema, document, operationOf(document), {});
    expect(measured.visits).toBe(selectionsIn(document));
    expect(measured.nodes).toBe(Number.MAX_SAFE_INTEGER); // saturated, not Infinity
    expect(measured.cost).toBe(Number.MAX_SAFE_INTEGER);
    expect(brokenLimit(measured)?.limit).toBe('nodes');
  });
});

describe('connection cost', () => {
  const costOf = (text: string, variables: Record<string, unknown> = {}) => {
    const document = parse(text);
    expect(validate(schema, document)).toEqual([]);
    return measureOperation(schema, document, operationOf(document), variables).cost;
  };

  it("prices a page at the field's own default size, also when first is an explicit null", () => {
    // blog 1 + likers (1 + 5 x (edges 1 + node 1 + id 1)).
    expect(costOf('{ blog(id: "QmxvZzox") { likers { edges { node { id } } } } }')).toBe(1 + 1 + 5 * 3);
    expect(
      costOf('query($n: Int) { blog(id: "QmxvZzox") { likers(first: $n) { edges { node { id } } } } }', { n: null }),
    ).toBe(1 + 1 + 5 * 3);
    expect(costOf('{ user(id: "VXNlcjox") { followers { edges { node { id } } } } }')).toBe(1 + 1 + 10 * 3);
    expect(costOf('{ user(id: "VXNlcjox") { following(first: null) { edges { node { id } } } } }')).toBe(
      1 + 1 + 10 * 3,
    );
    expect(costOf('{ user(id: "VXNlcjox") { commonFollows(first: 100) { edges { node { id } } } } }')).toBe(
      1 + 1 + 100 * 3,
    );
  });
});

describe('bytes as a cost', () => {
  const measure = (text: string) => {
    const document = parse(text);
    expect(validate(schema, document)).toEqual([]);
    return measureOperation(schema, document, operationOf(document), {});
  };
  /** 30 aliases of a page of 100 contents: up to 30 x 100 x 60 kB of JSON for contents of control characters. */
  const contentPages = (aliases: number, first = 100) =>
    `{ user(id: "VXNlcjox") { ${Array.from({ length: aliases }, (_, i) => `b${i}: blogs(first: ${first}) { edges { node { content } } }`).join(' ')} } }`;
  const FULL_PAGE = `{ followFeed(first: 100) { edges { cursor node {
    id title content images likeCount isLiked createdAt
    author { id nickName icon followerCount followingCount isFollowedByViewer } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`;

  it('refuses 30 aliases of a page of contents, which the field count alone let through', () => {
    const measured = measure(contentPages(30));
    expect(measured.aliases).toBe(QUERY_LIMITS.aliases);
    expect(brokenLimit(measured)).toEqual({ limit: 'cost', actual: measured.cost });
    // Three pages of contents are already over: a page of 100 contents weighs 100 x 40.
    expect(brokenLimit(measure(contentPages(3)))?.limit).toBe('cost');
  });

  it('lets a full followFeed(first: 100) page with every Blog field and its author through', () => {
    const measured = measure(FULL_PAGE);
    expect(brokenLimit(measured)).toBeNull();
    expect(measured.cost).toBeGreaterThan(5000);
  });

  it('prices content, title, images and icon by the most JSON they can answer, one unit per KiB', () => {
    const costOf = (field: string) => measure(`{ blog(id: "QmxvZzox") { ${field} } }`).cost! - 1;
    // 10,000 characters of up to 4 bytes each, quoted: 40,002 bytes.
    expect(costOf('content')).toBe(Math.ceil(40_002 / 1024));
    // 255 characters: 1,022 bytes.
    expect(costOf('title')).toBe(1);
    // 9 URLs of 512 characters, quoted, with the list's brackets and commas.
    expect(costOf('images')).toBe(Math.ceil((9 * (512 * 4 + 2) + 10) / 1024));
    // tb_user.icon holds 512 characters.
    expect(costOf('author { icon }') - 1).toBe(Math.ceil((512 * 4 + 2) / 1024));
    expect(costOf('likeCount')).toBe(1);
  });
});

describe('introspection and the aliases limit', () => {
  const measure = (text: string) => {
    const document = parse(text);
    expect(validate(schema, document)).toEqual([]);
    return measureOperation(schema, document, operationOf(document), {});
  };

  it('counts aliases of __schema, and aliases inside it', () => {
    const copies = `{ ${Array.from({ length: 31 }, (_, i) => `s${i}: __schema { queryType { name } }`).join(' ')} }`;
    expect(brokenLimit(measure(copies))).toEqual({ limit: 'aliases', actual: 31 });
    const inside = `{ __schema { ${Array.from({ length: 31 }, (_, i) => `t${i}: types { name }`).join(' ')} } }`;
    expect(brokenLimit(measure(inside))).toEqual({ limit: 'aliases', actual: 31 });
    const typeCopies = `{ ${Array.from({ length: 31 }, (_, i) => `t${i}: __type(name: "Blog") { name }`).join(' ')} }`;
    expect(brokenLimit(measure(typeCopies))).toEqual({ limit: 'aliases', actual: 31 });
  });

  it("lets the standard introspection query through, with each of GraphiQL's options", () => {
    expect(brokenLimit(measure(getIntrospectionQuery()))).toBeNull();
    const everything = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
      oneOf: true,
    });
    expect(brokenLimit(measure(everything))).toBeNull();
  });
});
