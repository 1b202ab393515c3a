/** Users: lookups by id (batched for the loader) and by nickName, and creation. */
import type { CacheWrites } from '../cache/cache.service';
import { Database, isDuplicateKey, Sql } from '../db/database';
import { badUserInput } from '../kernel/errors';
import { InvalidPageSizeError, pageSize } from '../kernel/pagination/page';
import { nickNameKey, validateNickName } from './user.key';
import { Credentials, UserStore } from './user.store';
import {
  decodeSearchCursor,
  encodeSearchCursor,
  lengthsFrom,
  positionOf,
  prefixRange,
  searchKeyOf,
} from './user.search';
import { User } from './user.types';

/** A page of found users: each with its cursor, and whether more come after the last. */
export interface UserSearchPage {
  edges: Array<{ cursor: string; user: User }>;
  hasNextPage: boolean;
}

export { nickNameKey };

export interface UserServiceDeps {
  store: UserStore;
  now: () => Date;
  /** Runs the profile changes' transactions. */
  db: Database;
  /** The hydration cache, told of profile changes (nothing in the embedded mode). */
  cache: CacheWrites;
}

/**
 * Ids that exists() has seen exist, kept by each process up to this many (then forgotten all at
 * once and learnt again): a few hundred kilobytes, and a follow of a popular user costs no read.
 */
const KNOWN_USERS_KEPT = 100_000;

export class UserService {
  private readonly store: UserStore;
  private readonly now: () => Date;
  private readonly db: Database;
  private readonly cache: CacheWrites;
  /** Users exists() found: users are never deleted, so a yes stays true (exists()). */
  private readonly known = new Set<number>();

  constructor(deps: UserServiceDeps) {
    this.store = deps.store;
    this.now = deps.now;
    this.db = deps.db;
    this.cache = deps.cache;
  }

  /**
   * Changes the viewer's nickName and/or icon (omitted: unchanged; icon null: removed). The
   * nickName follows signUp's rules and its uniqueness key: a taken one is BAD_USER_INPUT naming
   * nickName (the unique index decides), and nothing changes. The icon was checked by the URL
   * scalar. The cached copy is locked in the transaction, so no page serves the old name after.
   */
  async updateProfile(viewerId: number, input: { nickName?: string | null; icon?: string | null }): Promise<User> {
    const nickName = input.nickName ?? undefined;
    if (nickName !== undefined) validateNickName(nickName);
    const change = {
      nickName: nickName === undefined ? undefined : { name: nickName, key: nickNameKey(nickName) },
      icon: input.icon,
    };
    try {
      await this.db
        .transaction(async (sql) => {
          await this.store.updateProfile(sql, viewerId, change);
          await this.cache.changing(sql, 'u', viewerId);
        })
        .finally(() => this.cache.changed('u', viewerId));
    } catch (error) {
      if (isDuplicateKey(error)) throw badUserInput(`nickName "${nickName}" is already taken`, 'nickName');
      throw error;
    }
    const user = await this.findById(viewerId, this.db);
    if (!user) throw new Error(`user ${viewerId} vanished during a profile change`);
    return user;
  }

  /** Users by database id, in one statement; missing ids are absent from the map. */
  findByIds(ids: readonly number[], sql?: Sql): Promise<Map<number, User>> {
    return this.store.findByIds(ids, sql);
  }

  /** Users by id, and which of them `viewerId` follows, in one read (UserStore.findByIdsWithFollowed). */
  findByIdsWithFollowed(
    ids: readonly number[],
    viewerId: number,
  ): Promise<{ users: Map<number, User>; followed: Set<number> }> {
    return this.store.findByIdsWithFollowed(ids, viewerId);
  }

  async findById(id: number, sql?: Sql): Promise<User | null> {
    return (await this.findByIds([id], sql)).get(id) ?? null;
  }

  /**
   * Whether the user exists: the check before a follow, mute or block. Nothing deletes a user
   * (no statement of this service deletes from tb_user), so an id found once is remembered and
   * not read again; an id not found is read every time (it may be signed up a moment later).
   * Were users ever deleted, this memory would have to go.
   */
  async exists(id: number): Promise<boolean> {
    if (this.known.has(id)) return true;
    if (!(await this.findById(id))) return false;
    if (this.known.size >= KNOWN_USERS_KEPT) this.known.clear();
    this.known.add(id);
    return true;
  }

  /**
   * Users whose nickName key starts with the key of `text`, best match first (user.search.ts
   * says the order), `first` of them after the cursor `after`. Bad input is BAD_USER_INPUT naming
   * `search`, `first` or `after`. Users blocked by or blocking `viewerId` are left out.
   */
  async search(
    text: string,
    first: number | null | undefined,
    after: string | null | undefined,
    viewerId: number | null = null,
  ): Promise<UserSearchPage> {
    const key = searchKeyOf(text);
    let size: number;
    try {
      size = pageSize(first);
    } catch (error) {
      if (error instanceof InvalidPageSizeError) throw badUserInput(error.message, 'first');
      throw error;
    }
    const position = after === null || after === undefined ? null : decodeSearchCursor(after, key);
    const { from, below } = prefixRange(key);
    const found = await this.store.searchPage({
      from,
      below,
      lengths: lengthsFrom(position?.length ?? positionOf(key).length),
      after: position,
      limit: size + 1,
      viewerId,
    });
    return {
      edges: found.slice(0, size).map(({ user, key: userKey }) => ({ cursor: encodeSearchCursor(userKey), user })),
      hasNextPage: found.length > size,
    };
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
