/** Blogs: publishing, deleting, lookups and a user's own blogs page. */
import { DataSource } from 'typeorm';
import { inTransaction, select, Sql, write } from '../db/sql';
import { ScoredId } from '../kernel/pagination/cursor';
import { positionSql } from '../feed/feed.store';
import { fetchSize, PageRequest } from '../kernel/pagination/page';
import type { FeedService } from '../feed/feed.service';
import { FanoutService } from '../fanout/fanout.service';
import { badUserInput, forbidden, notFound } from '../kernel/errors';
import { checkText } from '../kernel/validation';
import { Blog, BLOG_COLUMNS, BlogRow, PublishBlogInput } from './blog.types';

/** Title length in characters: one line in a list view; also the VARCHAR(255) column. */
export const TITLE_MAX = 255;
/** Content length in characters: a long post, far below what the TEXT column holds in utf8mb4. */
export const CONTENT_MAX = 10_000;
/** At most 9 images per blog: the 3x3 grid the app shows. */
export const IMAGES_MAX = 9;
/** Image URL length in characters. */
export const IMAGE_URL_MAX = 512;

/** A blog item of a page: its position data plus the loaded blog. */
export interface BlogItem extends ScoredId {
  blog: Blog;
}

export function validatePublishInput(input: PublishBlogInput): void {
  checkText('title', input.title, { min: 1, max: TITLE_MAX, notBlank: true });
  checkText('content', input.content, { min: 1, max: CONTENT_MAX, notBlank: true });
  const images = input.images ?? [];
  if (images.length > IMAGES_MAX) {
    throw badUserInput(`images must hold at most ${IMAGES_MAX} URLs (got ${images.length})`, 'images');
  }
  images.forEach((image, i) => checkText(`images[${i}]`, image, { min: 1, max: IMAGE_URL_MAX, notBlank: true }));
}

export class BlogService {
  constructor(
    private readonly db: DataSource,
    private readonly fanout: FanoutService,
    /** Decides which blogs are fanned out, and tracks their delivery (the watermark). */
    private readonly feed: Pick<FeedService, 'decidePush' | 'deliveryStarted' | 'inInboxes'>,
    private readonly now: () => Date,
  ) {}

  /**
   * Saves the blog and its fan-out event in one transaction and returns. Delivery to the
   * followers' inboxes happens in the fan-out workers, so publishing costs the same at any
   * follower count, and the event survives a crash or a Redis outage (the outbox).
   */
  async publish(authorId: number, input: PublishBlogInput): Promise<Blog> {
    validatePublishInput(input);
    const { blog, taskId } = await inTransaction(this.db, async (sql) => {
      const pushed = await this.feed.decidePush(sql, authorId);
      const row: Omit<BlogRow, 'id'> = {
        user_id: authorId,
        title: input.title,
        content: input.content,
        images: JSON.stringify(input.images ?? []),
        liked: 0,
        // DATETIME(3) keeps the milliseconds of this Date, so the stored row equals this one.
        created_at: this.now(),
        pushed,
      };
      const result = await write(sql, 'INSERT INTO tb_blog (user_id, title, content, images, liked, created_at, pushed) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        row.user_id,
        row.title,
        row.content,
        row.images,
        row.liked,
        row.created_at,
        row.pushed,
      ]);
      const blog = Blog.fromRow({ ...row, id: result.insertId });
      if (!pushed) return { blog, taskId: null };
      const recorded = await this.fanout.recordDeliver(sql, blog);
      // The last step before the commit: from the moment the blog is visible in MySQL, readers
      // know that its delivery is in flight (the fan-out watermark).
      await this.feed.deliveryStarted(recorded, blog.score);
      return { blog, taskId: recorded };
    });
    if (taskId !== null) this.fanout.enqueue(taskId);
    return blog;
  }

  /** Soft-deletes the viewer's own blog with its retract event; it leaves every inbox right after. */
  async delete(viewerId: number, blogId: number): Promise<void> {
    const blog = await this.findById(blogId);
    if (!blog) throw notFound(`blog ${blogId} does not exist`);
    if (blog.authorId !== viewerId) throw forbidden('only the author may delete a blog');
    const taskId = await inTransaction(this.db, async (sql) => {
      const result = await write(sql, 'UPDATE tb_blog SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL', [this.now(), blogId]);
      if (result.affectedRows === 0) throw notFound(`blog ${blogId} does not exist`);
      // A blog that no inbox holds (hybrid: a big author's) needs no walk over the followers.
      return this.feed.inInboxes(blog) ? this.fanout.recordRetract(sql, blog) : null;
    });
    if (taskId !== null) this.fanout.enqueue(taskId);
  }

  /** Live (not deleted) blogs by id, in one statement. */
  async findByIds(ids: readonly number[], sql: Sql = this.db): Promise<Map<number, Blog>> {
    if (ids.length === 0) return new Map();
    const rows = await select<BlogRow>(sql, `SELECT ${BLOG_COLUMNS} FROM tb_blog WHERE id IN (?) AND deleted_at IS NULL`, [ids]);
    return new Map(rows.map((row) => [Number(row.id), Blog.fromRow(row)]));
  }

  async findById(id: number, sql: Sql = this.db): Promise<Blog | null> {
    return (await this.findByIds([id], sql)).get(id) ?? null;
  }

  /**
   * A page of one user's own blogs, newest first, with the same cursor as the feed: one
   * statement on the (user_id, created_at, id) index.
   */
  async pageOfAuthor(authorId: number, request: PageRequest): Promise<BlogItem[]> {
    const position = positionSql(request.from);
    const rows = await select<BlogRow>(
      this.db,
      `SELECT ${BLOG_COLUMNS} FROM tb_blog
       WHERE user_id = ? AND deleted_at IS NULL ${position.where}
       ORDER BY created_at DESC, id DESC LIMIT ?, ?`,
      [authorId, ...position.params, position.skip, fetchSize(request)],
    );
    return rows.map((row) => {
      const blog = Blog.fromRow(row);
      return { id: blog.dbId, score: blog.score, blog };
    });
  }
}
