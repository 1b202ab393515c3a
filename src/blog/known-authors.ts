/**
 * Who wrote the blogs this process has hydrated: a blog's author never changes, so what was read
 * once stays true, with no invalidation (a deleted blog keeps its author; the cache and MySQL say
 * it is gone).
 *
 * A page's hydration uses it to guess the page's authors before its blogs are read, and sends the
 * authors' reads and the viewer's follow checks with the blogs' read, in one round trip, instead
 * of a second round trip once the blogs name their authors (BlogService.hydrate). At low
 * concurrency each Redis round trip costs the API process about 0.1-0.2 ms of CPU (the socket
 * write, the wake-up, the reply's callback), as much as the rest of a page's Redis work.
 *
 * Per process and bounded: past the capacity, the blogs remembered first are forgotten first. An
 * id never remembered (a new blog, a forgotten one) is simply not guessed: its author is read
 * after its blog, as without this.
 */

/** Blogs whose author one process remembers: a Map entry of two small integers is about 50 bytes, so 5 MB. */
export const KNOWN_AUTHORS_KEPT = 100_000;

export class KnownAuthors {
  private readonly authorOf = new Map<number, number>();

  constructor(private readonly capacity = KNOWN_AUTHORS_KEPT) {}

  /** The distinct authors of those of `blogIds` this process has seen, in the order of `blogIds`. */
  guess(blogIds: readonly number[]): number[] {
    const authors = new Set<number>();
    for (const blogId of blogIds) {
      const authorId = this.authorOf.get(blogId);
      if (authorId !== undefined) authors.add(authorId);
    }
    return [...authors];
  }

  /** Remembers the authors of these blogs. */
  remember(blogs: ReadonlyArray<{ dbId: number; authorId: number }>): void {
    for (const blog of blogs) {
      if (this.authorOf.has(blog.dbId)) continue;
      this.authorOf.set(blog.dbId, blog.authorId);
      // A Map iterates in insertion order: its first key is the one remembered first.
      if (this.authorOf.size > this.capacity) this.authorOf.delete(this.authorOf.keys().next().value as number);
    }
  }

  get size(): number {
    return this.authorOf.size;
  }
}
