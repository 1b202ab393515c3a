/**
 * A subscription's queue: the one place its events wait to be read, however many channels feed
 * it (a live-feed subscription listens on its viewer's channel and on its followees', see
 * feed/feed.live.ts). Reading waits on this queue alone, so what a subscription holds is its
 * unread events (at most a capacity) and at most one waiting reader: nothing that grows with the
 * events it has shown or with the channels that come and go.
 */
import { LIVE_BUFFER_EVENTS, LiveEvent, LiveSink, LiveSubscription, LiveWarn } from './live.bus';

const DONE: IteratorResult<LiveEvent> = Object.freeze({ value: undefined, done: true });

export interface LiveQueueOptions {
  /** Whose events, for the warning (a reader id). */
  readerId: number;
  warn: LiveWarn;
  /** Unread events kept (LIVE_BUFFER_EVENTS). */
  capacity?: number;
  /** What ending the queue also ends: its channels. Runs once, on the first close(), end() or return(). */
  onClose?: () => Promise<void>;
}

/**
 * Events buffered up to a capacity while nobody reads: a full queue drops its oldest event, with
 * one warning per run of drops (the next one waits until the reader has caught up). The bus never
 * waits for a slow reader.
 */
export class LiveQueue implements LiveSink, LiveSubscription {
  readonly readerId: number;
  dropped = 0;
  /** Unread events, oldest first; `head` is the next to read (a ring of `capacity` slots). */
  private readonly ring: Array<LiveEvent | undefined>;
  private head = 0;
  private size = 0;
  /** Readers waiting in next(): only while the queue is empty. */
  private readonly waiting: Array<(result: IteratorResult<LiveEvent>) => void> = [];
  private closing: Promise<void> | undefined;
  /** A warning was given for the current run of drops. */
  private warned = false;
  private readonly warn: LiveWarn;
  private readonly onClose: () => Promise<void>;

  constructor(options: LiveQueueOptions) {
    this.readerId = options.readerId;
    this.warn = options.warn;
    this.ring = new Array<LiveEvent | undefined>(options.capacity ?? LIVE_BUFFER_EVENTS);
    this.onClose = options.onClose ?? (() => Promise.resolve());
  }

  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** An event for this queue's reader. Never blocks: a full queue loses its oldest event. */
  push(event: LiveEvent): void {
    if (this.closed) return;
    const reader = this.waiting.shift();
    if (reader) return reader({ value: event, done: false });
    if (this.size === this.ring.length) {
      this.head = (this.head + 1) % this.ring.length;
      this.size -= 1;
      this.dropped += 1;
      if (!this.warned) {
        this.warned = true;
        this.warn(
          `live feed: a subscription of reader ${this.readerId} is not read; its oldest unread events are dropped (${this.dropped} so far)`,
        );
      }
    }
    this.ring[(this.head + this.size) % this.ring.length] = event;
    this.size += 1;
  }

  /** The bus closed a channel of this queue from its side: the subscription ends. */
  end(): void {
    void this.close();
  }

  next(): Promise<IteratorResult<LiveEvent>> {
    if (this.size > 0) {
      const event = this.ring[this.head]!;
      this.ring[this.head] = undefined;
      this.head = (this.head + 1) % this.ring.length;
      this.size -= 1;
      return Promise.resolve({ value: event, done: false });
    }
    // Caught up: a later overflow is a new episode, worth a warning of its own.
    this.warned = false;
    if (this.closed) return Promise.resolve(DONE);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** graphql-js calls this when the client completes the subscription or goes away. */
  async return(): Promise<IteratorResult<LiveEvent>> {
    await this.close();
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Ends the iteration (a waiting next() resolves done), drops what was not read, and runs onClose; idempotent. */
  close(): Promise<void> {
    if (!this.closing) {
      this.ring.fill(undefined);
      this.size = 0;
      for (const reader of this.waiting.splice(0)) reader(DONE);
      this.closing = this.onClose();
    }
    return this.closing;
  }
}
