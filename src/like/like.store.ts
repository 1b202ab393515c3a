/** The SQL of likes (tb_blog_like) and the like counter on tb_blog. */
import type { Database, Sql } from '../db/database';

export class LikeStore {
  constructor(private readonly db: Database) {}

  /** Inserts or deletes the like row; whether it changed. */
  async setRow(sql: Sql, viewerId: number, blogId: number, liked: boolean, at: Date): Promise<boolean> {
    const change = liked
      ? await sql.write('INSERT IGNORE INTO tb_blog_like (blog_id, user_id, created_at) VALUES (?, ?, ?)', [blogId, viewerId, at])
      : await sql.write('DELETE FROM tb_blog_like WHERE blog_id = ? AND user_id = ?', [blogId, viewerId]);
    return change.affectedRows > 0;
  }

  /** Moves the live blog's counter by `delta`; false when the blog is not live. */
  async adjustCount(sql: Sql, blogId: number, delta: 1 | -1): Promise<boolean> {
    const counted = await sql.write('UPDATE tb_blog SET liked = liked + ? WHERE id = ? AND deleted_at IS NULL', [delta, blogId]);
    return counted.affectedRows > 0;
  }

  /** Which of `blogIds` the viewer likes, in one statement. */
  async likedAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>> {
    if (blogIds.length === 0) return new Set();
    const rows = await this.db
      .lagging()
      .select<{ blog_id: string }>('SELECT blog_id FROM tb_blog_like WHERE user_id = ? AND blog_id IN (?)', [viewerId, blogIds]);
    return new Set(rows.map((row) => Number(row.blog_id)));
  }
}
