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
 * Blogs whose authors a process keeps: the most recently seen first kept (each entry is two
 * numbers in a Map, about 80 bytes: some 8 MB at most). Feed pages show the newest blogs of
 * the people their readers follow, a set far smaller than this on the benchmark's 100,000-user
 * graph; past it, the least recently seen are forgotten.
 */
export const BLOG_AUTHORS_KEPT = 100_000;

export class BlogAuthors {
  private readonly authors = new Map<number, number>();

  constructor(private readonly capacity = BLOG_AUTHORS_KEPT) {}

  /** The distinct authors of these blogs, or null when any of them is unknown here. */
  of(blogIds: readonly number[]): number[] | null {
    const authors = new Set<number>();
    for (const id of blogIds) {
      const author = this.authors.get(id);
      if (author === undefined) return null;
      authors.add(author);
    }
    return [...authors];
  }

  /** Records the authors of blogs just read (a Map keeps insertion order: the oldest go first). */
  remember(blogs: ReadonlyArray<{ dbId: number; authorId: number }>): void {
    for (const { dbId, authorId } of blogs) {
      this.authors.delete(dbId);
      this.authors.set(dbId, authorId);
    }
    while (this.authors.size > this.capacity) this.authors.delete(this.authors.keys().next().value as number);
  }

  get size(): number {
    return this.authors.size;
  }
}
