/**
 * Per-request DataLoaders. Every blog, user and "does the viewer like / follow it" lookup made
 * while resolving one request is collected over a tick and answered by one statement, so a feed
 * page costs the same few statements for 5 items as for 100. Made fresh for each request: the
 * cache lives exactly as long as the request and never leaks between viewers.
 */
import DataLoader from 'dataloader';
import type { Blog } from '../blog/blog.types';
import type { User } from '../user/user.types';

/** The batch functions the loaders need: each answers many ids in one statement. */
export interface LoaderSources {
  blogsByIds(ids: readonly number[]): Promise<Map<number, Blog>>;
  usersByIds(ids: readonly number[]): Promise<Map<number, User>>;
  likedAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>>;
  followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>>;
}

export interface Loaders {
  blog: DataLoader<number, Blog | null>;
  user: DataLoader<number, User | null>;
  /** Does the viewer like this blog? Always false for an anonymous viewer, without a query. */
  likedByViewer: DataLoader<number, boolean>;
  /** Does the viewer follow this user? Always false for an anonymous viewer, without a query. */
  followedByViewer: DataLoader<number, boolean>;
}

function byId<V>(lookup: (ids: readonly number[]) => Promise<Map<number, V>>): DataLoader<number, V | null> {
  return new DataLoader(async (ids) => {
    const found = await lookup(ids);
    return ids.map((id) => found.get(id) ?? null);
  });
}

function membership(viewerId: number | null, lookup: (viewerId: number, ids: readonly number[]) => Promise<Set<number>>) {
  return new DataLoader<number, boolean>(async (ids) => {
    if (viewerId === null) return ids.map(() => false);
    const members = await lookup(viewerId, ids);
    return ids.map((id) => members.has(id));
  });
}

/** What a statement that read a page's data found, put into the loaders so that resolvers find it there. */
export function primeLoaders(
  loaders: Loaders,
  blogIds: readonly number[],
  found: { blogs: Blog[]; authors: User[]; liked: Set<number>; followed: Set<number> },
): void {
  // An id the statement did not find is a deleted blog: known too, so nothing asks again.
  for (const id of blogIds) loaders.blog.prime(id, null);
  for (const blog of found.blogs) {
    loaders.blog.clear(blog.dbId);
    loaders.blog.prime(blog.dbId, blog);
    loaders.likedByViewer.prime(blog.dbId, found.liked.has(blog.dbId));
  }
  for (const author of found.authors) {
    loaders.user.prime(author.dbId, author);
    loaders.followedByViewer.prime(author.dbId, found.followed.has(author.dbId));
  }
}

export function createLoaders(sources: LoaderSources, viewerId: number | null): Loaders {
  return {
    blog: byId((ids) => sources.blogsByIds(ids)),
    user: byId((ids) => sources.usersByIds(ids)),
    likedByViewer: membership(viewerId, (viewer, ids) => sources.likedAmong(viewer, ids)),
    followedByViewer: membership(viewerId, (viewer, ids) => sources.followedAmong(viewer, ids)),
  };
}
