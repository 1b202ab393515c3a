/**
 * The inbox in process memory: the specification of the Redis scripts (inbox.redis.ts), with
 * exactly their semantics, written to be read. test/integration/inbox-conformance.test.ts runs random
 * operation sequences against both and compares every answer and every state; the model test of
 * the feed rules (test/unit/feed-model.test.ts) runs FeedService on it.
 *
 * Expiry is not timed here: `expire` forgets an inbox as Redis would when its TTL runs out, and
 * `lose` forgets everything, as a Redis restart without persistence does.
 */
import { compareCanonical, FeedPosition, isAfter, ScoredId } from '../kernel/pagination/cursor';
import { BUILD_STALE_MS, BuildOutcome, buildStartedAt, Delivery, FeedSnapshot, FollowChange, Inbox, InboxRead, InboxView, UNSETTLED, Watermark } from './inbox';

/** One reader's inbox: the sorted set and the hash of the Redis version. */
export interface MemoryInboxState {
  entries: Map<number, number>;
  floor: number;
  base: number;
  maxver: number;
  since: number;
  building: string | null;
  /** Signed version of the last change applied per followee. */
  follows: Map<number, number>;
  /** Blogs delivered while building, with their author. */
  delivered: Map<number, number>;
  /** Blogs retracted while building. */
  retracted: Set<number>;
  /** Follow changes marked and not yet applied, and when the last was marked. */
  pending: number;
  pendingAt: number;
}

export class MemoryInbox implements Inbox {
  readonly states = new Map<number, MemoryInboxState>();
  /** The watermark: null when the set does not exist (lost, or never written). */
  watermark: { tasks: Map<number, number>; synced: boolean } | null = null;
  /** The big-author generation; null when none is set (never, or lost). */
  bigAuthors: string | null = null;
  private generations = 0;

  constructor(private readonly maxItems: number) {}

  /** Redis's TTL ran out for this inbox. */
  expire(readerId: number): void {
    this.states.delete(readerId);
  }

  /** Redis lost everything. */
  lose(): void {
    this.states.clear();
    this.watermark = null;
    this.bigAuthors = null;
  }

  /** Entries in canonical order. */
  sorted(readerId: number): ScoredId[] {
    const state = this.states.get(readerId);
    if (!state) return [];
    return [...state.entries].map(([id, score]) => ({ id, score })).sort(compareCanonical);
  }

  async read(readerId: number, from: FeedPosition, limit: number): Promise<InboxRead> {
    return { view: this.view(readerId, from, limit), watermark: this.readWatermark(), bigAuthors: this.bigAuthors };
  }

  async renewBigAuthors(reason: 'changing' | 'changed' | 'missing'): Promise<void> {
    if (reason === 'missing' && this.bigAuthors !== null) return;
    this.generations += 1; // never repeats, like Redis's random tokens
    this.bigAuthors = `${reason === 'changing' ? UNSETTLED : ''}${this.generations}`;
  }

  private view(readerId: number, from: FeedPosition, limit: number): InboxView {
    const state = this.states.get(readerId);
    if (!state) return { state: 'missing' };
    if (state.building !== null) return { state: 'building' };
    if (state.pending > 0) return { state: 'pending', since: state.pendingAt };
    let items = this.sorted(readerId).filter((item) => item.score >= state.floor);
    if (from.afterId !== null) {
      items = items.filter((item) => isAfter(item, from));
    } else if (from.maxScore !== null) {
      const maxScore = from.maxScore;
      items = items.filter((item) => item.score <= maxScore).slice(from.offset);
    } else {
      items = items.slice(from.offset);
    }
    return { state: 'valid', floor: state.floor, entries: items.slice(0, limit), version: Math.max(state.base, state.maxver) };
  }

  private readWatermark(): Watermark {
    if (!this.watermark || !this.watermark.synced) return { synced: false, oldest: null };
    const scores = [...this.watermark.tasks.values()];
    return { synced: true, oldest: scores.length === 0 ? null : Math.min(...scores) };
  }

  async deliver(readerIds: readonly number[], delivery: Delivery): Promise<void> {
    const { entry, authorId, readAt } = delivery;
    for (const readerId of readerIds) {
      const state = this.states.get(readerId);
      if (!state || entry.score < state.floor || state.since > readAt) continue;
      state.entries.set(entry.id, entry.score);
      if (state.building !== null) state.delivered.set(entry.id, authorId);
      this.trim(state);
    }
  }

  async retractUnfollowed(readerId: number, blogId: number, change: FollowChange, readAt: number): Promise<void> {
    const state = this.states.get(readerId);
    if (!state || state.since > readAt) return;
    if ((state.follows.get(change.authorId) ?? 0) > change.version) return;
    state.entries.delete(blogId);
    state.delivered.delete(blogId);
  }

  async retract(readerIds: readonly number[], blogId: number): Promise<void> {
    for (const readerId of readerIds) {
      const state = this.states.get(readerId);
      if (!state) continue;
      state.entries.delete(blogId);
      if (state.building !== null) {
        state.retracted.add(blogId);
        state.delivered.delete(blogId);
      }
    }
  }

  /** Records a change if it is newer than what the inbox has seen of the pair (see inbox.ts). */
  private admit(state: MemoryInboxState, change: FollowChange, sign: 1 | -1): boolean {
    if (change.version <= state.base) return false;
    const previous = state.follows.get(change.authorId);
    if (previous !== undefined && Math.abs(previous) >= change.version) return false;
    state.follows.set(change.authorId, sign * change.version);
    state.maxver = Math.max(state.maxver, change.version);
    return true;
  }

  async blogIds(readerId: number): Promise<number[] | null> {
    const state = this.states.get(readerId);
    return state ? [...state.entries.keys()] : null;
  }

  async applyFollow(
    readerId: number,
    change: FollowChange,
    entries: readonly ScoredId[],
    floor: number | null,
    stale: readonly number[] = [],
  ): Promise<boolean> {
    const state = this.states.get(readerId);
    if (!state || !this.admit(state, change, 1)) return false;
    // While building, the snapshot brings the followee's blogs (or the finish gives up).
    if (state.building !== null) return true;
    for (const id of stale) state.entries.delete(id);
    for (const entry of entries) if (entry.score >= state.floor) state.entries.set(entry.id, entry.score);
    if (floor !== null) this.raiseFloor(state, floor);
    this.trim(state);
    return true;
  }

  async markUnfollow(readerId: number, change: FollowChange): Promise<number[] | null> {
    const state = this.states.get(readerId);
    if (!state || !this.admit(state, change, -1)) return null;
    return [...state.entries.keys()];
  }

  async removeUnfollowed(readerId: number, change: FollowChange, blogIds: readonly number[]): Promise<void> {
    const state = this.states.get(readerId);
    if (!state || state.follows.get(change.authorId) !== -change.version) return;
    for (const id of blogIds) {
      state.entries.delete(id);
      state.delivered.delete(id);
    }
  }

  async markPending(readerId: number, atMs: number): Promise<void> {
    const state = this.states.get(readerId);
    if (!state) return;
    state.pending += 1;
    state.pendingAt = atMs;
  }

  async clearPending(readerId: number): Promise<void> {
    const state = this.states.get(readerId);
    if (state && state.pending > 0) state.pending -= 1;
  }

  async create(readerId: number, version: number): Promise<void> {
    if (this.states.has(readerId)) return;
    this.states.set(readerId, this.fresh(version, 0, null));
  }

  async beginBuild(readerId: number, token: string, since: number): Promise<boolean> {
    const state = this.states.get(readerId);
    if (state && state.building === null) return false;
    if (state && state.building !== null && buildStartedAt(token) - buildStartedAt(state.building) < BUILD_STALE_MS) return false;
    const fresh = this.fresh(0, since, token);
    // Changes still pending stay so: the rebuild does not apply them.
    if (state && state.pending > 0) [fresh.pending, fresh.pendingAt] = [state.pending, state.pendingAt];
    this.states.set(readerId, fresh);
    return true;
  }

  async finishBuild(readerId: number, token: string, snapshot: FeedSnapshot): Promise<BuildOutcome> {
    const state = this.states.get(readerId);
    if (!state || state.building !== token) return 'lost';
    if (state.maxver > snapshot.version) {
      this.states.delete(readerId);
      return 'raced';
    }
    const followed = new Set(snapshot.followeeIds);
    for (const [id, authorId] of state.delivered) if (!followed.has(authorId)) state.entries.delete(id);
    for (const entry of snapshot.entries) {
      if (!state.retracted.has(entry.id) && entry.score >= state.floor) state.entries.set(entry.id, entry.score);
    }
    state.delivered.clear();
    state.retracted.clear();
    state.follows.clear();
    state.base = snapshot.version;
    state.building = null;
    this.raiseFloor(state, snapshot.floor);
    this.trim(state);
    return 'done';
  }

  async drop(readerId: number): Promise<void> {
    this.states.delete(readerId);
  }

  async touch(): Promise<void> {}

  available(): boolean {
    return true;
  }

  async markInFlight(taskId: number, score: number): Promise<void> {
    this.watermark ??= { tasks: new Map(), synced: false };
    this.watermark.tasks.set(taskId, score);
  }

  async clearInFlight(taskIds: readonly number[]): Promise<void> {
    for (const id of taskIds) this.watermark?.tasks.delete(id);
  }

  async inFlight(): Promise<{ synced: boolean; tasks: Array<{ taskId: number; score: number }> }> {
    return {
      synced: this.watermark?.synced ?? false,
      tasks: [...(this.watermark?.tasks ?? [])].map(([taskId, score]) => ({ taskId, score })),
    };
  }

  async syncInFlight(tasks: ReadonlyArray<{ taskId: number; score: number }>, complete: boolean): Promise<void> {
    this.watermark ??= { tasks: new Map(), synced: false };
    for (const task of tasks) this.watermark.tasks.set(task.taskId, task.score);
    if (complete) this.watermark.synced = true;
  }

  async unsyncWatermark(): Promise<void> {
    if (this.watermark) this.watermark.synced = false;
  }

  private fresh(version: number, since: number, building: string | null): MemoryInboxState {
    return {
      entries: new Map(),
      floor: 0,
      base: version,
      maxver: version,
      since,
      building,
      follows: new Map(),
      delivered: new Map(),
      retracted: new Set(),
      pending: 0,
      pendingAt: 0,
    };
  }

  private raiseFloor(state: MemoryInboxState, floor: number): void {
    if (floor <= state.floor) return;
    state.floor = floor;
    for (const [id, score] of state.entries) if (score < floor) state.entries.delete(id);
  }

  /** Keeps the newest maxItems entries; the floor rises above what was cut. */
  private trim(state: MemoryInboxState): void {
    const extra = state.entries.size - this.maxItems;
    if (extra <= 0) return;
    const ascending = [...state.entries].map(([id, score]) => ({ id, score })).sort((a, b) => compareCanonical(b, a));
    this.raiseFloor(state, ascending[extra - 1].score + 1);
  }
}
