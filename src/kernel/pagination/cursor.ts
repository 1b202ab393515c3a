/**
 * The feed cursor: a position in a list ordered by (score DESC, id DESC).
 *
 * Pure: no I/O, so it can be read and tested on its own (test/unit/kernel/cursor.test.ts).
 *
 * A position is the scroll cursor of a sorted-set feed, `(maxScore, offset)` (the seed notes call it
 * `(minTime, offset)`), plus the id of the blog it comes after:
 *
 *     "continue with the items after (maxScore, afterId) in canonical order"
 *
 * Why the id? A position that only counts ("skip `offset` items of score maxScore") moves when
 * the list changes between two pages: a blog deleted or unfollowed above it makes the next page
 * skip one, and a late blog inside the same millisecond makes it repeat one. The id names the
 * edge's blog, so the position is a keyset point that no insert or removal can shift. MySQL uses
 * it directly (`created_at < t OR (created_at = t AND id < afterId)`).
 *
 * Why keep the offset then? Because the list also lives in a Redis sorted set, and
 * ZRANGE ... BYSCORE REV LIMIT offset count answers "the items after this one" in one command
 * when the offset still points at the cursor's blog. The inbox read checks that it does, and
 * recounts the tie group from the id when it does not (src/feed/inbox.redis.ts).
 *
 * The offset counts the items of score maxScore up to and including the edge's blog. Resetting it on
 * every page is not enough: when a whole page lies inside the previous page's tie group it
 * must *accumulate* (see `cursorsForPage`), otherwise the next page restarts at the top of the
 * group and the scroll loops.
 *
 * On the wire a cursor is base64url("<maxScore>:<offset>:<afterId>"). Two-part cursors
 * ("<maxScore>:<offset>", issued before the id existed) are refused: their only meaning, "skip
 * `offset` items of that millisecond", made every source read `offset + first` rows, and one
 * request could ask for 30 such pages. A cursor is opaque to clients; it is not a secret and not
 * signed: a tampered cursor can only point at another position of the viewer's own feed, and
 * every decoded value is range-checked.
 */

export interface FeedPosition {
  /** Only items with score <= maxScore; null means "from the newest item" (the first page). */
  maxScore: number | null;
  /** How many items of score exactly maxScore (in canonical order) come at or before the position. */
  offset: number;
  /**
   * The blog the position comes after: with it, the position is the keyset point
   * (maxScore, afterId) and `offset` is only a hint. null in the first position and in cursors
   * issued before ids were added, which mean "skip `offset` items of score maxScore".
   */
  afterId: number | null;
}

/** One item of an ordered feed: a blog id and its score (the blog's created_at in epoch ms). */
export interface ScoredId {
  id: number;
  score: number;
}

/** The position of the first page. */
export const START: FeedPosition = Object.freeze({ maxScore: null, offset: 0, afterId: null });

/**
 * Largest offset a cursor carries or is accepted with: ten full pages of one millisecond.
 *
 * With the blog id in the cursor the offset is only a hint: MySQL and SQLite read the keyset
 * (score, id) and ignore it, and the Redis inbox read checks that the member at `offset - 1`
 * is the cursor's blog before it uses it, and recounts the millisecond's members from the id
 * when it is not. So a bound costs no correctness: a page in a tie group deeper than this
 * carries the bound (cursorsForPage), and its next read recounts from the id. What the bound
 * stops is a forged offset making Redis walk that many members for nothing (an inbox holds
 * FEED_MAX_ITEMS, 800 by default).
 */
export const MAX_CURSOR_OFFSET = 1000;

/**
 * Largest score a cursor may carry: the largest epoch-ms a JavaScript Date can hold
 * (year 275760). Scores are blog creation times, so anything larger is forged.
 */
export const MAX_CURSOR_SCORE = 8_640_000_000_000_000;

export class InvalidCursorError extends Error {
  override name = 'InvalidCursorError';
}

export function encodeCursor(position: FeedPosition): string {
  if (position.maxScore === null) {
    throw new Error('the start position has no cursor; pass no `after` for the first page');
  }
  const id = position.afterId === null ? '' : `:${position.afterId}`;
  return Buffer.from(`${position.maxScore}:${position.offset}${id}`, 'utf8').toString('base64url');
}

/** A cursor as an error message quotes it: at most its first 40 characters. */
function shownCursor(cursor: string): string {
  return cursor.length > 40 ? `${cursor.slice(0, 40)}...` : cursor;
}

/** The text inside a cursor, matched against `format`; throws InvalidCursorError unless it matches. */
function cursorText(cursor: string, format: RegExp): RegExpExecArray {
  const invalid = () => new InvalidCursorError(`cursor "${shownCursor(cursor)}" is not a cursor this API returned`);
  if (cursor.length === 0 || cursor.length > 64 || !/^[A-Za-z0-9_-]+={0,2}$/.test(cursor)) throw invalid();
  const match = format.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw invalid();
  return match;
}

function checkTime(cursor: string, time: number): number {
  if (time > MAX_CURSOR_SCORE)
    throw new InvalidCursorError(`cursor "${shownCursor(cursor)}" holds an out-of-range time (${time})`);
  return time;
}

function checkId(cursor: string, id: number, what: 'blog id' | 'id'): number {
  if (id < 1 || id > Number.MAX_SAFE_INTEGER)
    throw new InvalidCursorError(`cursor "${shownCursor(cursor)}" holds an out-of-range ${what} (${id})`);
  return id;
}

/** Decodes and validates a client's cursor; throws InvalidCursorError naming what was wrong. */
export function decodeCursor(cursor: string): FeedPosition {
  const match = cursorText(cursor, /^(\d{1,16}):(\d{1,9})(?::(\d{1,16}))?$/);
  if (match[3] === undefined) {
    throw new InvalidCursorError(
      `cursor "${shownCursor(cursor)}" names no blog: it is a cursor of another list (followers, following, likers) or of an older version of this API; pass a cursor of this connection, or start again from the first page`,
    );
  }
  const maxScore = checkTime(cursor, Number(match[1]));
  const offset = Number(match[2]);
  if (offset > MAX_CURSOR_OFFSET) {
    throw new InvalidCursorError(
      `cursor "${shownCursor(cursor)}" holds an out-of-range offset (${offset} > ${MAX_CURSOR_OFFSET})`,
    );
  }
  return { maxScore, offset, afterId: checkId(cursor, Number(match[3]), 'blog id') };
}

/**
 * A position in a list ordered by (time, id), the keyset of lists that live only in SQL: a
 * user's followers or followees (ordered by when each follow was made, then by the other
 * user's id) and a blog's likers (by when each like was made). No offset: no Redis read needs
 * a hint, and the pair names one item exactly, so an insert or removal elsewhere in the list
 * cannot shift the next page.
 */
export interface KeysetPosition {
  /** The item's time in epoch ms (the follow's or like's created_at). */
  time: number;
  /** The item's id (the other user's), which breaks ties of `time`. */
  id: number;
}

/** base64url("<time>:<id>"): opaque to clients, and range-checked when it comes back. */
export function encodeKeysetCursor(position: KeysetPosition): string {
  return Buffer.from(`${position.time}:${position.id}`, 'utf8').toString('base64url');
}

/** Decodes and validates a client's keyset cursor; throws InvalidCursorError naming what was wrong. */
export function decodeKeysetCursor(cursor: string): KeysetPosition {
  const match = cursorText(cursor, /^(\d{1,16}):(\d{1,16})$/);
  return { time: checkTime(cursor, Number(match[1])), id: checkId(cursor, Number(match[2]), 'id') };
}

/** Decodes an optional `after` argument: no cursor means the first page. */
export function positionAfter(after: string | null | undefined): FeedPosition {
  return after === null || after === undefined ? START : decodeCursor(after);
}

/**
 * The position just after `items[i]`, for every i: the cursor of each edge.
 *
 * The keyset part is simply (items[i].score, items[i].id). The offset is the hint for Redis:
 * `items` are what the source returned for `from`, in canonical order. For the prefix ending at
 * item i with score s, let n be the number of items of score s in that prefix (they are its
 * tail, since the order is by score). The next position is (s, n), plus `from.offset` when s is
 * `from.maxScore`: those first `from.offset` items of score s were skipped before this page
 * began, so they count as already returned. Without that addition a page inside one tie group
 * would restart at the top of the group, and the scroll would loop.
 */
export function cursorsForPage(from: FeedPosition, items: readonly ScoredId[]): FeedPosition[] {
  const positions: FeedPosition[] = [];
  let runScore: number | null = null;
  let runLength = 0;
  for (const item of items) {
    if (item.score === runScore) {
      runLength += 1;
    } else {
      runScore = item.score;
      runLength = 1;
    }
    const carried = from.maxScore === item.score ? from.offset : 0;
    // Deeper than the bound, the hint stays at the bound: the id places the position (MAX_CURSOR_OFFSET).
    positions.push({
      maxScore: item.score,
      offset: Math.min(carried + runLength, MAX_CURSOR_OFFSET),
      afterId: item.id,
    });
  }
  return positions;
}

/** The canonical feed order: newest first, and within one millisecond the larger blog id first. */
export function compareCanonical(a: ScoredId, b: ScoredId): number {
  return b.score - a.score || b.id - a.id;
}

/** Whether `item` comes strictly after `position` in canonical order (is on a later page). */
export function isAfter(item: ScoredId, position: FeedPosition): boolean {
  if (position.maxScore === null) return true;
  if (item.score !== position.maxScore) return item.score < position.maxScore;
  // A legacy position cannot say which items of its tie group it covered: the caller skips them.
  return position.afterId === null || item.id < position.afterId;
}

/** Whether `item` comes strictly before `position` in canonical order (is newer: on a page above it). */
export function isBefore(item: ScoredId, position: FeedPosition): boolean {
  if (position.maxScore === null) return false;
  if (item.score !== position.maxScore) return item.score > position.maxScore;
  return position.afterId !== null && item.id > position.afterId;
}

/**
 * The cursor of each item of a page read upwards (newer than a cursor; `items` in canonical
 * order, newest first). The keyset part is exact; the offset hint counts the item's tie group
 * within the page only (what lies above the page in the same millisecond is not known), which
 * is at most the true count: the inbox read checks a hint before it uses it and recounts from
 * the id when it is wrong (src/feed/inbox.redis.ts), so a short hint costs no correctness.
 */
export function cursorsForNewerPage(items: readonly ScoredId[]): FeedPosition[] {
  return cursorsForPage(START, items);
}
