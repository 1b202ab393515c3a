/**
 * Every page of blogs becomes a connection here: followFeed's and User.blogs'. The domain hands
 * over a page of ids (with the cursor after each); the blogs come through the request's loaders,
 * so a page costs one statement for its blogs (none when they were loaded with the page) and one
 * for the follow check, whatever its size.
 */
import { Blog, BlogConnection } from '../blog/blog.types';
import type { ScoredId } from '../kernel/pagination/cursor';
import { toConnection } from '../kernel/pagination/connection';
import type { Page } from '../kernel/pagination/page';

/** What the helper needs of the request's loaders (graphql/loaders.ts; the feed's model test passes its own). */
export interface BlogLookups {
  blog: { loadMany(ids: readonly number[]): Promise<Array<Blog | null | Error>> };
  followedByViewer: { loadMany(userIds: readonly number[]): Promise<Array<boolean | Error>> };
}

export interface BlogVisibility {
  /** Show only blogs whose author the viewer follows now (the feed); a user's own page shows all. */
  followedAuthorsOnly: boolean;
}

export async function blogConnection(
  page: Page<ScoredId>,
  lookups: BlogLookups,
  visibility: BlogVisibility,
): Promise<BlogConnection> {
  const blogs = await lookups.blog.loadMany(page.items.map((item) => item.id));
  const live = new Map<number, Blog>();
  for (const blog of blogs) if (blog instanceof Blog) live.set(blog.dbId, blog);
  const followedAuthors = visibility.followedAuthorsOnly ? await followedAmong(lookups, [...live.values()]) : null;
  // An entry can outlive its reason to be there for a moment (a delete, or an unfollow whose
  // inbox cleanup is still in flight): such an entry is hidden, never shown. Cursors name their
  // blog, so hiding one shifts no later page.
  return toConnection(page, (item) => {
    const blog = live.get(item.id);
    if (!blog || (followedAuthors && !followedAuthors.has(blog.authorId))) return null;
    return blog;
  });
}

async function followedAmong(lookups: BlogLookups, blogs: Blog[]): Promise<Set<number>> {
  const authorIds = [...new Set(blogs.map((blog) => blog.authorId))];
  const followed = await lookups.followedByViewer.loadMany(authorIds);
  return new Set(authorIds.filter((_, i) => followed[i] === true));
}
