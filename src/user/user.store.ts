/** The SQL of users (tb_user). */
import type { Database, Sql } from '../db/database';
import { User, UserRow } from './user.types';

/**
 * The condition that the user in `column` and the viewer (the two `?`, both the viewer's id) have
 * not blocked each other: two index dives per row (tb_user_block's primary key, ix_block_blocked).
 * Lists shown to a signed-in viewer (followers, followees, common follows, likers, a search) leave
 * such users out; the page's index range scan goes on until it has its rows.
 */
export function notBlockedWithViewer(column: string): string {
  return (
    `NOT EXISTS (SELECT 1 FROM tb_user_block bk WHERE bk.user_id = ? AND bk.blocked_user_id = ${column}) ` +
    `AND NOT EXISTS (SELECT 1 FROM tb_user_block bd WHERE bd.blocked_user_id = ? AND bd.user_id = ${column})`
  );
}

/** What a login checks: the user, their password hash, and their token version (auth/auth.sessions.ts). */
export interface Credentials {
  user: User;
  passwordHash: string;
  tokenVersion: number;
}

/** The columns of UserRow, for SELECTs. */
const USER_COLUMNS = 'id, nick_name, icon, follower_count, following_count';

/**
 * One page of a search (user.search.ts): the keys in [from, below), whose length is one of
 * `lengths` (ascending, none shorter than `from`), after the position `after`, in the order
 * (nick_len, nick_key), at most `limit` of them.
 */
export interface SearchPageQuery {
  from: string;
  below: string | null;
  lengths: readonly number[];
  after: { length: number; key: string } | null;
  limit: number;
  /** The signed-in viewer, whose blocks (either way) leave users out; null: anonymous. */
  viewerId?: number | null;
}

export class UserStore {
  constructor(private readonly db: Database) {}

  /** Users by database id, in one statement; missing ids are absent from the map. From a replica unless given `sql`. */
  async findByIds(ids: readonly number[], sql: Sql = this.db.lagging()): Promise<Map<number, User>> {
    if (ids.length === 0) return new Map();
    const rows = await sql.select<UserRow>(`SELECT ${USER_COLUMNS} FROM tb_user WHERE id IN (?)`, [ids]);
    return new Map(rows.map((row) => [Number(row.id), User.fromRow(row)]));
  }

  /**
   * Users by database id, as findByIds, and which of them `viewerId` follows, in the same
   * statement (an index probe of tb_follow's unique pair per row). A profile asks for both: read
   * apart, the follow flag was a statement of its own, a third of a profile page's SQL (bench:mixed).
   */
  async findByIdsWithFollowed(
    ids: readonly number[],
    viewerId: number,
    sql: Sql = this.db.lagging(),
  ): Promise<{ users: Map<number, User>; followed: Set<number> }> {
    if (ids.length === 0) return { users: new Map(), followed: new Set() };
    const rows = await sql.select<UserRow & { followed: number | string }>(
      `SELECT ${USER_COLUMNS}, EXISTS (SELECT 1 FROM tb_follow f WHERE f.user_id = ? AND f.follow_user_id = tb_user.id) AS followed ` +
        'FROM tb_user WHERE id IN (?)',
      [viewerId, ids],
    );
    return {
      users: new Map(rows.map((row) => [Number(row.id), User.fromRow(row)])),
      followed: new Set(rows.filter((row) => Number(row.followed) === 1).map((row) => Number(row.id))),
    };
  }

  /** The user with this nickName key, their stored password hash, and the version their new tokens carry. */
  async findCredentials(nickKey: string): Promise<Credentials | null> {
    const [row] = await this.db.select<UserRow & { password: string; token_version: number | string }>(
      `SELECT ${USER_COLUMNS}, password, token_version FROM tb_user WHERE nick_key = ?`,
      [nickKey],
    );
    return row
      ? { user: User.fromRow(row), passwordHash: row.password, tokenVersion: Number(row.token_version) }
      : null;
  }

  /**
   * A page of users whose nick_key starts with a prefix, on ix_user_nick_rank (nick_len,
   * nick_key): the IN list on the first column and the key range on the second make one index
   * range per length, each holding exactly the matching keys, read in index order and stopped at
   * the LIMIT (no sort). A range, not LIKE: SQLite's LIKE cannot use a binary index, and
   * MariaDB's range for `LIKE 'al%'` on utf8mb4_bin stops below the characters past U+FFFF
   * ("al😀" is not found). Under MySQL's PAD SPACE collations the range of "al " also holds
   * "al" (equal once padded), but no key shorter than the search is in `lengths`: the match is
   * exact. Users blocked by or blocking the viewer are left out (two index dives per row read).
   * From a replica: a search may lag.
   */
  async searchPage(query: SearchPageQuery): Promise<Array<{ user: User; key: string }>> {
    const params: unknown[] = [query.lengths, query.from];
    let where = 'nick_len IN (?) AND nick_key >= ?';
    if (query.below !== null) {
      where += ' AND nick_key < ?';
      params.push(query.below);
    }
    if (query.after) {
      where += ' AND (nick_len > ? OR (nick_len = ? AND nick_key > ?))';
      params.push(query.after.length, query.after.length, query.after.key);
    }
    if (query.viewerId !== undefined && query.viewerId !== null) {
      where += ` AND ${notBlockedWithViewer('tb_user.id')}`;
      params.push(query.viewerId, query.viewerId);
    }
    const rows = await this.db
      .lagging()
      .select<UserRow & { nick_key: string }>(
        `SELECT ${USER_COLUMNS}, nick_key FROM tb_user WHERE ${where} ORDER BY nick_len, nick_key LIMIT ?`,
        [...params, query.limit],
      );
    return rows.map((row) => ({ user: User.fromRow(row), key: row.nick_key }));
  }

  /**
   * Sets the user's nickName (with its key; nick_len follows it) and icon, each when given. A
   * taken nick_key fails with a duplicate-key error.
   */
  async updateProfile(
    sql: Sql,
    userId: number,
    change: { nickName?: { name: string; key: string }; icon?: string | null },
  ): Promise<void> {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (change.nickName) {
      sets.push('nick_name = ?', 'nick_key = ?');
      params.push(change.nickName.name, change.nickName.key);
    }
    if (change.icon !== undefined) {
      sets.push('icon = ?');
      params.push(change.icon);
    }
    if (sets.length > 0) await sql.write(`UPDATE tb_user SET ${sets.join(', ')} WHERE id = ?`, [...params, userId]);
  }

  /** Inserts a user; the new id. A taken nick_key fails with a duplicate-key error. */
  async insert(nickName: string, nickKey: string, passwordHash: string, createdAt: Date): Promise<number> {
    const result = await this.db.write(
      `INSERT INTO tb_user (nick_name, nick_key, password, icon, follower_count, following_count, created_at)
       VALUES (?, ?, ?, NULL, 0, 0, ?)`,
      [nickName, nickKey, passwordHash, createdAt],
    );
    return Number(result.insertId);
  }
}
