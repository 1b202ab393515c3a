/** Users: lookups by id (batched for the loader) and by nickName, and creation. */
import { DataSource } from 'typeorm';
import { isDuplicateKey, select, Sql, write } from '../db/sql';
import { badUserInput } from '../kernel/errors';
import { User, USER_COLUMNS, UserRow } from './user.types';

/**
 * The key that makes nickNames unique and finds them at login: NFKC-normalised (full-width
 * "Ａ" is "A") and lower-cased, so "Alice" and "alice" are one account, while different
 * characters ("René" and "Rene", two different emoji) stay different accounts.
 */
export function nickNameKey(nickName: string): string {
  return nickName.normalize('NFKC').toLowerCase();
}

export class UserService {
  constructor(
    private readonly db: DataSource,
    private readonly now: () => Date,
  ) {}

  /** Users by database id, in one statement; missing ids are absent from the map. */
  async findByIds(ids: readonly number[], sql: Sql = this.db): Promise<Map<number, User>> {
    if (ids.length === 0) return new Map();
    const rows = await select<UserRow>(sql, `SELECT ${USER_COLUMNS} FROM tb_user WHERE id IN (?)`, [ids]);
    return new Map(rows.map((row) => [Number(row.id), User.fromRow(row)]));
  }

  async findById(id: number, sql: Sql = this.db): Promise<User | null> {
    return (await this.findByIds([id], sql)).get(id) ?? null;
  }

  /** The user and stored password hash for a login. */
  async findCredentials(nickName: string): Promise<{ user: User; passwordHash: string } | null> {
    const [row] = await select<UserRow & { password: string }>(this.db, `SELECT ${USER_COLUMNS}, password FROM tb_user WHERE nick_key = ?`, [
      nickNameKey(nickName),
    ]);
    return row ? { user: User.fromRow(row), passwordHash: row.password } : null;
  }

  /** Inserts a user; a taken nickName is BAD_USER_INPUT (the unique index decides, not a race-prone check). */
  async create(nickName: string, passwordHash: string): Promise<User> {
    try {
      const result = await write(
        this.db,
        `INSERT INTO tb_user (nick_name, nick_key, password, icon, follower_count, following_count, created_at)
         VALUES (?, ?, ?, NULL, 0, 0, ?)`,
        [nickName, nickNameKey(nickName), passwordHash, this.now()],
      );
      const user = await this.findById(Number(result.insertId));
      if (!user) throw new Error(`user ${result.insertId} vanished right after insert`);
      return user;
    } catch (error) {
      if (isDuplicateKey(error)) throw badUserInput(`nickName "${nickName}" is already taken`, 'nickName');
      throw error;
    }
  }
}
