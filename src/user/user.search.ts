/**
 * Finding users by the start of their nickName (`users(search:)`): the rules of the search text,
 * the order of the results, and their cursor. Pure: no I/O (test/unit/user/user-search.test.ts).
 *
 * Matching is on the nickName key (nickNameKey: NFKC, then lower case), the key that makes
 * nickNames unique: "ａｌ" and "AL" find "alice", as they would log in as her.
 *
 * Order, "best match first": by the key's length in characters, then by the key in code point
 * order. So the exact match (the shortest key that starts with the text) comes first, then
 * shorter keys before longer ones ("al", "ali", "alex", "alice", "albert"), then alphabetical.
 * The database reads it in that order from the index (nick_len, nick_key): one range of keys per
 * length, so a page costs the same at ten users or a million.
 *
 * The cursor is the position (length, key) of an edge's user, written as
 * base64url("search:<key>") (the length follows from the key). Its tag cannot be read as any
 * other connection's cursor, and theirs cannot be read as this one (theirs are digits); a cursor
 * of another search (its key does not start with this search's text) is refused too.
 */
import { badUserInput } from '../kernel/errors';
import { charLength, checkNoControlCharacters, checkText } from '../kernel/validation';
import { nickNameKey } from './user.key';

/** Longest search text in characters: the longest nickName (NICKNAME_MAX); a longer text can match no one. */
export const SEARCH_TEXT_MAX = 32;

/** Longest nickName key in characters (the nick_key column, NICKNAME_KEY_MAX): no key is longer. */
export const SEARCH_KEY_MAX = 128;

/** What a cursor decodes to: the position of a user in the order (length, key). */
export interface SearchPosition {
  length: number;
  key: string;
}

const CURSOR_TAG = 'search:';

/** Largest cursor accepted, in characters: the tag and a key of SEARCH_KEY_MAX characters of 4 bytes, in base64. */
const MAX_CURSOR_CHARS = Math.ceil(((CURSOR_TAG.length + SEARCH_KEY_MAX * 4) * 4) / 3);

/** The key the search text matches against; BAD_USER_INPUT on `search` when the text breaks a rule. */
export function searchKeyOf(text: string): string {
  checkText('search', text, { min: 1, max: SEARCH_TEXT_MAX });
  checkNoControlCharacters('search', text, { newlineAndTab: false });
  const key = nickNameKey(text);
  const length = charLength(key);
  if (length > SEARCH_KEY_MAX) {
    throw badUserInput(
      `search must be at most ${SEARCH_KEY_MAX} characters once normalised (NFKC, lower case) (got ${length})`,
      'search',
    );
  }
  return key;
}

/** The position of a user whose key is `key`. */
export function positionOf(key: string): SearchPosition {
  return { length: charLength(key), key };
}

export function encodeSearchCursor(key: string): string {
  return Buffer.from(CURSOR_TAG + key, 'utf8').toString('base64url');
}

/** A cursor as an error message quotes it: at most its first 40 characters. */
function shown(cursor: string): string {
  return cursor.length > 40 ? `${cursor.slice(0, 40)}...` : cursor;
}

/**
 * Decodes `after` for the search whose key is `searchKey`. BAD_USER_INPUT on `after` for a
 * cursor this search did not give: malformed, of another connection, or of another search.
 */
export function decodeSearchCursor(cursor: string, searchKey: string): SearchPosition {
  const refuse = (why: string) => badUserInput(`cursor "${shown(cursor)}" ${why}`, 'after');
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+={0,2}$/.test(cursor)) {
    throw refuse('is not a cursor this API returned');
  }
  const bytes = Buffer.from(cursor, 'base64url');
  const text = bytes.toString('utf8');
  if (!text.startsWith(CURSOR_TAG)) throw refuse('is not a cursor of users(search:) (a cursor of another connection?)');
  const key = text.slice(CURSOR_TAG.length);
  // Bytes that are not UTF-8 decode to U+FFFD and do not encode back to themselves.
  const wellFormed =
    Buffer.from(text, 'utf8').equals(bytes) &&
    key.length > 0 &&
    charLength(key) <= SEARCH_KEY_MAX &&
    nickNameKey(key) === key;
  if (!wellFormed) throw refuse('is not a cursor this API returned');
  if (!key.startsWith(searchKey))
    throw refuse('belongs to another search: pass the search text it was returned with, or no cursor');
  return positionOf(key);
}

/**
 * The keys that start with `prefix`, as a range [from, below) in code point order (the order of
 * the utf8mb4_bin column and of SQLite's byte comparison): `below` is the prefix with its last
 * character counted up, null when there is no such string (a prefix of U+10FFFF only).
 */
export function prefixRange(prefix: string): { from: string; below: string | null } {
  const codePoints = [...prefix].map((character) => character.codePointAt(0)!);
  while (codePoints.length > 0) {
    const last = codePoints.pop()!;
    if (last === 0x10ffff) continue;
    // The next code point that is a character: surrogates are not (UTF-8 cannot hold them).
    codePoints.push(last === 0xd7ff ? 0xe000 : last + 1);
    return { from: prefix, below: String.fromCodePoint(...codePoints) };
  }
  return { from: prefix, below: null };
}

/** The key lengths a page may hold, shortest first: from `from` to SEARCH_KEY_MAX. */
export function lengthsFrom(from: number): number[] {
  const lengths: number[] = [];
  for (let length = from; length <= SEARCH_KEY_MAX; length += 1) lengths.push(length);
  return lengths;
}
