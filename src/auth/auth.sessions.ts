/**
 * Ended sessions, as every API process knows them, without a statement or a Redis command per
 * request.
 *
 * A token carries its user's token version at issue time (`tv`) and an id of its own (`jti`).
 * The truth is in MySQL (auth.store.ts): `logoutEverywhere` counts tb_user.token_version up,
 * which ends every token issued before; `logout` writes the token's id into tb_revoked_token
 * until the token expires. A token is accepted when its version is the user's current one and
 * its id is not revoked.
 *
 * Each process keeps what it read of a user (their version and revoked ids) in memory and
 * answers from there. A process that ends sessions tells every process over Redis pub/sub
 * (auth.bus.ts), and each forgets the user at once; the bus also says when messages may have
 * been lost, and then every process forgets everyone. So what a process read stays true as long
 * as it is listening, and it reads a user again (one statement, at their next request) when:
 * - it does not know the user (their first request in this process);
 * - it heard that the user's sessions changed, or that it may have missed news;
 * - it is not listening (Redis away, its subscription lost) and the read is older than
 *   SESSION_RECHECK_SECONDS (recheckMs): the bound on a logout reaching a process that cannot
 *   hear it;
 * - the read is older than MAX_TRUST_MS, whatever the bus says: the bound on the one loss the
 *   bus cannot reveal (a process whose message failed, and which died before sending again).
 * A read that began before the news came is never kept (a ticket marks it stale), so an answer
 * that predates a logout cannot outlive the request that waited for it.
 *
 * Live subscriptions hold a token for hours: the process watches the sessions of its open
 * sockets, checks them again when news of their user comes or news may have been missed, and
 * when their state could be stale by the rules above (a sweep every recheckMs, one statement per
 * LOAD_BATCH users), and closes those that ended. The embedded mode has no bus and one process,
 * whose own changes are the only ones: it trusts its reads for MAX_TRUST_MS.
 */
import type { AuthStore, SessionState } from './auth.store';
import type { SessionBus } from './auth.bus';

/** Why a session ended; its message tells the client what happened. */
export type SessionEnd = 'logout' | 'everywhere';

export const SESSION_END_REASON: Record<SessionEnd, string> = {
  logout: 'this session has ended (logged out); log in again',
  everywhere: 'every session of this user has ended (logged out everywhere); log in again',
};

/** What of a token a session check needs. */
export interface Session {
  userId: number;
  /** The token's id (its jti claim). */
  sessionId: string;
  /** The user's token version when the token was issued (its tv claim). */
  tokenVersion: number;
}

/** Users' states kept per process; past it, those read longest ago leave first. */
const MAX_KNOWN_USERS = 100_000;

/**
 * The longest a process trusts a read while listening: one statement per active user per
 * process per this period, and the bound on a logout whose message was lost with its sender.
 */
export const MAX_TRUST_MS = 10 * 60_000;

/** Users read in one statement by the periodic check of live sockets. */
const LOAD_BATCH = 1000;

interface Known extends SessionState {
  /** When the read began (epoch ms): the state is at least this fresh. */
  readAt: number;
}

interface Ticket {
  promise: Promise<Known | null>;
  /** News about the user came while this read ran: its answer is used once, never kept. */
  stale: boolean;
}

interface Watcher {
  session: Session;
  ended(why: SessionEnd): void;
  /** `ended` was called: it is called once. */
  told: boolean;
}

export interface SessionsOptions {
  /** SESSION_RECHECK_SECONDS in ms. */
  recheckMs: number;
  warn: (message: string, error?: unknown) => void;
  now?: () => number;
}

export class Sessions {
  private readonly known = new Map<number, Known>();
  private readonly reading = new Map<number, Ticket>();
  private readonly watchers = new Map<number, Set<Watcher>>();
  private readonly recheckMs: number;
  private readonly now: () => number;
  private sweep: NodeJS.Timeout | undefined;
  /** When the live sockets were last checked (epoch ms). */
  private sweptAt = 0;

  constructor(
    private readonly store: AuthStore,
    /** null in the embedded mode: one process, nobody to tell. */
    private readonly bus: SessionBus | null,
    private readonly options: SessionsOptions,
  ) {
    this.recheckMs = options.recheckMs;
    this.now = options.now ?? Date.now;
    bus?.listen({ changed: (userId) => this.heard(userId), missed: () => this.forgetAll() });
  }

  /**
   * Why the token's session ended, or null while it goes on. Synchronous when the user's state
   * is in memory and fresh (the steady state: no statement, no Redis command).
   */
  check(session: Session): SessionEnd | null | Promise<SessionEnd | null> {
    const known = this.known.get(session.userId);
    if (known && this.now() - known.readAt < this.trustMs()) return verdict(known, session);
    return this.read(session.userId).then((state) => (state ? verdict(state, session) : 'everywhere'));
  }

  /** How old a read may be and still be trusted now (see the rules above). */
  private trustMs(): number {
    return !this.bus || this.bus.listening() ? MAX_TRUST_MS : this.recheckMs;
  }

  /**
   * Sessions of the user ended here (committed): this process forgets the user and closes the
   * ended live sockets, and the others hear of it.
   */
  async ended(userId: number): Promise<void> {
    this.forget(userId);
    await this.bus?.publish(userId);
    await this.recheckWatchers([userId]);
  }

  /** Calls `ended` once if the session ends while watched (a live socket); returns the function that stops watching. */
  watch(session: Session, ended: (why: SessionEnd) => void): () => void {
    const watcher: Watcher = { session, ended, told: false };
    let set = this.watchers.get(session.userId);
    if (!set) this.watchers.set(session.userId, (set = new Set()));
    set.add(watcher);
    this.startSweep();
    return () => {
      set.delete(watcher);
      if (set.size === 0 && this.watchers.get(session.userId) === set) this.watchers.delete(session.userId);
      if (this.watchers.size === 0) this.stopSweep();
    };
  }

  async close(): Promise<void> {
    this.stopSweep();
    this.watchers.clear();
    await this.bus?.close();
  }

  /** A message about the user: forget them; check their live sockets. */
  private heard(userId: number): void {
    this.forget(userId);
    if (this.watchers.has(userId)) void this.recheckWatchers([userId]);
  }

  private forget(userId: number): void {
    this.known.delete(userId);
    const ticket = this.reading.get(userId);
    if (ticket) ticket.stale = true;
  }

  private forgetAll(): void {
    this.known.clear();
    for (const ticket of this.reading.values()) ticket.stale = true;
    this.sweptAt = this.now();
    void this.recheckWatchers([...this.watchers.keys()]);
  }

  /** The user's state from MySQL; concurrent requests for one user share one read. null: no such user. */
  private read(userId: number): Promise<Known | null> {
    const running = this.reading.get(userId);
    if (running && !running.stale) return running.promise;
    const readAt = this.now();
    const ticket: Ticket = {
      stale: false,
      promise: this.store.sessionStates([userId], new Date(readAt)).then(
        (states) => {
          this.settle(userId, ticket);
          const state = states.get(userId);
          if (!state) return null;
          const known = { ...state, readAt };
          if (!ticket.stale) this.remember(userId, known);
          return known;
        },
        (error: unknown) => {
          this.settle(userId, ticket);
          throw error;
        },
      ),
    };
    this.reading.set(userId, ticket);
    return ticket.promise;
  }

  private settle(userId: number, ticket: Ticket): void {
    if (this.reading.get(userId) === ticket) this.reading.delete(userId);
  }

  private remember(userId: number, known: Known): void {
    this.known.delete(userId); // re-inserted last: the map's order is the order of reads
    if (this.known.size >= MAX_KNOWN_USERS) {
      const cutoff = this.now() - this.recheckMs;
      for (const [id, state] of this.known) if (state.readAt <= cutoff) this.known.delete(id);
      if (this.known.size >= MAX_KNOWN_USERS) this.known.delete(this.known.keys().next().value!);
    }
    this.known.set(userId, known);
  }

  /** Reads these users' states afresh and ends the live sockets whose sessions ended. Never throws. */
  private async recheckWatchers(userIds: readonly number[]): Promise<void> {
    const watched = userIds.filter((id) => this.watchers.has(id));
    for (let start = 0; start < watched.length; start += LOAD_BATCH) {
      const batch = watched.slice(start, start + LOAD_BATCH);
      let states: Map<number, SessionState>;
      try {
        states = await this.store.sessionStates(batch, new Date(this.now()));
      } catch (error) {
        this.options.warn(
          `checking the sessions of ${batch.length} live subscribers failed; tried again in ${this.recheckMs} ms`,
          error,
        );
        continue;
      }
      for (const userId of batch) {
        const state = states.get(userId);
        for (const watcher of [...(this.watchers.get(userId) ?? [])]) {
          const why = state ? verdict(state, watcher.session) : 'everywhere';
          if (why && !watcher.told) {
            watcher.told = true;
            watcher.ended(why);
          }
        }
      }
    }
  }

  private startSweep(): void {
    if (this.sweep) return;
    this.sweep = setInterval(() => {
      if (this.now() - this.sweptAt < this.trustMs()) return;
      this.sweptAt = this.now();
      void this.recheckWatchers([...this.watchers.keys()]);
    }, this.recheckMs);
    this.sweep.unref();
  }

  private stopSweep(): void {
    clearInterval(this.sweep);
    this.sweep = undefined;
  }
}

function verdict(state: SessionState, session: Session): SessionEnd | null {
  if (session.tokenVersion < state.tokenVersion) return 'everywhere';
  return state.revoked.has(session.sessionId) ? 'logout' : null;
}
