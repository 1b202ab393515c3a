/** The SQL of likes (tb_blog_like) and the like counter on tb_blog. */
import type { Database, Sql } from '../db/database';
import { KeysetList, selectKeysetPages } from '../db/keyset';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import { notBlockedWithViewer } from '../user/user.store';

/** A blog's likers, earliest like first, on ix_like_blog_created (blog_id, created_at, user_id). */
const LIKERS: KeysetList = {
  source: 'tb_blog_like l WHERE l.blog_id = ?',
  time: 'l.created_at',
  id: 'l.user_id',
  order: 'ASC',
};

/** The same as a signed-in viewer sees it: without the users the viewer blocked or was blocked by (two more `?`: the viewer). */
const LIKERS_SEEN: KeysetList = { ...LIKERS, source: `${LIKERS.source} AND ${notBlockedWithViewer('l.user_id')}` };

export class LikeStore {
  constructor(private readonly db: Database) {}

  /** Inserts or deletes the like row; whether it changed. */
  async setRow(sql: Sql, viewerId: number, blogId: number, liked: boolean, at: Date): Promise<boolean> {
    const change = liked
      ? await sql.write('INSERT IGNORE INTO tb_blog_like (blog_id, user_id, created_at) VALUES (?, ?, ?)', [
          blogId,
          viewerId,
          at,
        ])
      : await sql.write('DELETE FROM tb_blog_like WHERE blog_id = ? AND user_id = ?', [blogId, viewerId]);
    return change.affectedRows > 0;
  }

  /** Moves the live blog's counter by `delta`; false when the blog is not live. */
  async adjustCount(sql: Sql, blogId: number, delta: 1 | -1): Promise<boolean> {
    const counted = await sql.write('UPDATE tb_blog SET liked = liked + ? WHERE id = ? AND deleted_at IS NULL', [
      delta,
      blogId,
    ]);
    return counted.affectedRows > 0;
  }

  /** Which of `blogIds` the viewer likes, in one statement. */
  async likedAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>> {
    if (blogIds.length === 0) return new Set();
    const rows = await this.db
      .lagging()
      .select<{ blog_id: string }>('SELECT blog_id FROM tb_blog_like WHERE user_id = ? AND blog_id IN (?)', [
        viewerId,
        blogIds,
      ]);
    return new Set(rows.map((row) => Number(row.blog_id)));
  }

  /**
   * Pages of blogs' likers (KeysetFetch.of: the blog), earliest like first, as `viewerId` sees
   * them (null: anonymous); one statement per MAX_PAGES_PER_STATEMENT pages.
   */
  likers(viewerId: number | null, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]> {
    if (viewerId === null) return selectKeysetPages(this.db, LIKERS, fetches, (fetch) => [fetch.of]);
    return selectKeysetPages(this.db, LIKERS_SEEN, fetches, (fetch) => [fetch.of, viewerId, viewerId]);
  }
}
