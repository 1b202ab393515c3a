/** Likes: tb_blog_like rows with tb_blog.liked kept exact. */
import { DataSource } from 'typeorm';
import { BlogService } from '../blog/blog.service';
import { Blog } from '../blog/blog.types';
import { inTransaction, select, write } from '../db/sql';
import { notFound } from '../kernel/errors';

export class LikeService {
  constructor(
    private readonly db: DataSource,
    private readonly blogs: BlogService,
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
    await inTransaction(this.db, async (sql) => {
      const change = liked
        ? await write(sql, 'INSERT IGNORE INTO tb_blog_like (blog_id, user_id, created_at) VALUES (?, ?, ?)', [blogId, viewerId, this.now()])
        : await write(sql, 'DELETE FROM tb_blog_like WHERE blog_id = ? AND user_id = ?', [blogId, viewerId]);
      if (change.affectedRows === 0) return;
      const counted = await write(sql, 'UPDATE tb_blog SET liked = liked + ? WHERE id = ? AND deleted_at IS NULL', [liked ? 1 : -1, blogId]);
      // Deleted between the check above and this transaction: roll the like back.
      if (counted.affectedRows === 0) throw notFound(`blog ${blogId} does not exist`);
    });
    const blog = await this.blogs.findById(blogId);
    if (!blog) throw notFound(`blog ${blogId} does not exist`);
    return blog;
  }

  /** Which of `blogIds` the viewer likes, in one statement. */
  async likedAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>> {
    if (blogIds.length === 0) return new Set();
    const rows = await select<{ blog_id: string }>(this.db, 'SELECT blog_id FROM tb_blog_like WHERE user_id = ? AND blog_id IN (?)', [viewerId, blogIds]);
    return new Set(rows.map((row) => Number(row.blog_id)));
  }
}
