/** Likes: tb_blog_like rows with tb_blog.liked kept exact. */
import type { BlogService } from '../blog/blog.service';
import type { Blog } from '../blog/blog.types';
import type { Database } from '../db/database';
import { notFound } from '../kernel/errors';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import { LikeStore } from './like.store';

export class LikeService {
  constructor(
    /** Runs the transactions. */
    private readonly db: Database,
    private readonly store: LikeStore,
    private readonly blogs: Pick<BlogService, 'findById'>,
    private readonly now: () => Date,
  ) {}

  /**
   * Idempotent: makes "viewer likes blog" true or false and returns the blog with its new count.
   *
   * Checking, then acting, without atomicity would let two concurrent clicks both see "not liked"
   * and count twice. So the primary key (blog_id, user_id) decides: INSERT IGNORE / DELETE
   * report whether the row really changed, and only then does the counter move, in the same
   * transaction. Concurrent calls serialise on the row lock, so the count stays exact.
   */
  async setLiked(viewerId: number, blogId: number, liked: boolean): Promise<Blog> {
    if (!(await this.blogs.findById(blogId))) throw notFound(`blog ${blogId} does not exist`);
    await this.db.transaction(async (sql) => {
      if (!(await this.store.setRow(sql, viewerId, blogId, liked, this.now()))) return;
      // Deleted between the check above and this transaction: roll the like back.
      if (!(await this.store.adjustCount(sql, blogId, liked ? 1 : -1))) throw notFound(`blog ${blogId} does not exist`);
    });
    const blog = await this.blogs.findById(blogId);
    if (!blog) throw notFound(`blog ${blogId} does not exist`);
    return blog;
  }

  /** Which of `blogIds` the viewer likes, in one statement. */
  likedAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>> {
    return this.store.likedAmong(viewerId, blogIds);
  }

  /** Pages of blogs' likers (KeysetFetch.of: the blog), earliest like first, as the viewer (null: anonymous) sees them, all in one read (db/keyset.ts). */
  likers(viewerId: number | null, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    return this.store.likers(viewerId, fetches);
  }
}
