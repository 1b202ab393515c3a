/** The SQL of blogs (tb_blog). */
import type { Database, Sql } from '../db/database';
import { positionSql } from '../feed/feed.store';
import type { FeedPosition } from '../kernel/pagination/cursor';
import { Blog, BlogRow } from './blog.types';

/** The columns of BlogRow, for SELECTs. */
const BLOG_COLUMNS = 'id, user_id, title, content, images, liked, created_at, pushed';

export class BlogStore {
  constructor(private readonly db: Database) {}

  /** Inserts a blog row; its new id. */
  async insert(sql: Sql, row: Omit<BlogRow, 'id'>): Promise<number> {
    const result = await sql.write('INSERT INTO tb_blog (user_id, title, content, images, liked, created_at, pushed) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      row.user_id,
      row.title,
      row.content,
      row.images,
      row.liked,
      row.created_at,
      row.pushed,
    ]);
    return Number(result.insertId);
  }

  /** Marks a live blog deleted; false when it was not live. */
  async softDelete(sql: Sql, blogId: number, at: Date): Promise<boolean> {
    const result = await sql.write('UPDATE tb_blog SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL', [at, blogId]);
    return result.affectedRows > 0;
  }

  /** Live (not deleted) blogs by id, in one statement. */
  async findByIds(ids: readonly number[], sql: Sql = this.db): Promise<Map<number, Blog>> {
    if (ids.length === 0) return new Map();
    const rows = await sql.select<BlogRow>(`SELECT ${BLOG_COLUMNS} FROM tb_blog WHERE id IN (?) AND deleted_at IS NULL`, [ids]);
    return new Map(rows.map((row) => [Number(row.id), Blog.fromRow(row)]));
  }

  /**
   * The first `limit` live blogs of one author after `from`, newest first, with the same cursor
   * as the feed: one statement on the (user_id, created_at, id) index.
   */
  async pageOfAuthor(authorId: number, from: FeedPosition, limit: number): Promise<Blog[]> {
    const position = positionSql(from);
    const rows = await this.db.select<BlogRow>(
      `SELECT ${BLOG_COLUMNS} FROM tb_blog
       WHERE user_id = ? AND deleted_at IS NULL ${position.where}
       ORDER BY created_at DESC, id DESC LIMIT ?, ?`,
      [authorId, ...position.params, position.skip, limit],
    );
    return rows.map((row) => Blog.fromRow(row));
  }
}
