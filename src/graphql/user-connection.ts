/**
 * Every page of users becomes a connection here: a user's followers, followees and common
 * follows, and a blog's likers. The list's loader gives the page's user ids (one statement for
 * every page resolved together); the users come through the request's user loader (one more).
 */
import { keysetFetch, KeysetPageRequest, sliceKeysetPage } from '../kernel/pagination/page';
import { toKeysetConnection } from '../kernel/pagination/connection';
import { User, UserConnection } from '../user/user.types';
import type { KeysetPageLoader, Loaders } from './loaders';

/** The page of `list` owned by `of` (a user, or a blog for its likers) after `request`'s position. */
export async function userConnection(
  list: Pick<KeysetPageLoader, 'load'>,
  of: number,
  request: KeysetPageRequest,
  loaders: Pick<Loaders, 'user'>,
): Promise<UserConnection> {
  const page = sliceKeysetPage(request, await list.load(keysetFetch(of, request)));
  const users = new Map<number, User>();
  for (const user of await loaders.user.loadMany(page.items.map((item) => item.id)))
    if (user instanceof User) users.set(user.dbId, user);
  // Users are never deleted, so every id has its user; should one be missing, its edge is left
  // out while the cursors still move past it.
  return toKeysetConnection(page, (item) => users.get(item.id) ?? null);
}
