/**
 * Who wrote each blog, as far as this process has seen: a bounded map from blog id to author id.
 *
 * A page's hydration (BlogService.forViewer) reads its blogs, then their authors and which of
 * them the viewer follows: two Redis round trips one after the other, because the authors are
 * known only once the blogs are read. A blog's author never changes, so a process that has seen a
 * blog can ask for its author in the same round trip as the blog itself, and most pages (whose
 * blogs other pages of the same process hydrated moments before) then cost one round trip fewer.
 * Every sequential round trip is a turn of a busy event loop to wait for, which is where a page's
 * tail latency comes from (docs/design.md, "A page's round trips").
 *
 * Nothing here can be stale: an entry is a fact that never changes. It is only ever incomplete,
 * and then the page reads the authors after the blogs, as it did without it.
 */

/**
 * Blogs whose authors a process keeps, at most (each entry is two numbers in a Map, about 80
 * bytes: some 8 MB). Feed pages show the newest blogs of the people their readers follow, a set
 * far smaller than this on the benchmark's 100,000-user graph; past it, the blogs not seen for
 * longest are forgotten, half of the capacity at a time (see BlogAuthors).
 */
export const BLOG_AUTHORS_KEPT = 100_000;

/**
 * Two generations of half the capacity each: blogs go into the young one (a blog of the old one
 * seen again moves there), and when the young one is full it becomes the old one and the old one
 * is dropped. Every operation is O(1). A single Map used as an LRU (delete and set again on each
 * sighting, evict its first key) is not: V8 leaves a hole for each delete until the table is
 * rebuilt, and the first key is found by walking over the holes before it.
 */
export class BlogAuthors {
  private young = new Map<number, number>();
  private old = new Map<number, number>();

  constructor(private readonly capacity = BLOG_AUTHORS_KEPT) {}

  /** The distinct authors of these blogs, or null when any of them is unknown here. */
  of(blogIds: readonly number[]): number[] | null {
    const authors = new Set<number>();
    for (const id of blogIds) {
      const author = this.young.get(id) ?? this.old.get(id);
      if (author === undefined) return null;
      authors.add(author);
    }
    return [...authors];
  }

  /** Records the authors of blogs just read. */
  remember(blogs: ReadonlyArray<{ dbId: number; authorId: number }>): void {
    for (const { dbId, authorId } of blogs) {
      if (this.young.has(dbId)) continue;
      this.young.set(dbId, authorId);
      if (this.young.size >= Math.max(1, Math.floor(this.capacity / 2))) {
        this.old = this.young;
        this.young = new Map();
      }
    }
  }

  /** Blogs known (an old one seen again counts in both generations until the old one goes). */
  get size(): number {
    return this.young.size + this.old.size;
  }
}
