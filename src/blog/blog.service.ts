/** Blogs: publishing, deleting, lookups and a user's own blogs page. */
import { Database, isDuplicateKey, Sql } from '../db/database';
import type { FanoutService } from '../fanout/fanout.service';
import type { LiveFeed } from '../feed/feed.live';
import type { FeedService } from '../feed/feed.service';
import { badUserInput, forbidden, notFound } from '../kernel/errors';
import { ScoredId } from '../kernel/pagination/cursor';
import { fetchSize, Page, PageRequest, slicePage } from '../kernel/pagination/page';
import { checkNoControlCharacters, checkText } from '../kernel/validation';
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

/** A blog item of a page: its position data plus the loaded blog. */
export interface BlogItem extends ScoredId {
  blog: Blog;
}

/**
 * The rules of a new blog. Text takes no control characters but newline and tab (a URL none);
 * blogs stored before that rule are served as they are.
 */
export function validatePublishInput(input: PublishBlogInput): void {
  checkText('title', input.title, { min: 1, max: TITLE_MAX, notBlank: true });
  checkNoControlCharacters('title', input.title, { newlineAndTab: true });
  checkText('content', input.content, { min: 1, max: CONTENT_MAX, notBlank: true });
  checkNoControlCharacters('content', input.content, { newlineAndTab: true });
  const images = input.images ?? [];
  if (images.length > IMAGES_MAX) {
    throw badUserInput(`images must hold at most ${IMAGES_MAX} URLs (got ${images.length})`, 'images');
  }
  images.forEach((image, i) => {
    checkText(`images[${i}]`, image, { min: 1, max: IMAGE_URL_MAX, notBlank: true });
    checkNoControlCharacters(`images[${i}]`, image, { newlineAndTab: false });
  });
}

export function validateIdempotencyKey(key: string | null | undefined): void {
  if (key === null || key === undefined || IDEMPOTENCY_KEY_PATTERN.test(key)) return;
  const shown = key.length > 70 ? `${key.slice(0, 70)}...` : key;
  throw badUserInput(
    `idempotencyKey must be 1..64 characters of A-Z, a-z, 0-9, _ and - (got ${JSON.stringify(shown)}, ${key.length} characters)`,
    'idempotencyKey',
  );
}

export class BlogService {
  constructor(
    /** Runs the transactions. */
    private readonly db: Database,
    private readonly store: BlogStore,
    /** null in the embedded mode, where nothing is fanned out (the pull model). */
    private readonly fanout: FanoutService | null,
    /** Decides which blogs are fanned out, and tracks their delivery (the watermark). */
    private readonly feed: Pick<FeedService, 'decidePush' | 'bigAuthorChange' | 'deliveryStarted' | 'inInboxes'>,
    /** Live subscribers to tell of a blog that no fan-out delivers, and of a deleted blog. */
    private readonly live: Pick<LiveFeed, 'published' | 'deleted'>,
    private readonly now: () => Date,
  ) {}

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
    let becameBig = false;
    const { blog, taskId } = await this.db
      .transaction(async (sql) => {
        const decision = await this.feed.decidePush(sql, authorId);
        const { pushed } = decision;
        becameBig = decision.becameBig;
        const row: Omit<BlogRow, 'id'> = {
          user_id: authorId,
          title: input.title,
          content: input.content,
          images: JSON.stringify(input.images ?? []),
          liked: 0,
          // DATETIME(3) keeps the milliseconds of this Date, so the stored row equals this one.
          created_at: this.now(),
          pushed,
        };
        // First of the writes that reach beyond MySQL: a duplicate key rolls back before them.
        const blog = Blog.fromRow({ ...row, id: await this.store.insert(sql, row, idempotencyKey) });
        // Readers stop trusting their kept lists of big followees until this one is committed.
        if (becameBig) await this.feed.bigAuthorChange('changing');
        if (!pushed) return { blog, taskId: null };
        const recorded = await this.requireFanout().recordDeliver(sql, blog);
        // The last step before the commit: from the moment the blog is visible in MySQL, readers
        // know that its delivery is in flight (the fan-out watermark).
        await this.feed.deliveryStarted(sql, { taskId: recorded, authorId, score: blog.score });
        return { blog, taskId: recorded };
      })
      // The author's first blog that readers pull is committed (or rolled back): kept lists of
      // big followees lack them.
      .finally(() => becameBig && this.feed.bigAuthorChange('changed'));
    if (taskId !== null) this.requireFanout().enqueue(taskId);
    // Nobody fans this blog out (the pull model, a big author): it is in every follower's feed
    // from its commit, and live followers hear of it now.
    else await this.live.published({ id: blog.dbId, score: blog.score, authorId: blog.authorId });
    return blog;
  }

  /** Soft-deletes the viewer's own blog with its retract event; it leaves every inbox right after. */
  async delete(viewerId: number, blogId: number): Promise<void> {
    const blog = await this.findById(blogId);
    if (!blog) throw notFound(`blog ${blogId} does not exist`);
    if (blog.authorId !== viewerId) throw forbidden('only the author may delete a blog');
    const taskId = await this.db.transaction(async (sql) => {
      if (!(await this.store.softDelete(sql, blogId, this.now()))) throw notFound(`blog ${blogId} does not exist`);
      // A blog that no inbox holds (hybrid: a big author's) needs no walk over the followers.
      return this.feed.inInboxes(blog) ? this.requireFanout().recordRetract(sql, blog) : null;
    });
    if (taskId !== null) this.requireFanout().enqueue(taskId);
    // Watching followers hear that it left their feed (followFeedRemoved), in every process.
    await this.live.deleted({ id: blogId, authorId: blog.authorId });
  }

  /** Live (not deleted) blogs by id, in one statement. */
  findByIds(ids: readonly number[], sql?: Sql): Promise<Map<number, Blog>> {
    return this.store.findByIds(ids, sql);
  }

  async findById(id: number, sql?: Sql): Promise<Blog | null> {
    return (await this.findByIds([id], sql)).get(id) ?? null;
  }

  /** A page's blogs with their authors and the viewer's likes and follows, in one statement. */
  forViewer(viewerId: number, ids: readonly number[]): Promise<BlogsForViewer> {
    return this.store.forViewer(viewerId, ids);
  }

  /** A page of one user's own blogs, newest first, with the same cursor as the feed. */
  async pageOfAuthor(authorId: number, request: PageRequest): Promise<Page<BlogItem>> {
    const blogs = await this.store.pageOfAuthor(authorId, request.from, fetchSize(request));
    return slicePage(
      request,
      blogs.map((blog) => ({ id: blog.dbId, score: blog.score, blog })),
    );
  }

  private requireFanout(): FanoutService {
    if (!this.fanout) throw new Error('this blog is to be fanned out, but the embedded mode has no fan-out (FEED_MODEL=pull only)');
    return this.fanout;
  }
}

/**
 * The answer to a publish whose key the author used before: the first blog, when the input is
 * the same; a key reused for another blog is the client's mistake, and a deleted blog stays
 * deleted (publishing it again would undo the delete).
 */
function retriedBlog(earlier: KeyedBlogRow, input: PublishBlogInput, key: string): Blog {
  const same = earlier.title === input.title && earlier.content === input.content && earlier.images === JSON.stringify(input.images ?? []);
  if (!same) {
    throw badUserInput(
      `idempotencyKey "${key}" was used for another blog of yours (blog ${earlier.id}, with other title, content or images): use a new key for a new blog`,
      'idempotencyKey',
    );
  }
  if (earlier.deleted_at !== null) throw notFound(`the blog published with idempotencyKey "${key}" (blog ${earlier.id}) was deleted`);
  return Blog.fromRow(earlier);
}
