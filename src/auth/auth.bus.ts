/**
 * How API processes tell each other that a user's sessions changed (a logout, a logout
 * everywhere): Redis pub/sub on one channel (redis/keys.ts `sessions`), whose message is the
 * user's id. A message says only "read this user's sessions again": it is idempotent, and one
 * that is lost costs at most SESSION_RECHECK_SECONDS (see auth.sessions.ts). The embedded mode
 * has one process and no bus.
 *
 * Receiving needs a connection of its own (a subscriber can send nothing else), a duplicate of
 * the service's client. Pub/sub keeps nothing for a subscriber that is away, so after every
 * reconnect, once the channel is subscribed again, the listener hears `missed()` and forgets
 * what it knew. On a Redis Cluster a classic PUBLISH reaches every node, so the channel needs
 * no hash tag; ioredis moves the cluster's subscription to another node when its node fails.
 */
import { withTimeout } from '../kernel/timeout';
import { redisAvailable } from '../redis/breaker';
import type { RedisKeys } from '../redis/keys';
import { isCluster, RedisClient } from '../redis/redis.client';

export interface SessionBusListener {
  /** Another process (or this one) changed the sessions of `userId`. */
  changed(userId: number): void;
  /** Messages may have been lost (the subscriber reconnected): forget everything learnt before. */
  missed(): void;
}

export interface SessionBus {
  /** Tells every process, this one included, that the user's sessions changed. Never throws. */
  publish(userId: number): Promise<void>;
  /** Starts listening (once). */
  listen(listener: SessionBusListener): void;
  close(): Promise<void>;
}

/** How long closing the subscriber may wait for Redis. */
const CLOSE_TIMEOUT_MS = 2000;

export class RedisSessionBus implements SessionBus {
  private subscriber: RedisClient | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly warn: (message: string, error?: unknown) => void,
  ) {}

  async publish(userId: number): Promise<void> {
    // With the breaker open nobody would hear it: the others find out by SESSION_RECHECK_SECONDS.
    if (!redisAvailable(this.redis)) return;
    await this.redis.publish(this.keys.sessions(), String(userId)).then(
      () => undefined,
      (error: unknown) =>
        this.warn(`telling other processes that the sessions of user ${userId} ended failed; they find out within SESSION_RECHECK_SECONDS`, error),
    );
  }

  listen(listener: SessionBusListener): void {
    if (this.subscriber) return;
    const channel = this.keys.sessions();
    const subscriber: RedisClient = isCluster(this.redis)
      ? this.redis.duplicate([], { enableAutoPipelining: false, redisOptions: { connectionName: 'sessions', enableAutoPipelining: false } })
      : this.redis.duplicate({ enableAutoPipelining: false, autoResubscribe: false, connectionName: 'sessions' });
    this.subscriber = subscriber;
    subscriber.on('message', (from: string, message: string) => {
      const userId = Number(message);
      if (from === channel && Number.isSafeInteger(userId) && userId > 0) listener.changed(userId);
    });
    let subscribedOnce = false;
    let down = false;
    // Subscribes at every (re)connection; after a reconnection, what was sent meanwhile is lost.
    subscriber.on('ready', () => {
      subscriber.subscribe(channel).then(
        () => {
          down = false;
          if (subscribedOnce) listener.missed();
          subscribedOnce = true;
        },
        (error: unknown) => this.warn('subscribing to session changes failed; it is tried again at the next reconnection', error),
      );
    });
    subscriber.on('error', (error: Error) => {
      if (!down) this.warn(`the session-change subscriber lost Redis (${error.message}); it reconnects`, error);
      down = true;
    });
  }

  async close(): Promise<void> {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber) await withTimeout(subscriber.quit(), CLOSE_TIMEOUT_MS, 'session changes: Redis').catch(() => subscriber.disconnect());
  }
}
