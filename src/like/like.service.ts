/** Likes: tb_blog_like rows with tb_blog.liked kept exact. */
import type { BlogService } from '../blog/blog.service';
import type { CacheWrites, HydrationCache } from '../cache/cache.service';
import type { Blog } from '../blog/blog.types';
import type { Database } from '../db/database';
import { notFound } from '../kernel/errors';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import { LikeStore } from './like.store';

export interface LikeServiceDeps {
  /** Runs the transactions. */
  db: Database;
  store: LikeStore;
  blogs: Pick<BlogService, 'findById'>;
  now: () => Date;
  /** The hydration cache's like sets, kept in the likes' commit order (NO_CACHE in the embedded mode). */
  cache: CacheWrites;
  /** Blog.likers' first pages from the like sets; null in the embedded mode. */
  hydration?: HydrationCache | null;
}

export class LikeService {
  private readonly db: Database;
  private readonly store: LikeStore;
  private readonly blogs: Pick<BlogService, 'findById'>;
  private readonly now: () => Date;
  private readonly cache: CacheWrites;
  private readonly hydration: HydrationCache | null;

  constructor(deps: LikeServiceDeps) {
    this.db = deps.db;
    this.store = deps.store;
    this.blogs = deps.blogs;
    this.now = deps.now;
    this.cache = deps.cache;
    this.hydration = deps.hydration ?? null;
  }

  /**
   * Idempotent: makes "viewer likes blog" true or false and returns the blog with its new count.
   *
   * Checking, then acting, without atomicity would let two concurrent clicks both see "not liked"
   * and count twice. So the primary key (blog_id, user_id) decides: INSERT IGNORE / DELETE
   * report whether the row really changed, and only then does the counter move, in the same
   * transaction. Concurrent calls serialise on the row lock, so the count stays exact.
   *
   * No read of the blog before: a blog that does not exist (or is deleted) is found out by the
   * transaction's count update, which rolls back the like row with it, or, when the row did not
   * change (nothing to count), by the read of the blog the call returns. Either way the answer is
   * NOT_FOUND and nothing is written, one statement cheaper for every like of a live blog.
   */
  async setLiked(viewerId: number, blogId: number, liked: boolean): Promise<Blog> {
    // One mark per attempt (a deadlock victim is run again): the last one committed, any earlier one rolled back.
    const marks: Array<string | null> = [];
    let committed = false;
    try {
      await this.db.transaction(async (sql) => {
        const at = this.now();
        if (!(await this.store.setRow(sql, viewerId, blogId, liked, at))) return;
        // Deleted, or never there: roll the like back.
        if (!(await this.store.adjustCount(sql, blogId, liked ? 1 : -1)))
          throw notFound(`blog ${blogId} does not exist`);
        // Under the blog row's lock (the UPDATE above), so the like set sees likes in commit order.
        marks.push(await this.cache.likeChanging(sql, blogId, viewerId, liked, at));
      });
      committed = true;
    } finally {
      await Promise.all(
        marks.map((mark, i) => this.cache.likeChanged(blogId, mark, committed && i === marks.length - 1)),
      );
    }
    const blog = await this.blogs.findById(blogId);
    if (!blog) throw notFound(`blog ${blogId} does not exist`);
    return blog;
  }

  /** Which of `blogIds` the viewer likes, in one statement. */
  likedAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>> {
    return this.store.likedAmong(viewerId, blogIds);
  }

  /**
   * Pages of blogs' likers (KeysetFetch.of: the blog), earliest like first, as the viewer (null:
   * anonymous) sees them: for an anonymous viewer, first pages from the hydration cache's like
   * sets where they are filled; the rest, and every page of a signed-in viewer (whose blocks hide
   * likers, which the like sets do not know), in one read (db/keyset.ts).
   */
  async likers(viewerId: number | null, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    const { hydration } = this;
    const cached: Array<KeysetPosition[] | null> = fetches.map(() => null);
    if (viewerId === null && hydration?.usable()) {
      try {
        const firsts = await Promise.all(
          fetches.map((fetch) =>
            fetch.after === null ? hydration.firstLikers(fetch.of, fetch.limit) : Promise.resolve(null),
          ),
        );
        firsts.forEach((page, i) => (cached[i] = page));
      } catch {
        // Redis failed: every page from MySQL.
        cached.fill(null);
      }
    }
    const missing = fetches.filter((_, i) => cached[i] === null);
    const read = missing.length > 0 ? await this.store.likers(viewerId, missing) : [];
    let next = 0;
    return cached.map((page) => page ?? read[next++]);
  }
}
