/**
 * The follow feed: reading a page, and keeping inboxes right when follows change.
 *
 * followFeed(V) = every live blog whose author V follows now, in canonical order
 * (created_at DESC, id DESC). A page is one ZRANGE on V's inbox, then the blogs and the
 * "does V still follow the author" answers through the request's loaders: a constant number of
 * round trips whatever `first` is.
 */
import { DataSource } from 'typeorm';
import { Blog } from '../blog/blog.types';
import { select } from '../db/sql';
import { Connection, toConnection } from '../graphql/connection';
import { ScoredId } from './cursor';
import { Inbox } from './inbox';
import { fetchSize, PageRequest, slicePage } from './page';

/** What a feed page needs from the request's loaders (src/graphql/loaders.ts). */
export interface FeedLookups {
  blog: { loadMany(ids: readonly number[]): Promise<Array<Blog | null | Error>> };
  followedByViewer: { loadMany(userIds: readonly number[]): Promise<Array<boolean | Error>> };
}

export class FeedService {
  constructor(
    private readonly db: DataSource,
    private readonly inbox: Inbox,
    /** FOLLOW_BACKFILL_ITEMS: how many of a new followee's newest blogs enter the inbox at once. */
    private readonly backfillItems: number,
  ) {}

  async followFeed(viewerId: number, request: PageRequest, lookups: FeedLookups): Promise<Connection<Blog>> {
    const page = slicePage(request, await this.inbox.read(viewerId, request.from, fetchSize(request)));
    const blogs = await lookups.blog.loadMany(page.items.map((item) => item.id));
    const live = new Map<number, Blog>();
    for (const blog of blogs) if (blog instanceof Blog) live.set(blog.dbId, blog);
    const authorIds = [...new Set([...live.values()].map((blog) => blog.authorId))];
    const followed = await lookups.followedByViewer.loadMany(authorIds);
    const followedAuthors = new Set(authorIds.filter((_, i) => followed[i] === true));
    // An entry can outlive its reason to be there for a moment (a delete or an unfollow whose
    // inbox cleanup is still in flight); such an entry is hidden, never shown.
    return toConnection(page, (item) => {
      const blog = live.get(item.id);
      return blog && followedAuthors.has(blog.authorId) ? blog : null;
    });
  }

  /** A new follow: the followee's newest blogs enter the follower's inbox at once. */
  async backfill(readerId: number, authorId: number): Promise<void> {
    if (this.backfillItems === 0) return;
    const rows = await select<{ id: string; created_at: Date }>(
      this.db,
      `SELECT id, created_at FROM tb_blog WHERE user_id = ? AND deleted_at IS NULL
       ORDER BY created_at DESC, id DESC LIMIT ?`,
      [authorId, this.backfillItems],
    );
    const entries: ScoredId[] = rows.map((row) => ({ id: Number(row.id), score: row.created_at.getTime() }));
    await this.inbox.addEntries(readerId, entries);
  }

  /** An unfollow: the followee's blogs leave the follower's inbox at once. */
  async removeAuthor(readerId: number, authorId: number): Promise<void> {
    const inInbox = await this.inbox.blogIds(readerId);
    if (inInbox.length === 0) return;
    const rows = await select<{ id: string }>(this.db, 'SELECT id FROM tb_blog WHERE user_id = ? AND id IN (?)', [
      authorId,
      inInbox,
    ]);
    await this.inbox.removeEntries(
      readerId,
      rows.map((row) => Number(row.id)),
    );
  }
}
