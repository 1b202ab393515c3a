/**
 * Property tests of page slicing + cursors (src/feed/page.ts, src/feed/cursor.ts) against a
 * brute-force model of a source.
 *
 * The model is a plain array of {id, score} with unique ids. `modelFetch` answers "the first
 * `limit` items at position P" the slow, obvious way (sort, filter, skip, take), with its own
 * comparator: it shares no code with the module under test, so a wrong cursor shows up as a
 * scroll that loses, repeats or reorders items.
 */
import fc from 'fast-check';
import {
  decodeCursor,
  encodeCursor,
  encodeKeysetCursor,
  FeedPosition,
  InvalidCursorError,
  ScoredId,
  START,
} from '../../../src/kernel/pagination/cursor';
import {
  DEFAULT_LIKERS_PAGE_SIZE,
  DEFAULT_PAGE_SIZE,
  feedPageRequest,
  fetchSize,
  InvalidPageArgumentsError,
  InvalidPageSizeError,
  keysetFetch,
  keysetPageRequest,
  MAX_PAGE_SIZE,
  newerFetchSize,
  pageRequest,
  sliceKeysetPage,
  sliceNewerPage,
  slicePage,
} from '../../../src/kernel/pagination/page';

const NUM_RUNS = 250;

// ---------------------------------------------------------------------------------------------
// The brute-force model.

/** Canonical order written independently of compareCanonical: score DESC, then id DESC. */
function modelCompare(a: ScoredId, b: ScoredId): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  if (a.id !== b.id) return a.id > b.id ? -1 : 1;
  return 0;
}

function canonical(list: readonly ScoredId[]): ScoredId[] {
  return [...list].sort(modelCompare);
}

/** The brute-force source: the first `limit` items at `position`. */
function modelFetch(list: readonly ScoredId[], position: FeedPosition, limit: number): ScoredId[] {
  const { maxScore, offset, afterId } = position;
  if (maxScore !== null && afterId !== null) {
    // A keyset position: everything after (maxScore, afterId); the offset is only a hint.
    return canonical(list)
      .filter((item) => item.score < maxScore || (item.score === maxScore && item.id < afterId))
      .slice(0, limit);
  }
  const eligible = canonical(list).filter((item) => maxScore === null || item.score <= maxScore);
  return eligible.slice(offset, offset + limit);
}

/** Everything at `position`, i.e. what the rest of a scroll from there must return. */
function modelRest(list: readonly ScoredId[], position: FeedPosition): ScoredId[] {
  return modelFetch(list, position, Number.MAX_SAFE_INTEGER);
}

const ids = (items: readonly ScoredId[]): number[] => items.map((item) => item.id);

// ---------------------------------------------------------------------------------------------
// Arbitraries. Scores come from a small range so tie groups (same millisecond) are frequent.

const MAX_SCORE = 20;
const MAX_ID = 10_000;

const listArb: fc.Arbitrary<ScoredId[]> = fc.uniqueArray(
  fc.record({ id: fc.integer({ min: 1, max: MAX_ID }), score: fc.integer({ min: 0, max: MAX_SCORE }) }),
  { selector: (item) => item.id, minLength: 0, maxLength: 150 },
);

/** A few lists that are one big tie group, where the offset bookkeeping matters most. */
const tieHeavyListArb: fc.Arbitrary<ScoredId[]> = fc.uniqueArray(
  fc.record({ id: fc.integer({ min: 1, max: MAX_ID }), score: fc.integer({ min: 5, max: 6 }) }),
  { selector: (item) => item.id, minLength: 0, maxLength: 60 },
);

const anyListArb = fc.oneof({ weight: 4, arbitrary: listArb }, { weight: 1, arbitrary: tieHeavyListArb });

/** Page sizes, one per page, cycled when the scroll needs more pages than given. */
const pageSizesArb = fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 30 });

/**
 * A position a scroll can be at: any keyset point (maxScore, afterId), on an item of the list or
 * between two, with an offset hint anywhere in its tie group (a hint the list's changes made wrong).
 */
function validPositionArb(list: readonly ScoredId[]): fc.Arbitrary<FeedPosition> {
  return fc
    .tuple(fc.integer({ min: 0, max: MAX_SCORE + 2 }), fc.integer({ min: 1, max: MAX_ID + 2 }))
    .chain(([maxScore, afterId]) => {
      const tieGroup = list.filter((item) => item.score === maxScore).length;
      return fc.integer({ min: 0, max: tieGroup }).map((offset) => ({ maxScore, offset, afterId }));
    });
}

// ---------------------------------------------------------------------------------------------
// The scroll driver, as a client would: pageRequest(first, after) -> source -> slicePage, then
// after = encodeCursor(cursor of the last edge), until hasNextPage is false.

interface ScrollStep {
  /** The position this page was read from. */
  from: FeedPosition;
  first: number;
  /** What the model says was left at `from` when the page was read. */
  remaining: ScoredId[];
  items: ScoredId[];
  cursors: FeedPosition[];
  hasNextPage: boolean;
}

/**
 * Scrolls from `startCursor` (undefined = the top). `between(step, list)` may return new items
 * to insert into the source after `step`, before the next page is read.
 */
function scrollAll(
  initial: readonly ScoredId[],
  pageSizes: readonly number[],
  startCursor?: string,
  between?: (step: ScrollStep, pageIndex: number) => ScoredId[],
): { steps: ScrollStep[]; list: ScoredId[] } {
  const list = [...initial];
  const steps: ScrollStep[] = [];
  let after = startCursor;
  // Every page but the last returns >= 1 item; inserts only add items below the position, and
  // at most a bounded number of them, so this bound only trips on a looping scroll.
  const maxPages = 2 * (initial.length + 2) + 1000;
  for (let page = 0; ; page += 1) {
    if (page > maxPages) {
      throw new Error(`the scroll did not end after ${maxPages} pages (it loops)`);
    }
    const first = pageSizes[page % pageSizes.length];
    const request = pageRequest(first, after);
    expect(request.first).toBe(first);
    expect(fetchSize(request)).toBe(first + 1);
    const remaining = modelRest(list, request.from);
    const fetched = modelFetch(list, request.from, fetchSize(request));
    const result = slicePage(request, fetched);
    const step: ScrollStep = {
      from: request.from,
      first,
      remaining,
      items: result.items,
      cursors: result.cursors,
      hasNextPage: result.hasNextPage,
    };
    steps.push(step);
    if (!result.hasNextPage) break;
    expect(result.items.length).toBeGreaterThan(0);
    after = encodeCursor(result.cursors[result.cursors.length - 1]);
    if (between) list.push(...between(step, page));
  }
  return { steps, list };
}

/** The per-page invariants every scroll must satisfy, with or without inserts. */
function checkSteps(steps: readonly ScrollStep[]): void {
  steps.forEach((step, index) => {
    const isLast = index === steps.length - 1;
    // exactly min(first, remaining) items, and they are the next ones in canonical order
    expect(step.items.length).toBe(Math.min(step.first, step.remaining.length));
    expect(ids(step.items)).toEqual(ids(step.remaining.slice(0, step.first)));
    // hasNextPage is false on the last page only, and true exactly when items are left
    expect(step.hasNextPage).toBe(!isLast);
    expect(step.hasNextPage).toBe(step.remaining.length > step.first);
    // one cursor per edge
    expect(step.cursors.length).toBe(step.items.length);
  });
}

// ---------------------------------------------------------------------------------------------

describe('scrolling a feed from the top', () => {
  it('returns the whole canonical list exactly once, in order, page by page', () => {
    fc.assert(
      fc.property(anyListArb, pageSizesArb, (list, pageSizes) => {
        const { steps } = scrollAll(list, pageSizes);
        checkSteps(steps);
        const scrolled = steps.flatMap((step) => step.items);
        expect(ids(scrolled)).toEqual(ids(canonical(list)));
        expect(new Set(ids(scrolled)).size).toBe(scrolled.length);
        // the first page was read from the top
        expect(steps[0].from).toEqual(START);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('returns the rest of the list from any valid position', () => {
    fc.assert(
      fc.property(
        anyListArb.chain((list) => fc.tuple(fc.constant(list), validPositionArb(list))),
        pageSizesArb,
        ([list, position], pageSizes) => {
          const { steps } = scrollAll(list, pageSizes, encodeCursor(position));
          checkSteps(steps);
          expect(steps[0].from).toEqual(position);
          const expected = canonical(list).filter(
            (item) =>
              item.score < position.maxScore! || (item.score === position.maxScore && item.id < position.afterId!),
          );
          expect(ids(steps.flatMap((step) => step.items))).toEqual(ids(expected));
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('gives every edge a cursor that resumes just after that edge', () => {
    fc.assert(
      fc.property(anyListArb, pageSizesArb, (list, pageSizes) => {
        const all = canonical(list);
        const { steps } = scrollAll(list, pageSizes);
        let seen = 0;
        for (const step of steps) {
          step.cursors.forEach((cursor, i) => {
            const position = decodeCursor(encodeCursor(cursor));
            expect(position).toEqual(cursor);
            // the item the cursor follows is the one it belongs to
            expect(position.maxScore).toBe(step.items[i].score);
            expect(ids(modelRest(list, position))).toEqual(ids(all.slice(seen + i + 1)));
            // and a client resuming there through the API gets the same thing
            const request = pageRequest(MAX_PAGE_SIZE, encodeCursor(cursor));
            const page = slicePage(request, modelFetch(list, request.from, fetchSize(request)));
            expect(ids(page.items)).toEqual(ids(all.slice(seen + i + 1, seen + i + 1 + MAX_PAGE_SIZE)));
          });
          seen += step.items.length;
        }
        expect(seen).toBe(all.length);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('keeps working inside one tie group larger than the page (the seed loop)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 1_700_000_000_000 }),
        (groupSize, first, score) => {
          const list = Array.from({ length: groupSize }, (_, i) => ({ id: 1000 + 7 * i, score }));
          const { steps } = scrollAll(list, [first]);
          checkSteps(steps);
          expect(steps.length).toBe(Math.max(1, Math.ceil(groupSize / first)));
          expect(ids(steps.flatMap((step) => step.items))).toEqual(ids(canonical(list)));
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('scrolling while new items arrive', () => {
  /*
   * Between two pages, new blogs are inserted into the source with fresh ids and a score either
   * strictly above the current position's maxScore (newer than where the reader is: they belong
   * to a later refresh and must never show up in the rest of this scroll) or strictly below it
   * (older: they must show up exactly once, in canonical order).
   *
   * Out of scope: a new item with score EQUAL to the current maxScore. A new blog's score is the
   * current time, which is above any position a reader has already scrolled past, so it cannot
   * land inside the tie group the cursor's offset counts (there, a larger id would shift the
   * offset by one and an item could be repeated).
   */
  interface Insert {
    newer: boolean;
    delta: number;
    id: number;
  }
  const insertArb: fc.Arbitrary<Insert> = fc.record({
    newer: fc.boolean(),
    delta: fc.integer({ min: 1, max: 8 }),
    // ids from a range overlapping the list's, so new items interleave within tie groups
    id: fc.integer({ min: 1, max: 2 * MAX_ID }),
  });
  const insertPlanArb = fc.array(fc.array(insertArb, { maxLength: 5 }), { maxLength: 40 });

  it('returns the original items plus the older inserted items, each once, in order', () => {
    fc.assert(
      fc.property(listArb, pageSizesArb, insertPlanArb, (list, pageSizes, plan) => {
        const usedIds = new Set(ids(list));
        const olderInserted: ScoredId[] = [];
        const newerInserted: ScoredId[] = [];
        const { steps, list: finalList } = scrollAll(list, pageSizes, undefined, (step, pageIndex) => {
          const position = step.cursors[step.cursors.length - 1];
          const maxScore = position.maxScore!;
          const added: ScoredId[] = [];
          for (const insert of plan[pageIndex] ?? []) {
            if (usedIds.has(insert.id)) continue; // ids stay unique
            const score = insert.newer ? maxScore + insert.delta : maxScore - insert.delta;
            if (score < 0) continue; // scores are epoch ms, never negative
            usedIds.add(insert.id);
            const item = { id: insert.id, score };
            (insert.newer ? newerInserted : olderInserted).push(item);
            added.push(item);
          }
          return added;
        });
        checkSteps(steps);
        const scrolled = steps.flatMap((step) => step.items);
        expect(ids(scrolled)).toEqual(ids(canonical([...list, ...olderInserted])));
        expect(new Set(ids(scrolled)).size).toBe(scrolled.length);
        const scrolledIds = new Set(ids(scrolled));
        for (const item of newerInserted) expect(scrolledIds.has(item.id)).toBe(false);
        expect(finalList.length).toBe(list.length + olderInserted.length + newerInserted.length);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('pageRequest', () => {
  it('accepts every first in 0..100', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_PAGE_SIZE }), (first) => {
        expect(pageRequest(first, undefined)).toEqual({ from: START, first });
        expect(pageRequest(first, null)).toEqual({ from: START, first });
      }),
      { numRuns: 101 },
    );
    expect(pageRequest(0, undefined).first).toBe(0);
    expect(pageRequest(100, undefined).first).toBe(100);
  });

  it('defaults first to 10', () => {
    expect(DEFAULT_PAGE_SIZE).toBe(10);
    expect(pageRequest(undefined, undefined)).toEqual({ from: START, first: 10 });
    expect(pageRequest(null, undefined)).toEqual({ from: START, first: 10 });
  });

  it('decodes after into the starting position', () => {
    const position = { maxScore: 1_700_000_000_000, offset: 3, afterId: 42 };
    expect(pageRequest(5, encodeCursor(position))).toEqual({ from: position, first: 5 });
    expect(pageRequest(undefined, encodeCursor(position))).toEqual({ from: position, first: 10 });
    expect(() => pageRequest(5, 'garbage!')).toThrow(InvalidCursorError);
    expect(() => pageRequest(5, '')).toThrow(InvalidCursorError);
  });

  function expectInvalidSize(first: number): void {
    let thrown: unknown;
    try {
      pageRequest(first, undefined);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidPageSizeError);
    expect((thrown as Error).message).toContain(String(first));
  }

  it('rejects first < 0', () => {
    fc.assert(fc.property(fc.integer({ min: -1_000_000, max: -1 }), expectInvalidSize), { numRuns: 200 });
    expectInvalidSize(-1);
  });

  it('rejects first > 100', () => {
    fc.assert(fc.property(fc.integer({ min: MAX_PAGE_SIZE + 1, max: 1_000_000 }), expectInvalidSize), {
      numRuns: 200,
    });
    expectInvalidSize(101);
    expectInvalidSize(Number.MAX_SAFE_INTEGER);
  });

  it('rejects non-integer first', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -200, max: 200, noNaN: true }).filter((value) => !Number.isInteger(value)),
        expectInvalidSize,
      ),
      { numRuns: 200 },
    );
    for (const value of [1.5, 0.5, 99.9, 100.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expectInvalidSize(value);
    }
  });

  it('says what is allowed', () => {
    expect(() => pageRequest(1.5, undefined)).toThrow(/0 and 100/);
  });
});

describe('first = 0', () => {
  it('returns no items, and hasNextPage tells whether items are left', () => {
    fc.assert(
      fc.property(
        anyListArb.chain((list) => fc.tuple(fc.constant(list), fc.option(validPositionArb(list), { nil: undefined }))),
        ([list, position]) => {
          const request = pageRequest(0, position === undefined ? undefined : encodeCursor(position));
          const fetched = modelFetch(list, request.from, fetchSize(request));
          expect(fetched.length).toBeLessThanOrEqual(1);
          const page = slicePage(request, fetched);
          expect(page.items).toEqual([]);
          expect(page.cursors).toEqual([]);
          expect(page.hasNextPage).toBe(modelRest(list, request.from).length > 0);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('on an empty list and on an exhausted position says there is no next page', () => {
    expect(slicePage(pageRequest(0, undefined), []).hasNextPage).toBe(false);
    const list = [{ id: 1, score: 5 }];
    const request = pageRequest(0, encodeCursor({ maxScore: 5, offset: 1, afterId: 1 }));
    expect(slicePage(request, modelFetch(list, request.from, fetchSize(request))).hasNextPage).toBe(false);
    const start = pageRequest(0, undefined);
    expect(slicePage(start, modelFetch(list, start.from, fetchSize(start))).hasNextPage).toBe(true);
  });
});

describe('keyset pages (lists of users)', () => {
  it('default first to the given size, also for an explicit null, within the same 0..100', () => {
    expect(keysetPageRequest(undefined, null)).toEqual({ after: null, first: DEFAULT_PAGE_SIZE });
    expect(keysetPageRequest(null, undefined, DEFAULT_LIKERS_PAGE_SIZE)).toEqual({
      after: null,
      first: DEFAULT_LIKERS_PAGE_SIZE,
    });
    expect(keysetPageRequest(0, null, DEFAULT_LIKERS_PAGE_SIZE).first).toBe(0);
    expect(keysetPageRequest(MAX_PAGE_SIZE, null).first).toBe(MAX_PAGE_SIZE);
    for (const first of [-1, MAX_PAGE_SIZE + 1, 1.5])
      expect(() => keysetPageRequest(first, null)).toThrow(InvalidPageSizeError);
    expect(() => keysetPageRequest(1, 'nope')).toThrow(InvalidCursorError);
  });

  it('fetch one more than asked after the cursor, and cut it off as hasNextPage', () => {
    const request = keysetPageRequest(2, encodeKeysetCursor({ time: 1000, id: 7 }));
    expect(keysetFetch(42, request)).toEqual({ of: 42, after: { time: 1000, id: 7 }, limit: 3 });
    const items = [
      { time: 1000, id: 6 },
      { time: 999, id: 9 },
      { time: 998, id: 1 },
    ];
    expect(sliceKeysetPage(request, items)).toEqual({ items: items.slice(0, 2), hasNextPage: true });
    expect(sliceKeysetPage(request, items.slice(0, 2))).toEqual({ items: items.slice(0, 2), hasNextPage: false });
  });
});

// ---------------------------------------------------------------------------------------------
// Pages up (last/before): feedPageRequest -> a source of what is newer -> sliceNewerPage.

/** The brute-force source of a page up: the first `limit` items newer than (score, id), closest first. */
function modelNewer(list: readonly ScoredId[], before: ScoredId, limit: number): ScoredId[] {
  return canonical(list)
    .filter((item) => item.score > before.score || (item.score === before.score && item.id > before.id))
    .reverse()
    .slice(0, limit);
}

/** Pages up from `start` with `sizes` until hasPreviousPage is false; each page's items, in the order read. */
function scrollUpAll(
  list: readonly ScoredId[],
  sizes: readonly number[],
  start: string,
): { pages: ScoredId[][]; pageInfos: Array<{ hasPreviousPage: boolean }> } {
  const pages: ScoredId[][] = [];
  const pageInfos: Array<{ hasPreviousPage: boolean }> = [];
  let before = start;
  for (let i = 0; i < 2 * list.length + 5; i += 1) {
    const request = feedPageRequest({ last: sizes[i % sizes.length], before });
    if (request.direction !== 'backward') throw new Error('not a page up');
    const fetched = modelNewer(
      list,
      { score: request.before.maxScore, id: request.before.afterId },
      newerFetchSize(request),
    );
    const page = sliceNewerPage(request, fetched);
    pages.push(page.items);
    pageInfos.push({ hasPreviousPage: page.hasPreviousPage ?? false });
    expect(page.hasNextPage).toBe(false);
    if (!page.hasPreviousPage) return { pages, pageInfos };
    before = encodeCursor(page.cursors[0]);
  }
  throw new Error('the scroll up did not end (it loops)');
}

describe('pages up (last/before) against the brute-force model', () => {
  it('a page up is the `last` items closest above before, newest first, with hasPreviousPage exact and keyset cursors', () => {
    fc.assert(
      fc.property(
        anyListArb,
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: MAX_SCORE + 1 }),
        fc.integer({ min: 1, max: MAX_ID + 1 }),
        (list, last, score, id) => {
          const before = encodeCursor({ maxScore: score, offset: 1, afterId: id });
          const request = feedPageRequest({ last, before });
          if (request.direction !== 'backward') throw new Error('not a page up');
          const newer = canonical(list).filter((item) => modelCompare(item, { score, id }) < 0);
          const page = sliceNewerPage(request, modelNewer(list, { score, id }, newerFetchSize(request)));
          expect(ids(page.items)).toEqual(ids(newer.slice(Math.max(0, newer.length - last))));
          expect(page.hasPreviousPage).toBe(newer.length > last);
          page.items.forEach((item, i) => {
            expect(page.cursors[i].maxScore).toBe(item.score);
            expect(page.cursors[i].afterId).toBe(item.id);
            // The cursor decodes to a valid position (offset within the bound).
            expect(decodeCursor(encodeCursor(page.cursors[i]))).toEqual(page.cursors[i]);
          });
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('scrolling up from any edge to the top returns every newer item once, in order; down from an edge of it returns every older one', () => {
    fc.assert(
      fc.property(
        anyListArb.filter((list) => list.length > 0),
        pageSizesArb,
        fc.nat(),
        fc.nat(),
        (list, sizes, pick, pick2) => {
          const all = canonical(list);
          const start = all[pick % all.length];
          const { pages } = scrollUpAll(
            list,
            sizes,
            encodeCursor({ maxScore: start.score, offset: 1, afterId: start.id }),
          );
          const up = pages.reverse().flat();
          expect(ids(up)).toEqual(ids(all.slice(0, all.indexOf(start))));
          if (up.length === 0) return;
          // Down again from an edge of a page up: the items below it, by the forward driver.
          const turn = up[pick2 % up.length];
          const positions = sliceNewerPage(
            { before: { maxScore: start.score, offset: 1, afterId: start.id }, last: up.length },
            [...up].reverse(),
          ).cursors;
          const turnCursor = encodeCursor(positions[up.indexOf(turn)]);
          const { steps } = scrollAll(list, sizes, turnCursor);
          expect(ids(steps.flatMap((step) => step.items))).toEqual(ids(all.slice(all.indexOf(turn) + 1)));
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('a page up while items are inserted and removed anywhere neither repeats nor skips what stayed', () => {
    fc.assert(
      fc.property(
        listArb.filter((list) => list.length > 1),
        fc.integer({ min: 1, max: 5 }),
        fc.array(
          fc.record({
            id: fc.integer({ min: MAX_ID + 10, max: 2 * MAX_ID }),
            score: fc.integer({ min: 0, max: MAX_SCORE }),
          }),
          { maxLength: 10 },
        ),
        fc.array(fc.nat(), { maxLength: 10 }),
        (initial, last, inserts, removals) => {
          let list = [...initial];
          const bottom = canonical(list)[list.length - 1];
          let before = encodeCursor({ maxScore: bottom.score, offset: 1, afterId: bottom.id });
          const shown: ScoredId[] = [];
          const removed = new Set<number>();
          for (let i = 0; i < 4 * initial.length + 20; i += 1) {
            const request = feedPageRequest({ last, before });
            if (request.direction !== 'backward') throw new Error('not a page up');
            const page = sliceNewerPage(
              request,
              modelNewer(list, { score: request.before.maxScore, id: request.before.afterId }, newerFetchSize(request)),
            );
            shown.unshift(...page.items);
            if (!page.hasPreviousPage) break;
            before = encodeCursor(page.cursors[0]);
            // Between pages: an insert and a removal anywhere.
            const insert = inserts[i];
            if (insert && !list.some((item) => item.id === insert.id)) list.push(insert);
            const removal = removals[i];
            if (removal !== undefined && list.length > 0) {
              const gone = list[removal % list.length];
              removed.add(gone.id);
              list = list.filter((item) => item !== gone);
            }
          }
          const shownIds = ids(shown);
          expect(new Set(shownIds).size).toBe(shownIds.length);
          expect(ids(canonical(shown))).toEqual(shownIds);
          // Every item of the initial list above the start that stayed was shown.
          const stayed = canonical(initial).filter((item) => item.id !== bottom.id && !removed.has(item.id));
          for (const item of stayed) expect(shownIds).toContain(item.id);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('refuses first with last, after with before, last without before, and bad sizes, naming the argument', () => {
    const cursor = encodeCursor({ maxScore: 5, offset: 1, afterId: 3 });
    const refused = (args: Parameters<typeof feedPageRequest>[0]) => {
      try {
        feedPageRequest(args);
      } catch (error) {
        return error instanceof InvalidPageArgumentsError
          ? error.argument
          : error instanceof InvalidPageSizeError
            ? error.message.split(' ')[0]
            : 'other';
      }
      return null;
    };
    expect(refused({ first: 2, last: 2, before: cursor })).toBe('last');
    expect(refused({ after: cursor, before: cursor })).toBe('before');
    expect(refused({ first: 2, before: cursor })).toBe('first');
    expect(refused({ last: 2, after: cursor })).toBe('last');
    expect(refused({ last: 2 })).toBe('last');
    expect(refused({ last: MAX_PAGE_SIZE + 1, before: cursor })).toBe('last');
    expect(refused({ last: -1, before: cursor })).toBe('last');
    expect(() => feedPageRequest({ before: encodeKeysetCursor({ time: 5, id: 3 }) })).toThrow(InvalidCursorError);
    expect(feedPageRequest({ before: cursor })).toEqual({
      direction: 'backward',
      before: { maxScore: 5, offset: 1, afterId: 3 },
      last: DEFAULT_PAGE_SIZE,
    });
    expect(feedPageRequest({})).toEqual({ direction: 'forward', from: START, first: DEFAULT_PAGE_SIZE });
  });
});
