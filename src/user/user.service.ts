/** Users: lookups by id (batched for the loader) and by nickName, and creation. */
import { isDuplicateKey, Sql } from '../db/database';
import { badUserInput } from '../kernel/errors';
import { Credentials, UserStore } from './user.store';
import { User } from './user.types';

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
    private readonly store: UserStore,
    private readonly now: () => Date,
  ) {}

  /** Users by database id, in one statement; missing ids are absent from the map. */
  findByIds(ids: readonly number[], sql?: Sql): Promise<Map<number, User>> {
    return this.store.findByIds(ids, sql);
  }

  async findById(id: number, sql?: Sql): Promise<User | null> {
    return (await this.findByIds([id], sql)).get(id) ?? null;
  }

  /** The user, stored password hash and token version for a login. */
  findCredentials(nickName: string): Promise<Credentials | null> {
    return this.store.findCredentials(nickNameKey(nickName));
  }

  /** Inserts a user; a taken nickName is BAD_USER_INPUT (the unique index decides, not a race-prone check). */
  async create(nickName: string, passwordHash: string): Promise<User> {
    try {
      const id = await this.store.insert(nickName, nickNameKey(nickName), passwordHash, this.now());
      const user = await this.findById(id);
      if (!user) throw new Error(`user ${id} vanished right after insert`);
      return user;
    } catch (error) {
      if (isDuplicateKey(error)) throw badUserInput(`nickName "${nickName}" is already taken`, 'nickName');
      throw error;
    }
  }
}
