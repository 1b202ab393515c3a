/**
 * The Redis generation this process trusts (inbox.ts, "Generations").
 *
 * Redis can come back with less than it had and not know it: a restart from an older dump, a
 * failover to a replica that missed writes, a restore from backup. What it then holds (inboxes,
 * their floors, the watermark's marker, the big-author token) is consistent with itself and
 * wrong. The one sign is that the server is not the one it was: its run id (new at every start)
 * or its replication id changed. So a generation number lives in MySQL with the identity of the
 * Redis it was started on (tb_feed_generation), every inbox and marker is stamped with the
 * generation it was written in, and a read trusts only those of the current one.
 *
 * How every process learns of a new server:
 * - when its connection is re-established (a restarted or failed-over server always drops it):
 *   from that moment until the check below is done the process trusts no inbox (current() is
 *   null and pages come from MySQL), so not one page reads a restored inbox;
 * - every GENERATION_CHECK_MS otherwise (a proxy in front of Redis can hide a reconnect).
 * A check asks the server(s) for their identity (one INFO per server); unchanged, nothing else
 * happens. Changed, it reads the MySQL row: if another process has already moved the generation
 * to this identity it takes that number, else it raises it with a compare-and-set (one process
 * wins; the others read its number). A page costs nothing for this: the generation is a number
 * the process holds and sends with its read.
 *
 * A new generation is conservative: a restart that lost nothing (a clean SHUTDOWN with its dump
 * up to date) also makes every inbox be rebuilt as its reader comes back, since nothing tells
 * the two apart.
 */
import type { GenerationRecord } from './feed.store';

export type { GenerationRecord } from './feed.store';

/** How often a process checks that Redis is still the server it trusts, besides at every reconnect. */
export const GENERATION_CHECK_MS = 1000;

export class InboxGeneration {
  private epoch: number | null = null;
  private trustedIdentity: string | null = null;
  private checking: Promise<void> | null = null;
  /** Counts reconnects: a check that began before one must not confirm anything. */
  private connections = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: Array<(epoch: number) => void> = [];

  constructor(
    /** The identity of the Redis server(s) now (redis/redis.identity.ts). */
    private readonly identity: () => Promise<string>,
    private readonly record: GenerationRecord,
    private readonly warn: (message: string, error?: unknown) => void,
  ) {}

  /** The generation to read and write inboxes in; null until a check has confirmed it (pages go to MySQL). */
  current(): number | null {
    return this.epoch;
  }

  /** Calls `listener` with each generation this process moves to (the first included). */
  onChange(listener: (epoch: number) => void): void {
    this.listeners.push(listener);
  }

  /** The connection was re-established: nothing is trusted until Redis has been checked again. */
  reconnected(): void {
    this.connections += 1;
    this.epoch = null;
    this.trustedIdentity = null;
    void this.check().then(() => {
      // A check that was running when the connection dropped confirmed nothing: check again.
      if (this.epoch === null) void this.check();
    });
  }

  /** Checks at once, then every `intervalMs`. */
  start(intervalMs = GENERATION_CHECK_MS): void {
    void this.check();
    this.timer = setInterval(() => void this.check(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Resolves with the confirmed generation (checking first when there is none). */
  async confirmed(): Promise<number> {
    if (this.epoch === null) await this.check();
    if (this.epoch === null)
      throw new Error('the Redis generation could not be confirmed (Redis or MySQL unreachable)');
    return this.epoch;
  }

  /** One check, shared by callers that come while it runs. Never throws (warns; the next check tries again). */
  check(): Promise<void> {
    this.checking ??= this.checkOnce()
      .catch((error: unknown) => {
        this.epoch = null;
        this.warn('checking the Redis generation failed; inboxes are not trusted until it succeeds', error);
      })
      .finally(() => {
        this.checking = null;
      });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    const connection = this.connections;
    const identity = await this.identity();
    if (identity === this.trustedIdentity && this.epoch !== null) return;
    this.epoch = null;
    const epoch = await this.adopt(identity);
    if (connection !== this.connections) return;
    const previous = this.trustedIdentity;
    this.trustedIdentity = identity;
    this.epoch = epoch;
    if (previous !== null && previous !== identity)
      this.warn(`Redis is not the server it was (${previous} -> ${identity}): generation ${epoch}`);
    for (const listener of this.listeners) listener(epoch);
  }

  /** The generation of this identity: the recorded one, or one more, recorded by whichever process comes first. */
  private async adopt(identity: string): Promise<number> {
    for (;;) {
      const row = await this.record.generation();
      if (row.identity === identity) return row.epoch;
      if (await this.record.advanceGeneration(row.identity, identity)) {
        // The first server a database meets is no news; any other one is.
        if (row.identity !== '') {
          this.warn(
            `Redis restarted, failed over or was restored: inboxes of generation ${row.epoch} and older are rebuilt as their readers come back (generation ${row.epoch + 1})`,
          );
        }
        return row.epoch + 1;
      }
    }
  }
}
