/** The rules of users(search:): the text, the key range, the LIKE pattern and the cursor (src/user/user.search.ts). */
import fc from 'fast-check';
import { GraphQLError } from 'graphql';
import { nickNameKey } from '../../../src/user/user.key';
import {
  decodeSearchCursor,
  encodeSearchCursor,
  lengthsFrom,
  prefixRange,
  SEARCH_KEY_MAX,
  searchKeyOf,
} from '../../../src/user/user.search';
import { encodeCursor, encodeKeysetCursor } from '../../../src/kernel/pagination/cursor';

/** Code point order, the order of the utf8mb4_bin column and of SQLite's byte comparison (not JavaScript's UTF-16 order). */
function compareCodePoints(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** The BAD_USER_INPUT of `run`, as { field, message }. */
function refusal(run: () => unknown): { field: unknown; message: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GraphQLError);
    expect((error as GraphQLError).extensions.code).toBe('BAD_USER_INPUT');
    return { field: (error as GraphQLError).extensions.field, message: (error as GraphQLError).message };
  }
  throw new Error('expected a refusal');
}

const text = fc.string({
  unit: fc.constantFrom('a', 'b', '_', '%', '!', 'é', '\u{D7FF}', '\u{E000}', '\u{FFFF}', '\u{10000}', '\u{10FFFF}'),
  maxLength: 6,
});

describe('prefixRange', () => {
  it('holds exactly the strings that start with the prefix, in code point order', () => {
    fc.assert(
      fc.property(
        text.filter((p) => p.length > 0),
        text,
        (prefix, rest) => {
          for (const candidate of [prefix + rest, rest, rest + prefix]) {
            const { from, below } = prefixRange(prefix);
            const inRange =
              compareCodePoints(candidate, from) >= 0 && (below === null || compareCodePoints(candidate, below) < 0);
            expect(inRange).toBe(candidate.startsWith(prefix));
          }
        },
      ),
    );
  });

  it('skips the surrogates and carries past U+10FFFF', () => {
    expect(prefixRange('a\u{D7FF}').below).toBe('a\u{E000}');
    expect(prefixRange('a\u{10FFFF}').below).toBe('b');
    expect(prefixRange('\u{10FFFF}').below).toBeNull();
  });
});

it('lists the key lengths from the given one to the longest key', () => {
  expect(lengthsFrom(126)).toEqual([126, 127, SEARCH_KEY_MAX]);
});

describe('searchKeyOf', () => {
  it('folds case and width like the nickName key', () => {
    expect(searchKeyOf('ＡＬ')).toBe('al');
    expect(searchKeyOf('ﬁ')).toBe('fi');
  });

  it('refuses empty, over-long and control-character text, naming search', () => {
    expect(refusal(() => searchKeyOf(''))).toEqual({
      field: 'search',
      message: 'search must be 1..32 characters (got 0)',
    });
    expect(refusal(() => searchKeyOf('x'.repeat(33))).message).toBe('search must be 1..32 characters (got 33)');
    expect(refusal(() => searchKeyOf('a\u0007')).field).toBe('search');
    // One character NFKC turns into 18: 8 of them make a key longer than any nickName's.
    expect(refusal(() => searchKeyOf('\u{FDFA}'.repeat(8))).message).toMatch(/at most 128 characters once normalised/);
  });
});

describe('the search cursor', () => {
  it('decodes what it encodes, for any key that starts with the search', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.string({ maxLength: 40 }), (prefix, rest) => {
        const key = nickNameKey(prefix + rest);
        const search = nickNameKey(prefix);
        fc.pre(
          key.startsWith(search) && key.length > 0 && [...key].length <= SEARCH_KEY_MAX && nickNameKey(key) === key,
        );
        expect(decodeSearchCursor(encodeSearchCursor(key), search)).toEqual({ key, length: [...key].length });
      }),
    );
  });

  it('refuses a cursor of another connection, of another search, or made up, naming after', () => {
    expect(
      refusal(() => decodeSearchCursor(encodeCursor({ maxScore: 1796035439093, offset: 1, afterId: 42 }), 'al'))
        .message,
    ).toMatch(/is not a cursor of users\(search:\)/);
    expect(refusal(() => decodeSearchCursor(encodeKeysetCursor({ time: 1796035439093, id: 2 }), 'al')).field).toBe(
      'after',
    );
    expect(refusal(() => decodeSearchCursor(encodeSearchCursor('bob'), 'al')).message).toMatch(
      /belongs to another search/,
    );
    expect(refusal(() => decodeSearchCursor(encodeSearchCursor('ALICE'), 'al')).message).toMatch(
      /not a cursor this API returned/,
    );
    expect(refusal(() => decodeSearchCursor('not base64!', 'al')).field).toBe('after');
    expect(
      refusal(() => decodeSearchCursor(Buffer.from([...Buffer.from('search:al'), 0xff]).toString('base64url'), 'al'))
        .field,
    ).toBe('after');
    expect(refusal(() => decodeSearchCursor('x'.repeat(1000), 'al')).field).toBe('after');
  });
});
