/**
 * Unit tests of the feed cursor (src/feed/cursor.ts): wire format, validation, and the two
 * hand-checked scrolls from the seed notes. The property tests of whole scrolls against a
 * brute-force source live in page.test.ts.
 */
import fc from 'fast-check';
import {
  decodeCursor,
  decodeKeysetCursor,
  encodeCursor,
  encodeKeysetCursor,
  FeedPosition,
  InvalidCursorError,
  MAX_CURSOR_OFFSET,
  MAX_CURSOR_SCORE,
  positionAfter,
  ScoredId,
  START,
} from '../../../src/kernel/pagination/cursor';
import { fetchSize, pageRequest, slicePage } from '../../../src/kernel/pagination/page';

const NUM_RUNS = 300;

/** base64url of arbitrary text, written here with Buffer so it does not reuse encodeCursor. */
function b64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

/** What a cursor string decodes to under the lenient Node decoder, to filter out valid inputs. */
function looksDecodable(cursor: string): boolean {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  return /^\d+:\d+$/.test(text);
}

/** Runs decodeCursor and returns the error it threw (fails the test when it did not throw). */
function decodeError(cursor: string): InvalidCursorError {
  let thrown: unknown;
  try {
    decodeCursor(cursor);
  } catch (error) {
    thrown = error;
  }
  if (thrown === undefined) {
    throw new Error(`decodeCursor(${JSON.stringify(cursor)}) did not throw`);
  }
  expect(thrown).toBeInstanceOf(InvalidCursorError);
  return thrown as InvalidCursorError;
}

/** decodeCursor must reject `cursor` with an InvalidCursorError that shows what it received. */
function expectRejected(cursor: string): void {
  const error = decodeError(cursor);
  expect(error.name).toBe('InvalidCursorError');
  // The message quotes (a prefix of) the received cursor so a client can see what it sent.
  expect(error.message).toContain(`"${cursor.slice(0, 20)}`);
}

const scoreArb = fc.bigInt({ min: 0n, max: BigInt(MAX_CURSOR_SCORE) }).map(Number);
const offsetArb = fc.integer({ min: 0, max: MAX_CURSOR_OFFSET });
const idArb = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
/** Keyset positions: each names the edge's blog. */
const positionArb: fc.Arbitrary<FeedPosition> = fc.record({ maxScore: scoreArb, offset: offsetArb, afterId: idArb });

describe('encodeCursor / decodeCursor', () => {
  it('round-trips every valid position', () => {
    fc.assert(
      fc.property(positionArb, (position) => {
        const cursor = encodeCursor(position);
        expect(typeof cursor).toBe('string');
        expect(cursor.length).toBeGreaterThan(0);
        expect(decodeCursor(cursor)).toEqual(position);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('round-trips the extreme positions', () => {
    for (const position of [
      { maxScore: 0, offset: 0, afterId: 1 },
      { maxScore: MAX_CURSOR_SCORE, offset: MAX_CURSOR_OFFSET, afterId: 1 },
      { maxScore: MAX_CURSOR_SCORE, offset: 0, afterId: 7 },
      { maxScore: 0, offset: MAX_CURSOR_OFFSET, afterId: Number.MAX_SAFE_INTEGER },
      { maxScore: 1_700_000_000_123, offset: 1, afterId: 1 },
      { maxScore: MAX_CURSOR_SCORE, offset: MAX_CURSOR_OFFSET, afterId: Number.MAX_SAFE_INTEGER },
    ]) {
      expect(decodeCursor(encodeCursor(position))).toEqual(position);
    }
  });

  it('is opaque: the cursor is URL-safe and does not show the raw numbers', () => {
    fc.assert(
      fc.property(positionArb, (position) => {
        const cursor = encodeCursor(position);
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+=*$/);
        expect(Buffer.from(cursor, 'base64url').toString('utf8')).toBe(
          `${position.maxScore}:${position.offset}:${position.afterId}`,
        );
      }),
      { numRuns: 100 },
    );
  });

  it('gives different positions different cursors', () => {
    fc.assert(
      fc.property(positionArb, positionArb, (a, b) => {
        fc.pre(a.maxScore !== b.maxScore || a.offset !== b.offset || a.afterId !== b.afterId);
        expect(encodeCursor(a)).not.toBe(encodeCursor(b));
      }),
      { numRuns: 100 },
    );
  });

  it('refuses to encode the start position', () => {
    expect(() => encodeCursor(START)).toThrow();
    expect(() => encodeCursor({ maxScore: null, offset: 3, afterId: null })).toThrow();
  });
});

describe('decodeCursor rejects what this API did not return', () => {
  it('rejects the empty string', () => {
    const error = decodeError('');
    expect(error.message).toContain('""');
  });

  it('rejects random garbage strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (garbage) => {
        fc.pre(!looksDecodable(garbage));
        expectRejected(garbage);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('rejects random full-unicode garbage strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (garbage) => {
        fc.pre(!looksDecodable(garbage));
        expectRejected(garbage);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects random base64 that does not decode to "<digits>:<digits>"', () => {
    fc.assert(
      fc.property(fc.base64String({ maxLength: 60 }), (garbage) => {
        fc.pre(!/^\d+:\d+$/.test(Buffer.from(garbage, 'base64').toString('utf8')));
        expectRejected(garbage);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('rejects base64url of text that is not "<digits>:<digits>"', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (text) => {
        fc.pre(!/^\d+:\d+$/.test(text));
        const cursor = b64url(text);
        fc.pre(cursor.length > 0);
        expectRejected(cursor);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it.each([
    'abc:1',
    '1.5:2',
    '-1:0',
    '1:-1',
    '1:2.5',
    '1e3:0',
    '0x10:0',
    ' 1:0',
    '1:0 ',
    '1:0\n',
    '1 :0',
    '+1:0',
    '1:+0',
    '1:',
    ':1',
    '1',
    '1:2:3:4',
    '1:2:0', // no blog has id 0
    '1:2:', // an empty id
    '1:2:-3',
    '1:2:99999999999999999', // 17 digits
    '1;2',
    '١:٢', // Arabic-Indic digits are not ASCII digits
    '１:２', // full-width digits
    '12345678901234567:0', // 17 digits
    'Infinity:0',
    'NaN:0',
  ])('rejects base64url of %j', (text) => {
    expectRejected(b64url(text));
  });

  it('rejects offsets above MAX_CURSOR_OFFSET, a small bound', () => {
    expect(MAX_CURSOR_OFFSET).toBeLessThanOrEqual(1000);
    fc.assert(
      fc.property(
        scoreArb,
        fc.integer({ min: MAX_CURSOR_OFFSET + 1, max: 999_999_999 }),
        idArb,
        (score, offset, id) => {
          const error = decodeError(b64url(`${score}:${offset}:${id}`));
          expect(error.message).toContain(String(offset));
        },
      ),
      { numRuns: NUM_RUNS },
    );
    expectRejected(b64url(`1000:${MAX_CURSOR_OFFSET + 1}:5`));
    expectRejected(b64url('1000:100000:5'));
    expect(decodeCursor(b64url(`1000:${MAX_CURSOR_OFFSET}:5`))).toEqual({
      maxScore: 1000,
      offset: MAX_CURSOR_OFFSET,
      afterId: 5,
    });
  });

  it('rejects offsets with too many digits', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1_000_000_000n, max: 10n ** 30n }), (offset) => {
        expectRejected(b64url(`1000:${offset}:5`));
      }),
      { numRuns: 100 },
    );
  });

  it('rejects two-part cursors "<maxScore>:<offset>" (issued before cursors named their blog), whatever the offset', () => {
    fc.assert(
      fc.property(scoreArb, fc.integer({ min: 0, max: 999_999_999 }), (score, offset) => {
        expect(decodeError(b64url(`${score}:${offset}`)).message).toMatch(/no longer accepted|names no blog/);
      }),
      { numRuns: NUM_RUNS },
    );
    expectRejected(b64url('1000:100000'));
    expectRejected(b64url('1000:0'));
  });

  it('rejects scores above MAX_CURSOR_SCORE', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: BigInt(MAX_CURSOR_SCORE) + 1n, max: 10n ** 40n }), offsetArb, (score, offset) => {
        expectRejected(b64url(`${score}:${offset}:1`));
      }),
      { numRuns: NUM_RUNS },
    );
    expectRejected(b64url(`${BigInt(MAX_CURSOR_SCORE) + 1n}:0:1`));
    expectRejected(b64url('9999999999999999:0:1'));
    expect(decodeCursor(b64url(`${MAX_CURSOR_SCORE}:0:1`))).toEqual({
      maxScore: MAX_CURSOR_SCORE,
      offset: 0,
      afterId: 1,
    });
  });

  it('rejects very long strings, even when they start like a valid cursor', () => {
    fc.assert(
      fc.property(positionArb, fc.integer({ min: 65, max: 5000 }), (position, length) => {
        const valid = encodeCursor(position);
        const long = (valid + 'A'.repeat(length)).slice(0, Math.max(length, valid.length + 1));
        fc.pre(long.length > 64);
        expectRejected(long);
      }),
      { numRuns: 100 },
    );
    expectRejected('A'.repeat(100_000));
    // a long cursor is shown truncated, not echoed in full
    expect(decodeError('B'.repeat(10_000)).message.length).toBeLessThan(500);
  });

  it('rejects a valid cursor with a non-base64url character inserted', () => {
    const foreign = fc.constantFrom(
      '+',
      '/',
      '.',
      ' ',
      '!',
      '%',
      '"',
      '\n',
      '\t',
      '\u0000',
      'é',
      '€',
      '😀',
      ':',
      '*',
      '=',
    );
    fc.assert(
      fc.property(positionArb, foreign, fc.nat(), (position, char, at) => {
        const valid = encodeCursor(position);
        const index = at % valid.length; // strictly inside or at the start: '=' is only valid at the end
        const tampered = valid.slice(0, index) + char + valid.slice(index);
        expectRejected(tampered);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('accepts only what it returned in the cases above: a valid cursor still decodes', () => {
    // guards against the rejection tests passing because decodeCursor rejects everything
    expect(decodeCursor(b64url('1000:0:1'))).toEqual({ maxScore: 1000, offset: 0, afterId: 1 });
    expect(decodeCursor(b64url('0:1000:3'))).toEqual({ maxScore: 0, offset: 1000, afterId: 3 });
    expect(decodeCursor(b64url('1000:2:77'))).toEqual({ maxScore: 1000, offset: 2, afterId: 77 });
  });
});

describe('positionAfter', () => {
  it('maps a missing cursor to START', () => {
    expect(positionAfter(undefined)).toEqual({ maxScore: null, offset: 0, afterId: null });
    expect(positionAfter(null)).toEqual({ maxScore: null, offset: 0, afterId: null });
    expect(positionAfter(undefined)).toEqual(START);
  });

  it('decodes a given cursor', () => {
    fc.assert(
      fc.property(positionArb, (position) => {
        expect(positionAfter(encodeCursor(position))).toEqual(position);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects a bad cursor rather than falling back to START', () => {
    expect(() => positionAfter('')).toThrow(InvalidCursorError);
    expect(() => positionAfter('not a cursor')).toThrow(InvalidCursorError);
  });
});

// ---------------------------------------------------------------------------------------------
// Hand-checked scrolls. The source is a brute-force model written here, independent of cursor.ts.

function canonical(list: readonly ScoredId[]): ScoredId[] {
  return [...list].sort((a, b) =>
    a.score !== b.score ? (a.score > b.score ? -1 : 1) : a.id > b.id ? -1 : a.id < b.id ? 1 : 0,
  );
}

function modelFetch(list: readonly ScoredId[], position: FeedPosition, limit: number): ScoredId[] {
  const { maxScore, offset, afterId } = position;
  if (maxScore !== null && afterId !== null) {
    return canonical(list)
      .filter((item) => item.score < maxScore || (item.score === maxScore && item.id < afterId))
      .slice(0, limit);
  }
  return canonical(list)
    .filter((item) => maxScore === null || item.score <= maxScore)
    .slice(offset, offset + limit);
}

interface ScrolledPage {
  ids: number[];
  endCursor: FeedPosition | null;
  hasNextPage: boolean;
}

/** Scrolls `list` from the top with pages of `first`; fails instead of looping forever. */
function scroll(list: readonly ScoredId[], first: number): ScrolledPage[] {
  const pages: ScrolledPage[] = [];
  let after: string | undefined;
  const maxPages = list.length + 2;
  for (;;) {
    if (pages.length > maxPages) {
      throw new Error(`scroll did not end after ${maxPages} pages: ${JSON.stringify(pages.map((p) => p.ids))}`);
    }
    const request = pageRequest(first, after);
    const page = slicePage(request, modelFetch(list, request.from, fetchSize(request)));
    const endCursor = page.cursors.length > 0 ? page.cursors[page.cursors.length - 1] : null;
    pages.push({ ids: page.items.map((item) => item.id), endCursor, hasNextPage: page.hasNextPage });
    if (!page.hasNextPage) return pages;
    if (endCursor === null) throw new Error('hasNextPage without items');
    after = encodeCursor(endCursor);
  }
}

describe('seed examples', () => {
  it('scrolls the seed notes example in pages of 2', () => {
    const list: ScoredId[] = [
      { id: 10, score: 1000 },
      { id: 9, score: 900 },
      { id: 8, score: 900 },
      { id: 7, score: 800 },
      { id: 6, score: 700 },
    ];
    const pages = scroll(list, 2);
    expect(pages.map((p) => p.ids)).toEqual([[10, 9], [8, 7], [6]]);
    expect(pages.map((p) => p.hasNextPage)).toEqual([true, true, false]);
    expect(pages[0].endCursor).toEqual({ maxScore: 900, offset: 1, afterId: 9 });
    expect(pages[1].endCursor).toEqual({ maxScore: 800, offset: 1, afterId: 7 });
    expect(pages[2].endCursor).toEqual({ maxScore: 700, offset: 1, afterId: 6 });
  });

  it('gives every edge of the example page its own position', () => {
    const list: ScoredId[] = [
      { id: 10, score: 1000 },
      { id: 9, score: 900 },
      { id: 8, score: 900 },
      { id: 7, score: 800 },
      { id: 6, score: 700 },
    ];
    const request = pageRequest(5, undefined);
    const page = slicePage(request, modelFetch(list, request.from, fetchSize(request)));
    expect(page.cursors).toEqual([
      { maxScore: 1000, offset: 1, afterId: 10 },
      { maxScore: 900, offset: 1, afterId: 9 },
      { maxScore: 900, offset: 2, afterId: 8 },
      { maxScore: 800, offset: 1, afterId: 7 },
      { maxScore: 700, offset: 1, afterId: 6 },
    ]);
    expect(page.hasNextPage).toBe(false);
  });

  it('regression: a tie group of 7 scrolled in pages of 2 returns all 7 exactly once', () => {
    // The seed reset the offset on each page: the second page ended at (1000, 2) again and the
    // scroll looped over the top of the tie group forever.
    const list: ScoredId[] = [1, 2, 3, 4, 5, 6, 7].map((id) => ({ id, score: 1000 }));
    const pages = scroll(list, 2);
    expect(pages.map((p) => p.ids)).toEqual([[7, 6], [5, 4], [3, 2], [1]]);
    expect(pages.map((p) => p.endCursor)).toEqual([
      { maxScore: 1000, offset: 2, afterId: 6 },
      { maxScore: 1000, offset: 4, afterId: 4 },
      { maxScore: 1000, offset: 6, afterId: 2 },
      { maxScore: 1000, offset: 7, afterId: 1 },
    ]);
    expect(pages.map((p) => p.hasNextPage)).toEqual([true, true, true, false]);
  });

  it('regression: a tie group of 7 between other items, in pages of 2', () => {
    const list: ScoredId[] = [
      { id: 100, score: 2000 },
      ...[11, 12, 13, 14, 15, 16, 17].map((id) => ({ id, score: 1000 })),
      { id: 1, score: 500 },
    ];
    const pages = scroll(list, 2);
    expect(pages.flatMap((p) => p.ids)).toEqual([100, 17, 16, 15, 14, 13, 12, 11, 1]);
    expect(pages.map((p) => p.ids)).toEqual([[100, 17], [16, 15], [14, 13], [12, 11], [1]]);
    expect(pages.map((p) => p.endCursor)).toEqual([
      { maxScore: 1000, offset: 1, afterId: 17 },
      { maxScore: 1000, offset: 3, afterId: 15 },
      { maxScore: 1000, offset: 5, afterId: 13 },
      { maxScore: 1000, offset: 7, afterId: 11 },
      { maxScore: 500, offset: 1, afterId: 1 },
    ]);
  });
});

describe('a tie group larger than MAX_CURSOR_OFFSET', () => {
  it('is scrolled whole: its cursors carry the bound as the offset hint, and the id places them', () => {
    const size = MAX_CURSOR_OFFSET * 2 + 50;
    const list: ScoredId[] = [
      { id: size + 10, score: 2000 },
      ...Array.from({ length: size }, (_, i) => ({ id: i + 1, score: 1000 })),
      { id: size + 5, score: 10 },
    ];
    const pages = scroll(list, 100);
    expect(pages.flatMap((p) => p.ids)).toEqual(canonical(list).map((item) => item.id));
    const ends = pages.map((p) => p.endCursor!).filter((cursor) => cursor.maxScore === 1000);
    expect(ends.length).toBeGreaterThanOrEqual(20);
    for (const cursor of ends) {
      expect(cursor.offset).toBe(Math.min(MAX_CURSOR_OFFSET, size - cursor.afterId! + 1));
      expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
    }
  });
});

describe('keyset cursors (lists of users)', () => {
  const keysetArb = fc.record({ time: scoreArb, id: idArb });

  it('round-trip every position, as opaque URL-safe text', () => {
    fc.assert(
      fc.property(keysetArb, (position) => {
        const cursor = encodeKeysetCursor(position);
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(b64url(`${position.time}:${position.id}`)).toBe(cursor);
        expect(decodeKeysetCursor(cursor)).toEqual(position);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('reject what this API did not return, quoting it', () => {
    for (const cursor of [
      '',
      'not a cursor',
      b64url('garbage'),
      b64url('1767225600000:0'), // no user has id 0
      b64url(`${MAX_CURSOR_SCORE + 1}:1`), // past any date
      b64url(`1767225600000:${Number.MAX_SAFE_INTEGER + 2}`),
      b64url('1767225600000:1:1'), // a feed cursor
      b64url('-1:1'),
      'A'.repeat(65),
    ]) {
      expect(() => decodeKeysetCursor(cursor)).toThrow(InvalidCursorError);
      expect(() => decodeKeysetCursor(cursor)).toThrow(`"${cursor.slice(0, 20)}`);
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (garbage) => {
        fc.pre(!/^\d+:\d+$/.test(Buffer.from(garbage, 'base64url').toString('utf8')));
        expect(() => decodeKeysetCursor(garbage)).toThrow(InvalidCursorError);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
