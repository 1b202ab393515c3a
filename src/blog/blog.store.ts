/** The SQL of blogs (tb_blog). */
import type { Database, Sql } from '../db/database';
import { positionSql } from '../feed/feed.store';
import type { FeedPosition, ScoredId } from '../kernel/pagination/cursor';
import { User, UserRow } from '../user/user.types';
import { Blog, BlogRow, KeyedBlogRow } from './blog.types';

/** What a viewer sees of a page of blogs: the live blogs, their authors, and the viewer's likes and follows among them. */
export interface BlogsForViewer {
  blogs: Blog[];
  authors: User[];
  /** Ids of the blogs the viewer likes. */
  liked: Set<number>;
  /** Ids of the authors the viewer follows; null when only MySQL can say (the loader asks it). */
  followed: Set<number> | null;
}

type BlogForViewerRow = BlogRow & {
  nick_name: string;
  icon: string | null;
  follower_count: number;
  following_count: number;
  viewer_likes: number | string;
  viewer_follows: number | string;
};

/** The columns of BlogRow, for SELECTs. */
const BLOG_COLUMNS = 'id, user_id, title, content, images, liked, created_at, pushed, edited_at';

export class BlogStore {
  constructor(private readonly db: Database) {}

  /**
   * Inserts a blog row; its new id. With an idempotency key, a second row of the same author and
   * key fails with a duplicate-key error (uq_blog_user_idempotency): after the first commits,
   * or at once when it has.
   */
  async insert(sql: Sql, row: Omit<BlogRow, 'id'>, idempotencyKey: string | null = null): Promise<number> {
    const result = await sql.write(
      'INSERT INTO tb_blog (user_id, title, content, images, liked, created_at, pushed, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [row.user_id, row.title, row.content, row.images, row.liked, row.created_at, row.pushed, idempotencyKey],
    );
    return Number(result.insertId);
  }

  /** The author's blog published with this idempotency key, deleted or not; from the primary, which has every commit. */
  async findByIdempotencyKey(authorId: number, idempotencyKey: string): Promise<KeyedBlogRow | null> {
    const [row] = await this.db.select<KeyedBlogRow>(
      `SELECT ${BLOG_COLUMNS}, deleted_at FROM tb_blog WHERE user_id = ? AND idempotency_key = ?`,
      [authorId, idempotencyKey],
    );
    return row ?? null;
  }

  /** Marks a live blog deleted; false when it was not live. */
  async softDelete(sql: Sql, blogId: number, at: Date): Promise<boolean> {
    const result = await sql.write('UPDATE tb_blog SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL', [
      at,
      blogId,
    ]);
    return result.affectedRows > 0;
  }

  /** Sets the edited fields of a live blog and its edited_at; false when it is not live. */
  async update(
    sql: Sql,
    blogId: number,
    change: { title: string; content: string; images: string },
    at: Date,
  ): Promise<boolean> {
    const result = await sql.write(
      'UPDATE tb_blog SET title = ?, content = ?, images = ?, edited_at = ? WHERE id = ? AND deleted_at IS NULL',
      [change.title, change.content, change.images, at, blogId],
    );
    return result.affectedRows > 0;
  }

  /** What the hydration cache is filled from: the rows of these blogs, deleted ones too, from the primary (a replica may lag). */
  async rowsForCache(ids: readonly number[]): Promise<KeyedBlogRow[]> {
    if (ids.length === 0) return [];
    return this.db.select<KeyedBlogRow>(`SELECT ${BLOG_COLUMNS}, deleted_at FROM tb_blog WHERE id IN (?)`, [ids]);
  }

  /** Every like of these blogs, from the primary: the like sets of the hydration cache. */
  async likesForCache(ids: readonly number[]): Promise<Array<{ blogId: number; userId: number; at: Date }>> {
    if (ids.length === 0) return [];
    const rows = await this.db.select<{ blog_id: string | number; user_id: string | number; created_at: Date }>(
      'SELECT blog_id, user_id, created_at FROM tb_blog_like WHERE blog_id IN (?)',
      [ids],
    );
    return rows.map((row) => ({ blogId: Number(row.blog_id), userId: Number(row.user_id), at: row.created_at }));
  }

  /** Live (not deleted) blogs by id, in one statement; from a replica unless given `sql` (a transaction's). */
  async findByIds(ids: readonly number[], sql: Sql = this.db.lagging()): Promise<Map<number, Blog>> {
    if (ids.length === 0) return new Map();
    const rows = await sql.select<BlogRow>(
      `SELECT ${BLOG_COLUMNS} FROM tb_blog WHERE id IN (?) AND deleted_at IS NULL`,
      [ids],
    );
    return new Map(rows.map((row) => [Number(row.id), Blog.fromRow(row)]));
  }

  /**
   * A page's blogs with everything a feed item shows, in one statement: each live blog, its
   * author, and whether the viewer likes it and follows its author (each an EXISTS on a primary
   * key). A feed page would otherwise cost four statements through the loaders. An anonymous
   * viewer (null) likes and follows nothing: its EXISTS compare with NULL and are false.
   */
  async forViewer(viewerId: number | null, ids: readonly number[]): Promise<BlogsForViewer> {
    if (ids.length === 0) return { blogs: [], authors: [], liked: new Set(), followed: new Set() };
    const lagging = this.db.lagging();
    let rows = await this.viewerRows(lagging, viewerId, ids);
    if (lagging !== this.db && rows.length < ids.length) {
      // A replica lags behind the newest blogs, which the page found on the primary (a blog whose
      // fan-out is in flight): those it lacks are read from the primary.
      const found = new Set(rows.map((row) => Number(row.id)));
      rows = rows.concat(
        await this.viewerRows(
          this.db,
          viewerId,
          ids.filter((id) => !found.has(id)),
        ),
      );
    }
    const authors = new Map<number, User>();
    const followed = new Set<number>();
    const result: BlogsForViewer = { blogs: [], authors: [], liked: new Set(), followed };
    for (const row of rows) {
      const blog = Blog.fromRow(row);
      result.blogs.push(blog);
      const author: UserRow = {
        id: row.user_id,
        nick_name: row.nick_name,
        icon: row.icon,
        follower_count: row.follower_count,
        following_count: row.following_count,
      };
      if (!authors.has(blog.authorId)) authors.set(blog.authorId, User.fromRow(author));
      if (Number(row.viewer_likes) === 1) result.liked.add(blog.dbId);
      if (Number(row.viewer_follows) === 1) followed.add(blog.authorId);
    }
    result.authors = [...authors.values()];
    return result;
  }

  private viewerRows(sql: Sql, viewerId: number | null, ids: readonly number[]): Promise<BlogForViewerRow[]> {
    return sql.select<BlogForViewerRow>(
      `SELECT b.id, b.user_id, b.title, b.content, b.images, b.liked, b.created_at, b.pushed, b.edited_at,
         u.nick_name, u.icon, u.follower_count, u.following_count,
         EXISTS(SELECT 1 FROM tb_blog_like l WHERE l.blog_id = b.id AND l.user_id = ?) AS viewer_likes,
         EXISTS(SELECT 1 FROM tb_follow f WHERE f.user_id = ? AND f.follow_user_id = b.user_id) AS viewer_follows
       FROM tb_blog b JOIN tb_user u ON u.id = b.user_id
       WHERE b.id IN (?) AND b.deleted_at IS NULL`,
      [viewerId, viewerId, ids],
    );
  }

  /**
   * The first `limit` live blogs of one author after `from`, newest first, with the same cursor
   * as the feed: their ids and scores only, one statement that the (user_id, deleted_at,
   * created_at, id) index answers alone. The blogs themselves come from the hydration cache
   * (BlogService.forViewer), as a feed page's do.
   */
  async pageOfAuthor(authorId: number, from: FeedPosition, limit: number): Promise<ScoredId[]> {
    const position = positionSql(from);
    const rows = await this.db.lagging().select<{ id: string; created_at: Date }>(
      `SELECT id, created_at FROM tb_blog
       WHERE user_id = ? AND deleted_at IS NULL ${position.where}
       ORDER BY created_at DESC, id DESC LIMIT ?, ?`,
      [authorId, ...position.params, position.skip, limit],
    );
    return rows.map((row) => ({ id: Number(row.id), score: row.created_at.getTime() }));
  }
}
