/**
 * The hybrid model's list of a reader's big followees (the authors whose blogs the reader's page
 * pulls from MySQL), kept between pages so that a page does not query it.
 *
 * A list is right while two things have not changed, and every inbox read returns both in the
 * same Redis round trip as the page (feed/inbox.ts):
 * - the reader's follow version: every follow or unfollow of the reader raises it, so a list
 *   read at version v is the list of every later page at version v;
 * - the big-author generation: replaced when an author's first not-fanned-out blog commits,
 *   the only way an author joins anyone's list without the reader doing anything. Just before
 *   that commit it is unsettled (no list is kept or trusted), just after settled again: a list
 *   read before the commit cannot be kept past it.
 * A list is stored with the follow version read in the same MySQL statement as the list, and the
 * generation read before that statement: a generation replaced meanwhile makes the next page
 * read the list again, which is only one query too many.
 *
 * Per process and bounded: the least recently used readers are forgotten first.
 */

import { UNSETTLED } from './inbox';

/** Readers whose list one process keeps: 100,000 lists of a few ids each are a few MB. */
export const BIG_FOLLOWEE_LISTS_KEPT = 100_000;

interface KeptList {
  version: number;
  generation: string;
  authorIds: readonly number[];
}

export class BigFolloweeLists {
  private readonly lists = new Map<number, KeptList>();

  constructor(private readonly capacity = BIG_FOLLOWEE_LISTS_KEPT) {}

  /** The reader's list if it was kept at this follow version and generation. */
  get(readerId: number, version: number, generation: string | null): readonly number[] | null {
    const kept = this.lists.get(readerId);
    if (!kept || !settled(generation) || kept.version !== version || kept.generation !== generation) return null;
    // Most recently used last: a Map iterates in insertion order.
    this.lists.delete(readerId);
    this.lists.set(readerId, kept);
    return kept.authorIds;
  }

  /**
   * The reader's kept list whatever its version and generation, without touching its recency: a
   * guess of the next page's list, whose pulled-blog tokens that page asks for together with its
   * inbox read (FeedService.entriesFromInbox). Only `get` says whether the guess was right.
   */
  peek(readerId: number): readonly number[] | null {
    return this.lists.get(readerId)?.authorIds ?? null;
  }

  /** Keeps a list read at this follow version, after this generation was read. */
  set(readerId: number, version: number, generation: string | null, authorIds: readonly number[]): void {
    if (!settled(generation)) return;
    this.lists.delete(readerId);
    this.lists.set(readerId, { version, generation, authorIds });
    if (this.lists.size > this.capacity) this.lists.delete(this.lists.keys().next().value as number);
  }

  clear(): void {
    this.lists.clear();
  }

  get size(): number {
    return this.lists.size;
  }
}

/** No list is kept or trusted without a generation, or while an author's change is committing. */
function settled(generation: string | null): generation is string {
  return generation !== null && !generation.startsWith(UNSETTLED);
}
