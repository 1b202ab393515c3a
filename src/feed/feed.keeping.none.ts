/** No Redis (the embedded mode): no inboxes are kept, pages come from MySQL (feed.keeping.ts). */
import type { Sql } from '../db/database';
import type { InboxKeeping, RedisInboxes } from './feed.keeping';
import type { FollowChangeRow } from './feed.store';

export class NoInboxes implements InboxKeeping {
  redis(): RedisInboxes {
    throw new Error('this process keeps no inboxes (no Redis)');
  }

  available(): boolean {
    return false;
  }

  currentEpoch(): number | null {
    return null;
  }

  pageInbox(): null {
    return null;
  }

  start(): void {}

  stop(): void {}

  async check(): Promise<void> {}

  onCatchUpNeeded(): void {}

  /** No outbox row: no inbox is there to apply the change to (id 0). */
  async recordFollowChange(_sql: Sql, change: Omit<FollowChangeRow, 'id'>): Promise<FollowChangeRow> {
    return { id: 0, ...change };
  }

  async openInbox(): Promise<void> {}

  async renewBigAuthors(): Promise<void> {}

  async renewPulledBlogs(): Promise<void> {}

  async deliveryStarted(): Promise<void> {}

  async deliveryFinished(): Promise<void> {}

  async maintainWatermark(): Promise<void> {}

  async syncWatermark(): Promise<void> {}

  async finishedInWatermark(): Promise<number> {
    return 0;
  }

  async idle(): Promise<void> {}
}
