/** The SQL of users (tb_user). */
import type { Database, Sql } from '../db/database';
import { User, UserRow } from './user.types';

/** What a login checks: the user, their password hash, and their token version (auth/auth.sessions.ts). */
export interface Credentials {
  user: User;
  passwordHash: string;
  tokenVersion: number;
}

/** The columns of UserRow, for SELECTs. */
const USER_COLUMNS = 'id, nick_name, icon, follower_count, following_count';

export class UserStore {
  constructor(private readonly db: Database) {}

  /** Users by database id, in one statement; missing ids are absent from the map. From a replica unless given `sql`. */
  async findByIds(ids: readonly number[], sql: Sql = this.db.lagging()): Promise<Map<number, User>> {
    if (ids.length === 0) return new Map();
    const rows = await sql.select<UserRow>(`SELECT ${USER_COLUMNS} FROM tb_user WHERE id IN (?)`, [ids]);
    return new Map(rows.map((row) => [Number(row.id), User.fromRow(row)]));
  }

  /** The user with this nickName key, their stored password hash, and the version their new tokens carry. */
  async findCredentials(nickKey: string): Promise<Credentials | null> {
    const [row] = await this.db.select<UserRow & { password: string; token_version: number | string }>(
      `SELECT ${USER_COLUMNS}, password, token_version FROM tb_user WHERE nick_key = ?`,
      [nickKey],
    );
    return row ? { user: User.fromRow(row), passwordHash: row.password, tokenVersion: Number(row.token_version) } : null;
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
