/**
 * The statement a pull page was before it read per followee, verbatim: the reference the pull
 * tests compare FeedStore.feedPage with (same pages, fewer rows read).
 */
import type { Database } from '../../src/db/database';
import { positionSql } from '../../src/feed/feed.store';
import type { FeedPosition, ScoredId } from '../../src/kernel/pagination/cursor';

export async function joinPage(
  db: Database,
  readerId: number,
  from: FeedPosition,
  limit: number,
  minScore: number | null = null,
): Promise<ScoredId[]> {
  if (limit === 0) return [];
  const position = positionSql(from, 'b');
  const rows = await db.select<{ id: string; created_at: Date }>(
    `SELECT b.id, b.created_at FROM tb_follow f JOIN tb_blog b ON b.user_id = f.follow_user_id
     WHERE f.user_id = ? AND b.deleted_at IS NULL ${position.where} ${minScore === null ? '' : 'AND b.created_at >= ?'}
     ORDER BY b.created_at DESC, b.id DESC LIMIT ?, ?`,
    [readerId, ...position.params, ...(minScore === null ? [] : [new Date(minScore)]), position.skip, limit],
  );
  return rows.map((row) => ({ id: Number(row.id), score: row.created_at.getTime() }));
}
