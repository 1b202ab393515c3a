/**
 * Fan-out: after a blog is published (or deleted), put it into (or take it out of) the inbox of
 * every follower of its author.
 *
 * The request does not wait: `published` and `deleted` start the work and return at once, so
 * publishing costs the same for an author with 10 followers or 10 million. Followers are walked
 * in id order in keyset pages of FOLLOWER_PAGE (no OFFSET scans), and each page goes to Redis as
 * pipelines (Inbox.deliver), never one awaited command per follower as in the seed.
 *
 * This in-process version loses the rest of a fan-out if the process dies mid-way; the durable
 * pipeline (outbox table + queue) replaces it without changing this interface.
 */
import { ScoredId } from '../feed/cursor';
import { Inbox } from '../feed/inbox';
import { FollowService } from '../follow/follow.service';

/** Followers read from MySQL per keyset page; one page is one Redis pipeline. */
export const FOLLOWER_PAGE = 1000;

export interface FanoutBlog {
  dbId: number;
  authorId: number;
  score: number;
}

export type FanoutLog = (message: string, error: unknown) => void;

export class FanoutService {
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly follows: Pick<FollowService, 'followerIdsAfter'>,
    private readonly inbox: Inbox,
    private readonly logError: FanoutLog,
  ) {}

  published(blog: FanoutBlog): void {
    const entry: ScoredId = { id: blog.dbId, score: blog.score };
    this.track(`deliver blog ${blog.dbId}`, this.forEachFollowerPage(blog.authorId, (ids) => this.inbox.deliver(ids, entry)));
  }

  deleted(blog: FanoutBlog): void {
    this.track(`retract blog ${blog.dbId}`, this.forEachFollowerPage(blog.authorId, (ids) => this.inbox.retract(ids, blog.dbId)));
  }

  /** Resolves when every fan-out started so far has finished (tests, graceful shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async forEachFollowerPage(authorId: number, write: (ids: number[]) => Promise<void>): Promise<void> {
    let after = 0;
    for (;;) {
      const ids = await this.follows.followerIdsAfter(authorId, after, FOLLOWER_PAGE);
      if (ids.length > 0) await write(ids);
      if (ids.length < FOLLOWER_PAGE) return;
      after = ids[ids.length - 1];
    }
  }

  private track(what: string, work: Promise<void>): void {
    const tracked = work.catch((error) => this.logError(`fan-out failed: ${what}`, error));
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
  }
}
