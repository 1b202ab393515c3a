/**
 * The hybrid model's pulled blogs, kept between pages: for each big author, the newest of their
 * blogs that were not fanned out, so that a page merges them from this process's memory instead
 * of reading MySQL (a page in the steady state runs no SQL statement). Pure: no I/O; the
 * service reads the tokens and fills the lists.
 *
 * A list is right while the author's pulled-blog token has not changed. The token lives in Redis
 * (pulled:<authorId>, redis/keys.ts), stamped with the Redis generation like every inbox, and is
 * replaced around each change of the author's not-fanned-out blogs, by the process that makes it:
 * - 'changing' just before a publish of such a blog commits (or a delete of one): the token is
 *   unsettled, and no list of the author is kept or trusted until
 * - 'changed' just after the commit (or the rollback): a new token; lists kept before it are
 *   never trusted again.
 * A list is stored with the token read before the statement that filled it: a change committed
 * meanwhile leaves a token that no longer matches, and the next page reads the author again,
 * which is only one statement too many. It is the rule of the kept lists of big followees
 * (big-followees.ts), per author instead of one token for everyone: a big author's publish makes
 * every process read that author again once, not every reader's list.
 *
 * What a change of token does not cover, nothing needs: a blog deleted while a kept list still
 * holds it is hidden when the page is hydrated (graphql/blog-connection.ts), as an inbox's copy
 * is until its retract; the token is replaced on deletes only so that such lists do not linger.
 * Redis lost, or restarted from an older dump: tokens of another generation are not trusted
 * (none are until a reader sets one), and the service forgets every list when it catches up.
 *
 * Per process and bounded: PULLED_BLOGS_KEPT blogs per author, PULLED_LISTS_KEPT authors, the
 * least recently used forgotten first, none trusted past PULLED_LIST_TRUST_MS (a rolling deploy
 * from a version that did not replace tokens). A page that reads deeper than a list goes (an author with
 * more blogs than it keeps, below its last one) reads that author from MySQL, as before.
 */
import { FeedPosition, isAfter, ScoredId } from '../kernel/pagination/cursor';

/**
 * Blogs kept per big author: a page of 10 reads 10 per author from its position (its first
 * page the newest 10), so 64 serve the first pages and a reader scrolling a few pages down
 * while the author posts; deeper pages read MySQL.
 */
export const PULLED_BLOGS_KEPT = 64;

/**
 * How long a list is trusted after it was read, whatever its token says. This version replaces
 * tokens at every publish and delete of a not-fanned-out blog; the version before it did not.
 * During a rolling deploy from it, a blog that an old process publishes leaves the token as it
 * was, and would be missing from the new processes' kept lists until its author published again
 * through a new one: with this bound it shows within 10 s. It costs one statement per big author
 * and process every 10 s, whatever the number of readers.
 */
export const PULLED_LIST_TRUST_MS = 10_000;

/**
 * Lists one page reads from MySQL at most (one statement each, sent together). A reader who
 * follows thousands of big authors would otherwise start thousands of statements on a page of a
 * cold process, or every PULLED_LIST_TRUST_MS; the authors past this many are read in the page's
 * one statement, as without kept lists, and their lists are filled by the next pages.
 */
export const PULLED_FILLS_PER_PAGE = 16;

/**
 * Authors whose list one process keeps. Big authors are few by definition (BIG_V_FOLLOWERS
 * followers or more): 10,000 lists of 64 ids are about 30 MB at most.
 */
export const PULLED_LISTS_KEPT = 10_000;

export interface PulledList {
  /** The author's newest not-fanned-out live blogs, in canonical order (at most PULLED_BLOGS_KEPT). */
  newest: readonly ScoredId[];
  /** Whether those are all of them (MySQL returned fewer than it was asked for). */
  complete: boolean;
}

interface KeptList extends PulledList {
  token: string;
  /** When it was kept (the process's monotonic clock, ms). */
  keptAt: number;
}

export class PulledBlogLists {
  private readonly lists = new Map<number, KeptList>();

  constructor(
    private readonly capacity = PULLED_LISTS_KEPT,
    private readonly trustMs = PULLED_LIST_TRUST_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The author's list if it was kept under this token less than PULLED_LIST_TRUST_MS ago (null:
   * none, too old, or the token changed or is not settled).
   */
  get(authorId: number, token: string | null): PulledList | null {
    const kept = this.lists.get(authorId);
    if (!kept || token === null || kept.token !== token) return null;
    if (this.now() - kept.keptAt >= this.trustMs) {
      this.lists.delete(authorId);
      return null;
    }
    // Most recently used last: a Map iterates in insertion order.
    this.lists.delete(authorId);
    this.lists.set(authorId, kept);
    return kept;
  }

  /** Keeps a list read after this token was read (nothing without a settled token). */
  set(authorId: number, token: string | null, list: PulledList): void {
    if (token === null) return;
    this.lists.delete(authorId);
    this.lists.set(authorId, { token, newest: list.newest, complete: list.complete, keptAt: this.now() });
    if (this.lists.size > this.capacity) this.lists.delete(this.lists.keys().next().value as number);
  }

  clear(): void {
    this.lists.clear();
  }

  get size(): number {
    return this.lists.size;
  }
}

/**
 * What FeedStore.pulledBlogs answers for this author alone (the first `limit` blogs after `from`,
 * a legacy position's offset ignored as there), when the list can say; null when the list stops
 * above them (it is not complete and holds fewer than `limit` after `from`).
 */
export function pulledAfter(list: PulledList, from: FeedPosition, limit: number): ScoredId[] | null {
  const position = { ...from, offset: 0 };
  const after = list.newest.filter((item) => isAfter(item, position));
  if (after.length >= limit) return after.slice(0, limit);
  return list.complete ? after : null;
}
