/**
 * How API processes tell each other that a user's sessions changed (a logout, a logout
 * everywhere): Redis pub/sub on one channel (redis/keys.ts `sessions`). A message says only
 * "read this user's sessions again": it is idempotent. The embedded mode has one process and no
 * bus.
 *
 * Pub/sub keeps nothing for a subscriber that is away, so the bus must know when it may have
 * missed something, and say so (`missed()`: the listener then forgets everything it learnt):
 * - Each message is `<process> <seq> <userId>`, numbered per sending process. A number skipped
 *   means a message of that process was lost on its way (its PUBLISH failed, or this
 *   subscriber was away): missed.
 * - Every process sends a heartbeat (user id 0) every HEARTBEAT_MS, so a subscriber that hears
 *   nothing for SILENCE_MS is not listening (`listening()` false: the listener then trusts
 *   nothing it read more than SESSION_RECHECK_SECONDS ago), and a subscriber that hears again
 *   after such a silence has missed what was sent during it.
 * - A subscription made again after a reconnection: missed.
 * The one loss this cannot reveal is a process whose PUBLISH failed and that then died without
 * sending again; auth.sessions.ts bounds that case (MAX_TRUST_MS).
 *
 * Receiving needs a connection of its own (a subscriber can send nothing else), a duplicate of
 * the service's client. On a Redis Cluster a classic PUBLISH reaches every node, so the channel
 * needs no hash tag; ioredis moves the cluster's subscription to another node when its node
 * fails (silently: the heartbeats reveal the gap).
 */
import { randomBytes } from 'node:crypto';
import { withTimeout } from '../kernel/timeout';
import { redisAvailable } from '../redis/breaker';
import type { RedisKeys } from '../redis/keys';
import { isCluster, RedisClient } from '../redis/redis.client';

export interface SessionBusListener {
  /** Some process (this one included) changed the sessions of `userId`. */
  changed(userId: number): void;
  /** Messages may have been lost: forget everything learnt before. */
  missed(): void;
}

export interface SessionBus {
  /** Tells every process, this one included, that the user's sessions changed. Never throws. */
  publish(userId: number): Promise<void>;
  /** Starts listening (once). */
  listen(listener: SessionBusListener): void;
  /** Whether messages reach this process now: subscribed, and heard within SILENCE_MS. */
  listening(): boolean;
  close(): Promise<void>;
}

/** How often each process sends a heartbeat: one PUBLISH per process, whatever its traffic. */
export const HEARTBEAT_MS = 5000;

/** Heard nothing for this long (two heartbeats and a half): not listening. */
export const SILENCE_MS = 2.5 * HEARTBEAT_MS;

/** How long closing the subscriber may wait for Redis. */
const CLOSE_TIMEOUT_MS = 2000;

/** Senders not heard for this long are forgotten (they stopped); their next message, if any, starts them afresh. */
const FORGET_SENDER_MS = 10 * 60_000;

export interface RedisSessionBusDeps {
  redis: RedisClient;
  keys: RedisKeys;
  warn: (message: string, error?: unknown) => void;
  /** The clock in milliseconds (Date.now unless a test sets it). */
  now?: () => number;
}

export class RedisSessionBus implements SessionBus {
  /** Names this process in its messages: a restarted process is a new sender. */
  private readonly processId = randomBytes(6).toString('base64url');
  private sequence = 0;
  private subscriber: RedisClient | undefined;
  private subscribed = false;
  private heardAt = 0;
  /** Each sender's last sequence number and when it was heard. */
  private readonly senders = new Map<string, { seq: number; at: number }>();
  private heartbeat: NodeJS.Timeout | undefined;

  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly warn: (message: string, error?: unknown) => void;
  private readonly now: () => number;

  constructor(deps: RedisSessionBusDeps) {
    this.redis = deps.redis;
    this.keys = deps.keys;
    this.warn = deps.warn;
    this.now = deps.now ?? Date.now;
  }

  /** `userId` 0: a heartbeat. */
  async publish(userId: number): Promise<void> {
    if (!redisAvailable(this.redis)) {
      // Nobody would hear it now: a change skips its number, which tells the others, when this
      // process is heard again, that they missed something. A heartbeat carries no news.
      if (userId !== 0) this.sequence += 1;
      return;
    }
    this.sequence += 1;
    const message = `${this.processId} ${this.sequence} ${userId}`;
    await this.redis.publish(this.keys.sessions(), message).then(
      () => undefined,
      (error: unknown) => {
        if (userId !== 0)
          this.warn(
            `telling other processes that the sessions of user ${userId} ended failed; they find out by the skipped message number`,
            error,
          );
      },
    );
  }

  listening(): boolean {
    return this.subscribed && this.now() - this.heardAt < SILENCE_MS;
  }

  listen(listener: SessionBusListener): void {
    if (this.subscriber) return;
    const channel = this.keys.sessions();
    const subscriber: RedisClient = isCluster(this.redis)
      ? this.redis.duplicate([], {
          enableAutoPipelining: false,
          redisOptions: { connectionName: 'sessions', enableAutoPipelining: false },
        })
      : this.redis.duplicate({ enableAutoPipelining: false, autoResubscribe: false, connectionName: 'sessions' });
    this.subscriber = subscriber;
    subscriber.on('message', (from: string, message: string) => {
      if (from === channel) this.received(message, listener);
    });
    let down = false;
    // Subscribes at every (re)connection; what was sent while it was away is lost.
    subscriber.on('ready', () => {
      subscriber.subscribe(channel).then(
        () => {
          down = false;
          this.subscribed = true;
          this.heardAt = this.now();
          listener.missed();
        },
        (error: unknown) =>
          this.warn('subscribing to session changes failed; it is tried again at the next reconnection', error),
      );
    });
    subscriber.on('close', () => {
      this.subscribed = false;
    });
    subscriber.on('error', (error: Error) => {
      if (!down) this.warn(`the session-change subscriber lost Redis (${error.message}); it reconnects`, error);
      down = true;
    });
    this.heartbeat = setInterval(() => void this.publish(0), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    this.subscribed = false;
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber)
      await withTimeout(subscriber.quit(), CLOSE_TIMEOUT_MS, 'session changes: Redis').catch(() =>
        subscriber.disconnect(),
      );
  }

  private received(message: string, listener: SessionBusListener): void {
    const [sender, seqText, userText] = message.split(' ');
    const seq = Number(seqText);
    const userId = Number(userText);
    if (!sender || !Number.isSafeInteger(seq) || !Number.isSafeInteger(userId) || userId < 0) {
      this.warn(`ignored a message on the session channel that is not one: ${message.slice(0, 100)}`);
      return;
    }
    const now = this.now();
    const silent = now - this.heardAt >= SILENCE_MS;
    this.heardAt = now;
    const last = this.senders.get(sender);
    this.senders.set(sender, { seq, at: now });
    if (silent || (last && seq !== last.seq + 1)) listener.missed();
    if (userId > 0) listener.changed(userId);
    if (this.senders.size > 1000)
      for (const [id, heard] of this.senders) if (now - heard.at > FORGET_SENDER_MS) this.senders.delete(id);
  }
}
