/** Redis, the push and hybrid models: the inboxes are kept, and pages read them (feed.keeping.ts). */
import { KeptInboxes } from './feed.keeping.kept';
import type { Inbox } from './inbox';

export class ReadInboxes extends KeptInboxes {
  /** Redis down or hanging: the page comes from MySQL, degraded, not broken. */
  override pageInbox(): Inbox | null {
    return this.inbox.available() ? this.inbox : null;
  }

  /**
   * A new user's inbox: valid and empty (their feed is empty), so fan-out reaches it. With Redis
   * down or not yet trusted, like any missing inbox, it is built on the first feed read.
   */
  override async openInbox(userId: number, epoch: number | null): Promise<void> {
    if (epoch === null || !this.inbox.available()) {
      this.warn(`Redis is unavailable: the inbox of new user ${userId} is built on their first feed read`);
      return;
    }
    await this.inbox.create(userId, 0, epoch);
  }
}
