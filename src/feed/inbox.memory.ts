/**
 * The inbox in process memory: the specification of the Redis scripts (inbox.redis.ts,
 * scripts/*.lua), with exactly their semantics, written to be read.
 * test/integration/feed/inbox-conformance.test.ts runs random operation sequences against both and
 * compares every answer and every state; the model test of the feed rules
 * (test/unit/feed/feed-rules-model.test.ts) runs FeedService on it.
 *
 * Expiry is not timed here: `expire` forgets an inbox as Redis would when its TTL runs out,
 * `evict` drops one of its keys as an evicting maxmemory-policy would, `lose` forgets
 * everything (a restart without persistence), and `snapshot`/`restore` bring back an older copy
 * (a restart from an older dump). Its clock (`clockMs`, Redis's TIME) only moves when told.
 */
import { compareCanonical, FeedPosition, isAfter, ScoredId } from '../kernel/pagination/cursor';
import {
  AuthorInFlight,
  BUILD_STALE_MS,
  BuildOutcome,
  Delivery,
  DeliveryOutcome,
  FeedSnapshot,
  FollowChange,
  FollowOutcome,
  Inbox,
  InboxRead,
  InboxView,
  Listing,
  TaskInFlight,
  UNSETTLED,
  Watermark,
} from './inbox';

/** One reader's keys: the sorted set, the hash and the followee set of the Redis version. */
export interface MemoryInboxState {
  /** The hash's `floor` field: null in a hash that only holds pending marks (no inbox). */
  floor: number | null;
  entries: Map<number, number>;
  /** Whether the sorted set's sentinel is there (false: Redis evicted the set). */
  entriesIntact: boolean;
  followees: Set<number>;
  /** Whether the followee set's sentinel is there. */
  followeesIntact: boolean;
  epoch: number;
  base: number;
  maxver: number;
  building: string | null;
  buildAt: number;
  /** Signed version of the last change applied per followee (and, from a rebuild, each muted follow's unfollow). */
  follows: Map<number, number>;
  /** When the followees were installed (the hash's a:at:<epoch>); null where nothing installed them. */
  installedAt: number | null;
  /** Blogs delivered while building, with their author. */
  delivered: Map<number, number>;
  /** Blogs retracted while building. */
  retracted: Set<number>;
  /**
   * Blogs written while a follow change was pending, whose author the followees did not hold,
   * with their author: taken out when the last mark is cleared if the followees still lack the
   * author (deliver.lua's u:<member>, clear-pending.lua).
   */
  unsure: Map<number, number>;
  /** Ids of the follow changes marked and not yet applied, and when the oldest run began. */
  marks: Set<number>;
  pendingAt: number;
}

interface MemoryWatermark {
  /** task id -> its author and score */
  tasks: Map<number, { authorId: number; score: number }>;
  /** Generations whose "synced" marker the set holds. */
  markers: Set<number>;
}

export class MemoryInbox implements Inbox {
  states = new Map<number, MemoryInboxState>();
  /** The watermark: null when the keys do not exist (lost, or never written). */
  watermark: MemoryWatermark | null = null;
  /** The big-author generation; null when none is set (never, or lost). */
  bigAuthors: string | null = null;
  /** Each author's pulled-blog token (absent: none set, or lost). */
  pulledTokens = new Map<number, string>();
  /** Redis's clock (TIME), in ms. */
  clockMs = 0;
  /** The highest clockMs the inboxes' clock has given (the clock key of the Redis version). */
  lastClockMs = 0;
  /** Readers the live bus has marked live (their `live:{id}` key exists). */
  readonly liveReaders = new Set<number>();
  private tokens = 0;

  constructor(
    private readonly maxItems: number,
    private readonly buildStaleMs = BUILD_STALE_MS,
  ) {}

  /** Redis's TTL ran out for this inbox. */
  expire(readerId: number): void {
    this.states.delete(readerId);
  }

  /** An evicting maxmemory-policy took one of the inbox's keys. */
  evict(readerId: number, key: 'entries' | 'followees'): void {
    const state = this.states.get(readerId);
    if (!state) return;
    if (key === 'entries') {
      state.entries.clear();
      state.entriesIntact = false;
    } else {
      state.followees.clear();
      state.followeesIntact = false;
    }
  }

  /** Redis lost everything. */
  lose(): void {
    this.lastClockMs = 0;
    this.states = new Map();
    this.watermark = null;
    this.bigAuthors = null;
    this.pulledTokens = new Map();
  }

  /** A copy of everything, as a dump would hold it. */
  snapshot(): {
    states: Map<number, MemoryInboxState>;
    watermark: MemoryWatermark | null;
    bigAuthors: string | null;
    pulledTokens: Map<number, string>;
    lastClockMs: number;
  } {
    return {
      lastClockMs: this.lastClockMs,
      states: cloneStates(this.states),
      watermark: cloneWatermark(this.watermark),
      bigAuthors: this.bigAuthors,
      pulledTokens: new Map(this.pulledTokens),
    };
  }

  /** Redis restarted from that dump: everything written since is gone. */
  restore(dump: ReturnType<MemoryInbox['snapshot']>): void {
    this.lastClockMs = dump.lastClockMs;
    this.states = cloneStates(dump.states);
    this.watermark = cloneWatermark(dump.watermark);
    this.bigAuthors = dump.bigAuthors;
    this.pulledTokens = new Map(dump.pulledTokens);
  }

  /** Entries in canonical order. */
  sorted(readerId: number): ScoredId[] {
    const state = this.states.get(readerId);
    if (!state) return [];
    return [...state.entries].map(([id, score]) => ({ id, score })).sort(compareCanonical);
  }

  async read(
    readerId: number,
    from: FeedPosition,
    limit: number,
    epoch: number,
    pulledOf?: readonly number[],
  ): Promise<InboxRead> {
    const view = this.view(readerId, from, limit, epoch);
    return {
      view,
      watermark: this.readWatermark(readerId, view, epoch),
      bigAuthors: this.bigAuthorsOf(epoch),
      ...(pulledOf && pulledOf.length > 0 ? { pulledTokens: this.tokensOf(pulledOf, epoch) } : {}),
    };
  }

  async followedAmong(readerId: number, authorIds: readonly number[], epoch: number): Promise<Set<number> | null> {
    if (authorIds.length === 0) return new Set();
    if (this.view(readerId, { maxScore: null, offset: 0, afterId: null }, 1, epoch).state !== 'valid') return null;
    const followees = this.states.get(readerId)!.followees;
    return new Set(authorIds.filter((id) => followees.has(id)));
  }

  private bigAuthorsOf(epoch: number): string | null {
    return this.bigAuthors !== null && this.bigAuthors.startsWith(`${epoch}:`) ? this.bigAuthors : null;
  }

  async renewBigAuthors(reason: 'changing' | 'changed' | 'missing', epoch: number): Promise<void> {
    this.bigAuthors = this.renewed(this.bigAuthors, reason, epoch);
  }

  async pulledBlogTokens(authorIds: readonly number[], epoch: number): Promise<Array<string | null>> {
    return this.tokensOf(authorIds, epoch);
  }

  private tokensOf(authorIds: readonly number[], epoch: number): Array<string | null> {
    return authorIds.map((id) => {
      const token = this.pulledTokens.get(id);
      return token !== undefined && token.startsWith(`${epoch}:`) ? token : null;
    });
  }

  async renewPulledBlogs(authorId: number, reason: 'changing' | 'changed' | 'missing', epoch: number): Promise<void> {
    this.pulledTokens.set(authorId, this.renewed(this.pulledTokens.get(authorId) ?? null, reason, epoch));
  }

  /** A generation token replaced for `reason` (big-authors-missing.lua for 'missing'). */
  private renewed(current: string | null, reason: 'changing' | 'changed' | 'missing', epoch: number): string {
    if (reason === 'missing') {
      const of = /^~?(\d+):/.exec(current ?? '');
      if (current !== null && of && Number(of[1]) === epoch) return current;
    }
    this.tokens += 1; // never repeats, like Redis's random tokens
    return `${reason === 'changing' ? UNSETTLED : ''}${epoch}:${this.tokens}`;
  }

  private present(readerId: number): MemoryInboxState | null {
    const state = this.states.get(readerId);
    return state && state.floor !== null ? state : null;
  }

  /** An inbox that exists and is intact; one Redis evicted a key of is dropped (its marks kept), and is not. */
  private intact(readerId: number): MemoryInboxState | null {
    const state = this.present(readerId);
    if (!state || (state.entriesIntact && state.followeesIntact)) return state;
    this.dropKeepingMarks(readerId);
    return null;
  }

  private view(readerId: number, from: FeedPosition, limit: number, epoch: number): InboxView {
    const state = this.present(readerId);
    if (!state || state.epoch !== epoch) return { state: 'missing' };
    if (state.building !== null) return { state: 'building', ageMs: this.clockMs - state.buildAt };
    if (state.marks.size > 0) return { state: 'pending', ageMs: this.clockMs - state.pendingAt };
    if (!state.entriesIntact || !state.followeesIntact) return { state: 'missing' };
    const floor = state.floor!;
    let items = this.sorted(readerId).filter((item) => item.score >= floor);
    if (from.afterId !== null) {
      items = items.filter((item) => isAfter(item, from));
    } else if (from.maxScore !== null) {
      const maxScore = from.maxScore;
      items = items.filter((item) => item.score <= maxScore).slice(from.offset);
    } else {
      items = items.slice(from.offset);
    }
    return { state: 'valid', floor, entries: items.slice(0, limit), version: Math.max(state.base, state.maxver) };
  }

  private readWatermark(readerId: number, view: InboxView, epoch: number): Watermark {
    if (!this.watermark || !this.watermark.markers.has(epoch)) return { synced: false };
    if (view.state !== 'valid') return { synced: true, followees: [] };
    const followees = this.states.get(readerId)!.followees;
    return { synced: true, followees: this.authorsInFlight().filter((author) => followees.has(author.authorId)) };
  }

  /** Each author with a task in flight and the lowest score in flight, by author id. */
  private authorsInFlight(): AuthorInFlight[] {
    const lowest = new Map<number, number>();
    for (const { authorId, score } of this.watermark?.tasks.values() ?? [])
      lowest.set(authorId, Math.min(score, lowest.get(authorId) ?? Infinity));
    return [...lowest]
      .map(([authorId, score]) => ({ authorId, score }))
      .sort((a, b) => a.score - b.score || a.authorId - b.authorId);
  }

  async deliver(readerIds: readonly number[], delivery: Delivery): Promise<DeliveryOutcome> {
    const { entry, authorId } = delivery;
    const outcome: DeliveryOutcome = { written: [], unsure: [], live: [] };
    for (const readerId of readerIds) {
      const state = this.present(readerId);
      if (!state) {
        // No inbox to write, but a live subscriber still hears of it (deliver.lua).
        if (this.liveReaders.has(readerId)) outcome.live.push(readerId);
        continue;
      }
      if (entry.score < state.floor!) continue;
      const building = state.building !== null;
      const pending = state.marks.size > 0;
      if (!building && !pending && !this.follows(state, authorId, delivery.listed)) continue;
      const added = !state.entries.has(entry.id);
      state.entries.set(entry.id, entry.score);
      if (added && !state.entriesIntact) {
        // The sorted set was evicted: the inbox is gone, its pending marks stay.
        this.dropKeepingMarks(readerId);
        continue;
      }
      if (added) this.trim(state);
      if (building) state.delivered.set(entry.id, authorId);
      if (pending && !building && !state.followees.has(authorId) && !state.unsure.has(entry.id))
        state.unsure.set(entry.id, authorId);
      (pending && !building ? outcome.unsure : outcome.written).push(readerId);
      if (this.liveReaders.has(readerId)) outcome.live.push(readerId);
    }
    return outcome;
  }

  /** Whether a valid inbox's reader follows the author, as deliver.lua's follows() tells it. */
  private follows(state: MemoryInboxState, authorId: number, listed: Listing | undefined): boolean {
    const pair = state.follows.get(authorId);
    if (pair !== undefined) return pair > 0;
    if (listed && state.installedAt !== null && state.epoch === listed.epoch && state.installedAt < listed.at)
      return true;
    return state.followees.has(authorId);
  }

  async clock(): Promise<number> {
    return this.monotonicMs();
  }

  /** The inboxes' clock: clockMs, never going back (clock.lua). */
  private monotonicMs(): number {
    this.lastClockMs = Math.max(this.lastClockMs, this.clockMs);
    return this.lastClockMs;
  }

  async retractUnfollowed(readerId: number, blogId: number, change: FollowChange): Promise<void> {
    const state = this.present(readerId);
    if (!state || state.base > change.version) return;
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
    const state = this.present(readerId);
    return state ? [...state.entries.keys()] : null;
  }

  async applyFollow(
    readerId: number,
    change: FollowChange,
    entries: readonly ScoredId[],
    floor: number | null,
    stale: readonly number[] = [],
  ): Promise<FollowOutcome> {
    const state = this.intact(readerId);
    if (!state) return 'stale';
    if (state.follows.get(change.authorId) === change.version) return 'reapplied';
    if (!this.admit(state, change, 1)) return 'stale';
    state.followees.add(change.authorId);
    // While building, the snapshot brings the followee's blogs (or the finish gives up).
    if (state.building !== null) return 'applied';
    for (const id of stale) state.entries.delete(id);
    for (const entry of entries) if (entry.score >= state.floor!) state.entries.set(entry.id, entry.score);
    if (floor !== null) this.raiseFloor(state, floor);
    this.trim(state);
    return 'applied';
  }

  async markUnfollow(readerId: number, change: FollowChange): Promise<number[] | null> {
    const state = this.intact(readerId);
    if (!state) return null;
    if (state.follows.get(change.authorId) !== -change.version && !this.admit(state, change, -1)) return null;
    state.followees.delete(change.authorId);
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

  async markPending(readerId: number, changeId: number): Promise<void> {
    const state = this.states.get(readerId) ?? this.marksOnly();
    this.states.set(readerId, state);
    if (state.marks.has(changeId)) return;
    if (state.marks.size === 0) state.pendingAt = this.clockMs;
    state.marks.add(changeId);
  }

  async clearPending(readerId: number, changeId: number): Promise<void> {
    const state = this.states.get(readerId);
    if (!state || !state.marks.delete(changeId)) return;
    if (state.marks.size === 0) {
      state.pendingAt = 0;
      for (const [blogId, authorId] of state.unsure) if (!state.followees.has(authorId)) state.entries.delete(blogId);
      state.unsure.clear();
    }
    this.forgetIfEmpty(readerId, state);
  }

  async pendingChanges(readerId: number): Promise<number[]> {
    return [...(this.states.get(readerId)?.marks ?? [])];
  }

  async create(readerId: number, version: number, epoch: number): Promise<void> {
    const state = this.states.get(readerId);
    if (
      state &&
      state.epoch === epoch &&
      (state.building !== null || (state.floor !== null && state.entriesIntact && state.followeesIntact))
    )
      return;
    this.install(readerId, { base: version, maxver: version, epoch, building: null, buildAt: 0 });
    this.states.get(readerId)!.installedAt = this.monotonicMs();
  }

  async beginBuild(readerId: number, token: string, epoch: number): Promise<boolean> {
    const state = this.states.get(readerId);
    if (state && state.epoch === epoch) {
      if (state.building !== null) {
        if (this.clockMs - state.buildAt < this.buildStaleMs) return false;
      } else if (state.floor !== null && state.entriesIntact && state.followeesIntact) {
        return false;
      }
    }
    this.install(readerId, { base: 0, maxver: 0, epoch, building: token, buildAt: this.clockMs });
    return true;
  }

  async finishBuild(readerId: number, token: string, snapshot: FeedSnapshot): Promise<BuildOutcome> {
    const state = this.states.get(readerId);
    if (!state || state.building !== token) return 'lost';
    if (state.maxver > snapshot.version || !state.entriesIntact) {
      this.dropKeepingMarks(readerId);
      return 'raced';
    }
    const followed = new Set(snapshot.followeeIds);
    state.followees = new Set(followed);
    state.followeesIntact = true;
    for (const [id, authorId] of state.delivered) if (!followed.has(authorId)) state.entries.delete(id);
    for (const entry of snapshot.entries) {
      if (!state.retracted.has(entry.id) && entry.score >= state.floor!) state.entries.set(entry.id, entry.score);
    }
    state.delivered.clear();
    state.retracted.clear();
    state.follows.clear();
    for (const mutedId of snapshot.mutedIds) state.follows.set(mutedId, -snapshot.version);
    state.installedAt = this.monotonicMs();
    state.base = snapshot.version;
    state.building = null;
    state.buildAt = 0;
    this.raiseFloor(state, snapshot.floor);
    this.trim(state);
    return 'done';
  }

  async drop(readerId: number): Promise<void> {
    this.dropKeepingMarks(readerId);
  }

  async touch(): Promise<void> {}

  available(): boolean {
    return true;
  }

  async markInFlight(task: TaskInFlight): Promise<void> {
    this.watermark ??= { tasks: new Map(), markers: new Set() };
    this.watermark.tasks.set(task.taskId, { authorId: task.authorId, score: task.score });
  }

  async clearInFlight(tasks: ReadonlyArray<Pick<TaskInFlight, 'taskId' | 'authorId'>>): Promise<void> {
    for (const { taskId, authorId } of tasks) {
      if (this.watermark?.tasks.get(taskId)?.authorId === authorId) this.watermark.tasks.delete(taskId);
    }
  }

  async isWatermarkSynced(epoch: number): Promise<boolean> {
    return this.watermark?.markers.has(epoch) ?? false;
  }

  async inFlight(epoch: number): Promise<{ synced: boolean; tasks: TaskInFlight[] }> {
    return {
      synced: this.watermark?.markers.has(epoch) ?? false,
      tasks: [...(this.watermark?.tasks ?? [])].map(([taskId, { authorId, score }]) => ({ taskId, authorId, score })),
    };
  }

  async syncInFlight(tasks: readonly TaskInFlight[], complete: boolean, epoch: number): Promise<void> {
    for (const task of tasks) await this.markInFlight(task);
    if (!complete) return;
    this.watermark ??= { tasks: new Map(), markers: new Set() };
    this.watermark.markers = new Set([epoch]);
  }

  async unsyncWatermark(): Promise<void> {
    this.watermark?.markers.clear();
  }

  private marksOnly(): MemoryInboxState {
    return {
      floor: null,
      entries: new Map(),
      entriesIntact: false,
      followees: new Set(),
      followeesIntact: false,
      epoch: 0,
      base: 0,
      maxver: 0,
      building: null,
      buildAt: 0,
      follows: new Map(),
      installedAt: null,
      delivered: new Map(),
      retracted: new Set(),
      unsure: new Map(),
      marks: new Set(),
      pendingAt: 0,
    };
  }

  /** A fresh inbox (as the scripts' install): every key anew, the pending marks kept. */
  private install(
    readerId: number,
    fields: Pick<MemoryInboxState, 'base' | 'maxver' | 'epoch' | 'building' | 'buildAt'>,
  ): void {
    const old = this.states.get(readerId);
    const fresh: MemoryInboxState = {
      ...this.marksOnly(),
      ...fields,
      installedAt: null,
      floor: 0,
      entriesIntact: true,
      followeesIntact: true,
    };
    if (old) [fresh.marks, fresh.pendingAt] = [old.marks, old.pendingAt];
    this.states.set(readerId, fresh);
  }

  private dropKeepingMarks(readerId: number): void {
    const old = this.states.get(readerId);
    if (!old || old.marks.size === 0) {
      this.states.delete(readerId);
      return;
    }
    const marks = this.marksOnly();
    [marks.marks, marks.pendingAt] = [old.marks, old.pendingAt];
    this.states.set(readerId, marks);
  }

  /** A hash with neither an inbox nor marks no longer exists (Redis deletes empty hashes). */
  private forgetIfEmpty(readerId: number, state: MemoryInboxState): void {
    if (state.floor === null && state.marks.size === 0) this.states.delete(readerId);
  }

  private raiseFloor(state: MemoryInboxState, floor: number): void {
    if (floor <= state.floor!) return;
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

function cloneStates(states: Map<number, MemoryInboxState>): Map<number, MemoryInboxState> {
  return new Map(
    [...states].map(([id, state]) => [
      id,
      {
        ...state,
        entries: new Map(state.entries),
        followees: new Set(state.followees),
        follows: new Map(state.follows),
        delivered: new Map(state.delivered),
        retracted: new Set(state.retracted),
        unsure: new Map(state.unsure),
        marks: new Set(state.marks),
      },
    ]),
  );
}

function cloneWatermark(watermark: MemoryWatermark | null): MemoryWatermark | null {
  return watermark && { tasks: new Map(watermark.tasks), markers: new Set(watermark.markers) };
}
