/** Blogs: publishing, deleting, lookups and a user's own blogs page. */
import type { CacheWrites, HydrationCache } from '../cache/cache.service';
import { LIKE_SET_MAX } from '../cache/cache.service';
import { Database, isDuplicateKey, Sql } from '../db/database';
import type { FanoutService } from '../fanout/fanout.service';
import type { LiveFeed } from '../feed/feed.live';
import type { FeedService } from '../feed/feed.service';
import { badUserInput, forbidden, notFound } from '../kernel/errors';
import { ScoredId } from '../kernel/pagination/cursor';
import { fetchSize, Page, PageRequest, slicePage } from '../kernel/pagination/page';
import { checkHttpUrl, checkNoControlCharacters, checkText } from '../kernel/validation';
import type { UserService } from '../user/user.service';
import type { User } from '../user/user.types';
import { BlogAuthors } from './blog.authors';
import { BlogsForViewer, BlogStore } from './blog.store';
import { Blog, BlogRow, KeyedBlogRow, PublishBlogInput } from './blog.types';

/** Title length in characters: one line in a list view; also the VARCHAR(255) column. */
export const TITLE_MAX = 255;
/** Content length in characters: a long post, far below what the TEXT column holds in utf8mb4. */
export const CONTENT_MAX = 10_000;
/** At most 9 images per blog: the 3x3 grid the app shows. */
export const IMAGES_MAX = 9;
/** Image URL length in characters. */
export const IMAGE_URL_MAX = 512;

/**
 * An idempotency key: what a client generates anyway (a UUID, a ULID, base64url), short enough
 * to index, ASCII so that it compares byte for byte.
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The rules of a new blog. Text takes no control characters but newline and tab (a URL none);
 * blogs stored before that rule are served as they are.
 */
export function validatePublishInput(input: PublishBlogInput): void {
  validateTitle(input.title);
  validateContent(input.content);
  validateImages(input.images ?? []);
}

function validateTitle(title: string): void {
  checkText('title', title, { min: 1, max: TITLE_MAX, notBlank: true });
  checkNoControlCharacters('title', title, { newlineAndTab: true });
}

function validateContent(content: string): void {
  checkText('content', content, { min: 1, max: CONTENT_MAX, notBlank: true });
  checkNoControlCharacters('content', content, { newlineAndTab: true });
}

/** At most IMAGES_MAX absolute http or https URLs (an app loads them: no `javascript:` or `data:`). Stored rows are served as they are. */
function validateImages(images: readonly string[]): void {
  if (images.length > IMAGES_MAX) {
    throw badUserInput(`images must hold at most ${IMAGES_MAX} URLs (got ${images.length})`, 'images');
  }
  images.forEach((image, i) => {
    checkText(`images[${i}]`, image, { min: 1, max: IMAGE_URL_MAX, notBlank: true });
    checkNoControlCharacters(`images[${i}]`, image, { newlineAndTab: false });
    checkHttpUrl(`images[${i}]`, image);
  });
}

/** An edit: the blog and the fields to change (null or absent: unchanged). */
export interface BlogEdit {
  blogId: number;
  title?: string | null;
  content?: string | null;
  images?: string[] | null;
}

/** What a page's hydration needs beside the blogs (composition.ts): the cache, the users and a log. */
export interface BlogCaching {
  /** Told of edits and deletes (NO_CACHE in the embedded mode). */
  writes: CacheWrites;
  /** Pages' blogs and authors from Redis; null in the embedded mode (pages read SQL). */
  hydration: HydrationCache | null;
  users: Pick<UserService, 'findByIds'>;
  warn: (message: string, error?: unknown) => void;
}

export function validateIdempotencyKey(key: string | null | undefined): void {
  if (key === null || key === undefined || IDEMPOTENCY_KEY_PATTERN.test(key)) return;
  const shown = key.length > 70 ? `${key.slice(0, 70)}...` : key;
  throw badUserInput(
    `idempotencyKey must be 1..64 characters of A-Z, a-z, 0-9, _ and - (got ${JSON.stringify(shown)}, ${key.length} characters)`,
    'idempotencyKey',
  );
}

export interface BlogServiceDeps {
  /** Runs the transactions. */
  db: Database;
  store: BlogStore;
  /** null in the embedded mode, where nothing is fanned out (the pull model). */
  fanout: FanoutService | null;
  /** Publishes (which blogs are fanned out, and the tracking of their delivery), and says which blogs inboxes hold. */
  feed: Pick<FeedService, 'publish' | 'inInboxes' | 'followedAmong' | 'pulledBlogChange'>;
  /** Live subscribers to tell of a blog that no fan-out delivers, and of a deleted blog. */
  live: Pick<LiveFeed, 'published' | 'deleted'>;
  now: () => Date;
  cache: BlogCaching;
  /** Who wrote the blogs this process has seen (blog.authors.ts); a map of its own unless given. */
  blogAuthors?: BlogAuthors;
}

export class BlogService {
  private readonly db: Database;
  private readonly store: BlogStore;
  private readonly fanout: FanoutService | null;
  private readonly feed: Pick<FeedService, 'publish' | 'inInboxes' | 'followedAmong' | 'pulledBlogChange'>;
  private readonly live: Pick<LiveFeed, 'published' | 'deleted'>;
  private readonly now: () => Date;
  private readonly cache: BlogCaching;
  private readonly blogAuthors: BlogAuthors;

  constructor(deps: BlogServiceDeps) {
    this.db = deps.db;
    this.store = deps.store;
    this.fanout = deps.fanout;
    this.feed = deps.feed;
    this.live = deps.live;
    this.now = deps.now;
    this.cache = deps.cache;
    this.blogAuthors = deps.blogAuthors ?? new BlogAuthors();
  }

  /**
   * Saves the blog and its fan-out event in one transaction and returns. Delivery to the
   * followers' inboxes happens in the fan-out workers, so publishing costs the same at any
   * follower count, and the event survives a crash or a Redis outage (the outbox).
   *
   * With an idempotency key, a publish that finds the author's key already used returns that
   * blog and creates nothing (no blog, no fan-out, no live event): a retry after a timeout, or
   * after a COMMIT whose answer was lost. Concurrent attempts with one key are decided by the
   * unique index: one commits, the others find its blog.
   */
  async publish(authorId: number, input: PublishBlogInput): Promise<Blog> {
    validatePublishInput(input);
    const key = input.idempotencyKey ?? null;
    validateIdempotencyKey(key);
    if (key !== null) {
      const earlier = await this.store.findByIdempotencyKey(authorId, key);
      if (earlier) return retriedBlog(earlier, input, key);
    }
    try {
      return await this.publishNew(authorId, input, key);
    } catch (error) {
      if (key === null || !isDuplicateKey(error)) throw error;
      const earlier = await this.store.findByIdempotencyKey(authorId, key);
      if (!earlier) throw error;
      return retriedBlog(earlier, input, key);
    }
  }

  private async publishNew(authorId: number, input: PublishBlogInput, idempotencyKey: string | null): Promise<Blog> {
    const hydration = this.cache.hydration;
    // What the transaction inserted, and the cache lease it took for it (set inside the transaction).
    const inserted: { row?: BlogRow; lease?: string | null } = {};
    // FeedService.publish orders the steps of the feed around our writes, as changeFollow does for follows.
    const { blog, taskId } = await this.feed.publish<Blog>(authorId, (publishIn) =>
      this.db.transaction((sql) =>
        publishIn(sql, {
          insertBlog: async (pushed) => {
            const row = await this.insertBlog(sql, authorId, input, { pushed, idempotencyKey });
            inserted.row = row;
            return Blog.fromRow(row);
          },
          recordDeliver: (blog) => this.requireFanout().recordDeliver(sql, blog),
          // Before the commit, so that every write after it takes the lease away (HydrationCache.newBlogLease).
          beforeCommit: async () => {
            if (hydration && inserted.row) inserted.lease = await hydration.newBlogLease(Number(inserted.row.id));
          },
        }),
      ),
    );
    if (taskId !== null) this.requireFanout().enqueue(taskId, 'deliver', blog);
    // Nobody fans this blog out (the pull model, a big author): it is in every follower's feed
    // from its commit, and live followers hear of it now.
    else await this.live.published({ id: blog.dbId, score: blog.score, authorId: blog.authorId });
    if (hydration && inserted.row && inserted.lease) await hydration.storeNewBlog(inserted.row, inserted.lease);
    return blog;
  }

  /** The new blog's row, inserted in the publishing transaction. */
  private async insertBlog(
    sql: Sql,
    authorId: number,
    input: PublishBlogInput,
    { pushed, idempotencyKey }: { pushed: boolean; idempotencyKey: string | null },
  ): Promise<BlogRow> {
    const row: Omit<BlogRow, 'id'> = {
      user_id: authorId,
      title: input.title,
      content: input.content,
      images: JSON.stringify(input.images ?? []),
      liked: 0,
      // DATETIME(3) keeps the milliseconds of this Date, so the stored row equals this one.
      created_at: this.now(),
      pushed,
      edited_at: null,
    };
    return { ...row, id: await this.store.insert(sql, row, idempotencyKey) };
  }

  /** Soft-deletes the viewer's own blog with its retract event; it leaves every inbox right after. */
  async delete(viewerId: number, blogId: number): Promise<void> {
    const blog = await this.findById(blogId);
    if (!blog) throw notFound(`blog ${blogId} does not exist`);
    if (blog.authorId !== viewerId) throw forbidden('only the author may delete a blog');
    const pulled = !this.feed.inInboxes(blog);
    const taskId = await this.db
      .transaction(async (sql) => {
        if (!(await this.store.softDelete(sql, blogId, this.now()))) throw notFound(`blog ${blogId} does not exist`);
        // Pages stop serving the cached copy before the delete commits (cache/cache.service.ts).
        await this.cache.writes.changing(sql, 'b', blogId);
        // A blog that no inbox holds (hybrid: a big author's) needs no walk over the followers,
        // and leaves the lists of pulled blogs that processes keep (feed/pulled-blogs.ts).
        if (pulled) await this.feed.pulledBlogChange(blog.authorId, 'changing');
        return pulled ? null : this.requireFanout().recordRetract(sql, blog);
      })
      .finally(async () => {
        await this.cache.writes.changed('b', blogId);
        if (pulled) await this.feed.pulledBlogChange(blog.authorId, 'changed');
      });
    if (taskId !== null) this.requireFanout().enqueue(taskId, 'retract', blog);
    // Watching followers hear that it left their feed (followFeedRemoved), in every process.
    await this.live.deleted({ id: blogId, authorId: blog.authorId });
  }

  /**
   * Edits the viewer's own blog: the given fields (the rules of a new blog), and editedAt. Only
   * the author may: FORBIDDEN otherwise, and nothing changes. Inboxes hold ids only, and the
   * cached copy is locked in the transaction: no page serves the old text after the edit.
   */
  async update(viewerId: number, edit: BlogEdit): Promise<Blog> {
    const { blogId } = edit;
    const title = edit.title ?? null;
    const content = edit.content ?? null;
    const images = edit.images ?? null;
    if (title === null && content === null && images === null)
      throw badUserInput('give at least one of title, content and images to change', 'input');
    if (title !== null) validateTitle(title);
    if (content !== null) validateContent(content);
    if (images !== null) validateImages(images);
    await this.db
      .transaction(async (sql) => {
        const [current] = (await this.store.findByIds([blogId], sql)).values();
        if (!current) throw notFound(`blog ${blogId} does not exist`);
        if (current.authorId !== viewerId) throw forbidden('only the author may edit a blog');
        const change = {
          title: title ?? current.title,
          content: content ?? current.content,
          images: JSON.stringify(images ?? current.images),
        };
        if (!(await this.store.update(sql, blogId, change, this.now())))
          throw notFound(`blog ${blogId} does not exist`);
        await this.cache.writes.changing(sql, 'b', blogId);
      })
      .finally(() => this.cache.writes.changed('b', blogId));
    const blog = await this.findById(blogId, this.db);
    if (!blog) throw notFound(`blog ${blogId} does not exist`);
    return blog;
  }

  /** Live (not deleted) blogs by id, in one statement. */
  findByIds(ids: readonly number[], sql?: Sql): Promise<Map<number, Blog>> {
    return this.store.findByIds(ids, sql);
  }

  async findById(id: number, sql?: Sql): Promise<Blog | null> {
    return (await this.findByIds([id], sql)).get(id) ?? null;
  }

  /**
   * A page's blogs with their authors and the viewer's likes and follows: from the hydration
   * cache (no SQL in the steady state), else in one statement. Blogs the cache lacks are read
   * from the primary and stored; those with a write in flight are read from MySQL and not stored.
   */
  async forViewer(viewerId: number | null, ids: readonly number[]): Promise<BlogsForViewer> {
    const { hydration } = this.cache;
    if (ids.length === 0 || !hydration?.usable()) return this.store.forViewer(viewerId, ids);
    try {
      return await this.hydrate(hydration, viewerId, ids);
    } catch (error) {
      this.cache.warn('hydrating a page from the cache failed; reading MySQL', error);
      return this.store.forViewer(viewerId, ids);
    }
  }

  private async hydrate(
    cache: HydrationCache,
    viewerId: number | null,
    ids: readonly number[],
  ): Promise<BlogsForViewer> {
    // Authors this process knows are asked for in the blogs' round trip (blog.authors.ts);
    // awaited after the blogs, and a failure is the page's (forViewer), never an unhandled one.
    const knownAuthors = this.blogAuthors.of(ids);
    const early = knownAuthors ? this.authorsOfPage(cache, viewerId, knownAuthors) : null;
    early?.catch(() => {});
    const reads = await cache.readBlogs(viewerId, ids);
    const blogs: Blog[] = [];
    const liked = new Set<number>();
    const misses: Array<{ id: number; lease: string }> = [];
    let fromSql: number[] = [];
    for (const id of ids) {
      const read = reads.get(id)!;
      if (read.kind === 'hit') {
        blogs.push(read.blog);
        if (read.liked) liked.add(id);
      } else if (read.kind === 'miss') misses.push({ id, lease: read.lease });
      else if (read.kind === 'busy') fromSql.push(id);
    }
    if (misses.length > 0) {
      const filled = await this.fill(cache, viewerId, misses);
      blogs.push(...filled.blogs);
      for (const id of filled.liked) liked.add(id);
      fromSql = fromSql.concat(filled.big);
    }
    this.blogAuthors.remember(blogs);
    const sql = fromSql.length > 0 ? await this.store.forViewer(viewerId, fromSql) : null;
    const { authors, followed } = await (early ?? this.authorsOfPage(cache, viewerId, authorsOf(blogs)));
    if (!sql) return { blogs, authors, liked, followed };
    this.blogAuthors.remember(sql.blogs);
    const cached = new Set(authors.map((author) => author.dbId));
    return {
      blogs: blogs.concat(sql.blogs),
      authors: authors.concat(sql.authors.filter((author) => !cached.has(author.dbId))),
      liked: new Set([...liked, ...sql.liked]),
      // The follow checks of the blogs read from SQL are MySQL's; the others the inbox's (or the loader's, when it cannot say).
      followed: followed === null ? null : new Set([...followed, ...sql.followed!]),
    };
  }

  /** A page's authors from the cache, and which of them the viewer follows (the inbox's say; null: it cannot). */
  private async authorsOfPage(
    cache: HydrationCache,
    viewerId: number | null,
    authorIds: readonly number[],
  ): Promise<Pick<BlogsForViewer, 'authors' | 'followed'>> {
    const [authors, followed] = await Promise.all([
      this.authors(cache, authorIds),
      // An anonymous viewer follows nobody.
      viewerId === null ? new Set<number>() : this.feed.followedAmong(viewerId, authorIds),
    ]);
    return { authors, followed };
  }

  /** Blogs the cache lacks: read from the primary, stored under their leases. Those with too many likes to keep are left to SQL (`big`). */
  private async fill(
    cache: HydrationCache,
    viewerId: number | null,
    misses: ReadonlyArray<{ id: number; lease: string }>,
  ) {
    const rows = new Map(
      (await this.store.rowsForCache(misses.map((miss) => miss.id))).map((row) => [Number(row.id), row]),
    );
    const kept = [...rows.values()]
      .filter((row) => row.deleted_at === null && Number(row.liked) <= LIKE_SET_MAX)
      .map((row) => Number(row.id));
    const likes = await this.store.likesForCache(kept);
    const result = { blogs: [] as Blog[], liked: new Set<number>(), big: [] as number[] };
    await Promise.all(
      misses.map(async ({ id, lease }) => {
        const row = rows.get(id);
        // An id with no row at all is not cached: nothing to say about it yet.
        if (!row) return;
        if (row.deleted_at !== null) return cache.fillBlog(id, lease, null, null);
        if (!kept.includes(id)) {
          result.big.push(id);
          return cache.fillBlog(id, lease, row, null);
        }
        const likers = likes.filter((like) => like.blogId === id);
        // The page shows the rows it read, stored or not (a write may have taken the lease meanwhile).
        result.blogs.push(Blog.fromRow({ ...row, liked: likers.length }));
        if (likers.some((like) => like.userId === viewerId)) result.liked.add(id);
        return cache.fillBlog(id, lease, row, likers);
      }),
    );
    return result;
  }

  /** The page's authors: from the cache, the missing ones read from the primary and stored, those being changed from MySQL. */
  private async authors(cache: HydrationCache, ids: readonly number[]): Promise<User[]> {
    if (ids.length === 0) return [];
    const reads = await cache.readUsers(ids);
    const users: User[] = [];
    const misses = new Map<number, string>();
    const busy: number[] = [];
    for (const id of ids) {
      const read = reads.get(id)!;
      if (read.kind === 'hit') users.push(read.user);
      else if (read.kind === 'miss') misses.set(id, read.lease);
      else busy.push(id);
    }
    const [fromPrimary, fromSql] = await Promise.all([
      misses.size > 0 ? this.cache.users.findByIds([...misses.keys()], this.db) : new Map<number, User>(),
      busy.length > 0 ? this.cache.users.findByIds(busy) : new Map<number, User>(),
    ]);
    await Promise.all([...fromPrimary.values()].map((user) => cache.fillUser(user, misses.get(user.dbId)!)));
    return users.concat([...fromPrimary.values()], [...fromSql.values()]);
  }

  /** A page of one user's own blogs, newest first, with the same cursor as the feed: ids and scores, which forViewer hydrates. */
  async pageOfAuthor(authorId: number, request: PageRequest): Promise<Page<ScoredId>> {
    return slicePage(request, await this.store.pageOfAuthor(authorId, request.from, fetchSize(request)));
  }

  private requireFanout(): FanoutService {
    if (!this.fanout)
      throw new Error('this blog is to be fanned out, but the embedded mode has no fan-out (FEED_MODEL=pull only)');
    return this.fanout;
  }
}

/**
 * The answer to a publish whose key the author used before: the first blog, when the input is
 * the same; a key reused for another blog is the client's mistake, and a deleted blog stays
 * deleted (publishing it again would undo the delete).
 */
function retriedBlog(earlier: KeyedBlogRow, input: PublishBlogInput, key: string): Blog {
  const same =
    earlier.title === input.title &&
    earlier.content === input.content &&
    earlier.images === JSON.stringify(input.images ?? []);
  if (!same) {
    throw badUserInput(
      `idempotencyKey "${key}" was used for another blog of yours (blog ${earlier.id}, with other title, content or images): use a new key for a new blog`,
      'idempotencyKey',
    );
  }
  if (earlier.deleted_at !== null)
    throw notFound(`the blog published with idempotencyKey "${key}" (blog ${earlier.id}) was deleted`);
  return Blog.fromRow(earlier);
}

/** The distinct authors of these blogs. */
function authorsOf(blogs: readonly Blog[]): number[] {
  return [...new Set(blogs.map((blog) => blog.authorId))];
}
