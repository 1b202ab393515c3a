/** The SQL of the hydration cache: its debts (tb_cache_debt), entries a write could not invalidate in Redis. */
import type { Database, Sql } from '../db/database';

export type DebtKind = 'b' | 'u';

export interface Debt {
  id: number;
  kind: DebtKind;
  refId: number;
}

/** Debts read per statement while settling: a few round trips even after a long outage. */
export const DEBTS_PER_READ = 1000;

export class CacheStore {
  constructor(private readonly db: Database) {}

  /** Records, in the write's own transaction, that the cached copy of this blog or user must be dropped. */
  async addDebt(sql: Sql, kind: DebtKind, refId: number): Promise<void> {
    await sql.write('INSERT INTO tb_cache_debt (kind, ref_id) VALUES (?, ?)', [kind, refId]);
  }

  /** The oldest debts, on the primary (a replica may lack the newest). */
  async debts(): Promise<Debt[]> {
    const rows = await this.db.select<{ id: string | number; kind: DebtKind; ref_id: string | number }>(
      'SELECT id, kind, ref_id FROM tb_cache_debt ORDER BY id LIMIT ?',
      [DEBTS_PER_READ],
    );
    return rows.map((row) => ({ id: Number(row.id), kind: row.kind, refId: Number(row.ref_id) }));
  }

  async settled(ids: readonly number[]): Promise<void> {
    if (ids.length > 0) await this.db.write('DELETE FROM tb_cache_debt WHERE id IN (?)', [ids]);
  }
}
