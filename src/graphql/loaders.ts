/**
 * Per-request DataLoaders. Every blog, user, "does the viewer like / follow it" and page-of-users
 * lookup made while resolving one request is collected over a tick and answered by one
 * statement, so a feed page costs the same few statements for 5 items as for 100, and a list of
 * users with a page of followers each as few for 2 users as for 100. Made fresh for each
 * request: the cache lives exactly as long as the request and never leaks between viewers.
 */
import DataLoader from 'dataloader';
import type { BlogService } from '../blog/blog.service';
import type { Blog } from '../blog/blog.types';
import type { FollowService } from '../follow/follow.service';
import type { LikeService } from '../like/like.service';
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import type { UserService } from '../user/user.service';
import type { User } from '../user/user.types';

/** Pages of keyset lists, result[i] answering fetches[i], in one statement (db/keyset.ts). */
type KeysetPages = (fetches: readonly KeysetFetch[]) => Promise<KeysetPosition[][]>;

/** The same, as a viewer (null: anonymous) sees the lists. */
type ViewerKeysetPages = (viewerId: number | null, fetches: readonly KeysetFetch[]) => Promise<KeysetPosition[][]>;

/** The batch functions the loaders need: each answers many ids in one statement. */
export interface LoaderSources {
  blogsByIds(ids: readonly number[]): Promise<Map<number, Blog>>;
  usersByIds(ids: readonly number[]): Promise<Map<number, User>>;
  /** Users by id, and which of them the viewer follows, in one statement. */
  usersWithFollowed(
    viewerId: number,
    ids: readonly number[],
  ): Promise<{ users: Map<number, User>; followed: Set<number> }>;
  likedAmong(viewerId: number, blogIds: readonly number[]): Promise<Set<number>>;
  followedAmong(viewerId: number, userIds: readonly number[]): Promise<Set<number>>;
  /** The social lists as the viewer (null: anonymous) sees them: without users blocked either way. */
  followers: ViewerKeysetPages;
  following: ViewerKeysetPages;
  commonFollows(viewerId: number, fetches: readonly KeysetFetch[]): Promise<KeysetPosition[][]>;
  likers: ViewerKeysetPages;
}

/** The domain services the loaders read through. */
export interface LoaderServices {
  blogs: Pick<BlogService, 'findByIds'>;
  users: Pick<UserService, 'findByIds' | 'findByIdsWithFollowed'>;
  likes: Pick<LikeService, 'likedAmong' | 'likers'>;
  follows: Pick<FollowService, 'followedAmong' | 'followers' | 'following' | 'commonFollows'>;
}

/** The loaders' batch functions on a process's services (the API's requests, the feed benchmark's plain handler). */
export function loaderSources({ blogs, users, likes, follows }: LoaderServices): LoaderSources {
  return {
    blogsByIds: (ids) => blogs.findByIds(ids),
    usersByIds: (ids) => users.findByIds(ids),
    usersWithFollowed: (viewer, ids) => users.findByIdsWithFollowed(ids, viewer),
    likedAmong: (viewer, ids) => likes.likedAmong(viewer, ids),
    followedAmong: (viewer, ids) => follows.followedAmong(viewer, ids),
    followers: (viewer, fetches) => follows.followers(viewer, fetches),
    following: (viewer, fetches) => follows.following(viewer, fetches),
    commonFollows: (viewer, fetches) => follows.commonFollows(viewer, fetches),
    likers: (viewer, fetches) => likes.likers(viewer, fetches),
  };
}

/**
 * Pages of a keyset list: for one owner (KeysetFetch.of), `first + 1` items (the users' ids,
 * with the time of the follow or like) after a position. Every page asked for in one tick,
 * whatever its owner, size or position, is read by one statement (db/keyset.ts).
 */
export type KeysetPageLoader = DataLoader<KeysetFetch, KeysetPosition[], string>;

/**
 * A DataLoader whose primed values can also be read at once, without a promise (peek).
 *
 * A page's hydration primes the authors and the viewer's likes of its blogs (primeLoaders), and a
 * field resolver that finds its value with peek answers synchronously. graphql-js completes an
 * object without a promise when none of its fields gave one: a feed page's edges then cost it no
 * promise, where `author` and `isLiked` through load cost each edge six (the two fields', the
 * author's completion, the node's and the edge's promiseForObject, the list's Promise.all),
 * a sixth of the page's CPU in a profile of bench:feed.
 *
 * What peek answers is what load would: a key keeps the value it was first primed with, as
 * DataLoader's prime does, and a key loaded (or primed with a promise or an error) before any
 * plain value is not peekable; clear and clearAll forget both.
 */
export class PeekableLoader<K, V> extends DataLoader<K, V> {
  /** Keys that DataLoader's cache holds (or is loading). */
  private readonly cached = new Set<K>();
  /** The plain values among them that were primed first. */
  private readonly primed = new Map<K, V>();

  /** The primed value of this key, or undefined (then use load). */
  peek(key: K): V | undefined {
    return this.primed.get(key);
  }

  override load(key: K): Promise<V> {
    this.cached.add(key);
    return super.load(key);
  }

  override prime(key: K, value: V | PromiseLike<V> | Error): this {
    if (!this.cached.has(key)) {
      this.cached.add(key);
      if (!(value instanceof Error) && !isPromiseLike(value)) this.primed.set(key, value);
    }
    return super.prime(key, value);
  }

  override clear(key: K): this {
    this.cached.delete(key);
    this.primed.delete(key);
    return super.clear(key);
  }

  override clearAll(): this {
    this.cached.clear();
    this.primed.clear();
    return super.clearAll();
  }
}

function isPromiseLike<V>(value: V | PromiseLike<V>): value is PromiseLike<V> {
  return typeof (value as PromiseLike<V> | null)?.then === 'function';
}

export interface Loaders {
  blog: DataLoader<number, Blog | null>;
  /** Peekable: Blog.author answers a hydrated page's authors without a promise. */
  user: PeekableLoader<number, User | null>;
  /** Users read whole from MySQL, never primed with the hydration cache's (which lack the counts). */
  userRow: DataLoader<number, User | null>;
  /** Does the viewer like this blog? Always false for an anonymous viewer, without a query. Peekable, as user. */
  likedByViewer: PeekableLoader<number, boolean>;
  /**
   * Does the viewer follow this user? Always false for an anonymous viewer, without a query.
   * Primed by every read of `user` and `userRow` for a signed-in viewer (createLoaders), so it
   * rarely runs a statement of its own.
   */
  followedByViewer: DataLoader<number, boolean>;
  /** Pages of a user's followers (KeysetFetch.of: the followed user). */
  followers: KeysetPageLoader;
  /** Pages of the users a user follows. */
  following: KeysetPageLoader;
  /** Pages of the users whom both the viewer and the owner follow. Always empty for an anonymous viewer, without a query. */
  commonFollows: KeysetPageLoader;
  /** Pages of a blog's likers (KeysetFetch.of: the blog). */
  likers: KeysetPageLoader;
}

function byId<V>(lookup: (ids: readonly number[]) => Promise<Map<number, V>>): PeekableLoader<number, V | null> {
  return new PeekableLoader(async (ids) => {
    const found = await lookup(ids);
    return ids.map((id) => found.get(id) ?? null);
  });
}

function membership(
  viewerId: number | null,
  lookup: (viewerId: number, ids: readonly number[]) => Promise<Set<number>>,
) {
  return new PeekableLoader<number, boolean>(async (ids) => {
    if (viewerId === null) return ids.map(() => false);
    const members = await lookup(viewerId, ids);
    return ids.map((id) => members.has(id));
  });
}

function keysetPages(lookup: KeysetPages): KeysetPageLoader {
  return new DataLoader((fetches) => lookup(fetches), {
    cacheKeyFn: ({ of, limit, after }) =>
      after === null ? `${of}:${limit}` : `${of}:${limit}:${after.time}:${after.id}`,
  });
}

/** What a statement that read a page's data found, put into the loaders so that resolvers find it there. */
export function primeLoaders(
  loaders: Loaders,
  blogIds: readonly number[],
  found: { blogs: Blog[]; authors: User[]; liked: Set<number>; followed: Set<number> | null },
): void {
  for (const blog of found.blogs) {
    loaders.blog.prime(blog.dbId, blog);
    loaders.likedByViewer.prime(blog.dbId, found.liked.has(blog.dbId));
  }
  // An id the statement did not find is a deleted blog: known too, so nothing asks again
  // (prime leaves the blogs primed above as they are).
  for (const id of blogIds) loaders.blog.prime(id, null);
  for (const author of found.authors) {
    loaders.user.prime(author.dbId, author);
    // null: nothing could say without MySQL; the loader asks it.
    if (found.followed) loaders.followedByViewer.prime(author.dbId, found.followed.has(author.dbId));
  }
}

/** Forgets everything the loaders hold (a subscription's context outlives each of its events). */
export function clearLoaders(loaders: Loaders): void {
  for (const loader of Object.values(loaders) as Array<DataLoader<number, unknown>>) loader.clearAll();
}

export function createLoaders(sources: LoaderSources, viewerId: number | null): Loaders {
  const followedByViewer = membership(viewerId, (viewer, ids) => sources.followedAmong(viewer, ids));
  // A signed-in viewer's users are read with the viewer's follow flags, which are primed for
  // User.isFollowedByViewer: a profile page's user and its flag cost one statement, not two.
  // (A flag already loaded or primed, by a follow in this request say, is left as it is.)
  const users = async (ids: readonly number[]): Promise<Map<number, User>> => {
    if (viewerId === null) return sources.usersByIds(ids);
    const found = await sources.usersWithFollowed(viewerId, ids);
    for (const id of found.users.keys()) followedByViewer.prime(id, found.followed.has(id));
    return found.users;
  };
  return {
    blog: byId((ids) => sources.blogsByIds(ids)),
    user: byId(users),
    userRow: byId(users),
    likedByViewer: membership(viewerId, (viewer, ids) => sources.likedAmong(viewer, ids)),
    followedByViewer,
    followers: keysetPages((fetches) => sources.followers(viewerId, fetches)),
    following: keysetPages((fetches) => sources.following(viewerId, fetches)),
    commonFollows: keysetPages((fetches) =>
      viewerId === null ? Promise.resolve(fetches.map(() => [])) : sources.commonFollows(viewerId, fetches),
    ),
    likers: keysetPages((fetches) => sources.likers(viewerId, fetches)),
  };
}
