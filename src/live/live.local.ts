/**
 * The part of a live bus that lives in one process, shared by both implementations so that
 * they cannot differ in it: the subscriptions of each reader, counted, and each subscription's
 * bounded buffer. The implementations supply what opening and closing a reader's channel means
 * (Redis: subscribe and mark; memory: nothing).
 */
import { withTimeout } from '../kernel/timeout';
import { LIVE_BUFFER_EVENTS, LIVE_STEP_TIMEOUT_MS, LiveEvent, LiveSubscription, LiveWarn } from './live.bus';

/** A subscription's events, buffered up to a capacity while nobody reads (see LIVE_BUFFER_EVENTS). */
export class BufferedSubscription implements LiveSubscription {
  private readonly buffer: LiveEvent[] = [];
  /** Readers waiting in next(): only while the buffer is empty. */
  private readonly waiting: Array<(result: IteratorResult<LiveEvent>) => void> = [];
  private closing: Promise<void> | undefined;
  /** A warning was given for the current run of drops; the next one waits until the reader catches up. */
  private warned = false;
  dropped = 0;

  constructor(
    readonly readerId: number,
    private readonly capacity: number,
    private readonly warn: LiveWarn,
    private readonly onClose: (subscription: BufferedSubscription) => Promise<void>,
  ) {}

  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** An event for this subscription's reader. Never blocks: a full buffer loses its oldest event. */
  push(event: LiveEvent): void {
    if (this.closed) return;
    const reader = this.waiting.shift();
    if (reader) {
      reader({ value: event, done: false });
      return;
    }
    if (this.buffer.length >= this.capacity) {
      this.buffer.shift();
      this.dropped += 1;
      if (!this.warned) {
        this.warned = true;
        this.warn(`live feed: a subscription of reader ${this.readerId} is not read; its oldest unread events are dropped (${this.dropped} so far)`);
      }
    }
    this.buffer.push(event);
  }

  next(): Promise<IteratorResult<LiveEvent>> {
    const event = this.buffer.shift();
    if (event) return Promise.resolve({ value: event, done: false });
    // Caught up: a later overflow is a new episode, worth a warning of its own.
    this.warned = false;
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** graphql-js calls this when the client completes the subscription or goes away. */
  async return(): Promise<IteratorResult<LiveEvent>> {
    await this.close();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  close(): Promise<void> {
    if (!this.closing) {
      this.buffer.length = 0;
      for (const reader of this.waiting.splice(0)) reader({ value: undefined, done: true });
      this.closing = this.onClose(this);
    }
    return this.closing;
  }
}

/** What opening and closing one reader's channel in this process takes. */
export interface ChannelHooks {
  /** The reader's first subscription in this process is opening. Throws when it cannot. */
  open(readerId: number): Promise<void>;
  /** The reader's last subscription in this process closed (or the open failed). Never throws. */
  shut(readerId: number): Promise<void>;
}

interface Reader {
  subscriptions: Set<BufferedSubscription>;
  /** Settles when the channel is open (or failed to open). */
  opened: Promise<void>;
}

export interface LocalReadersOptions {
  /** Unread events a subscription keeps (LIVE_BUFFER_EVENTS). */
  capacity?: number;
  /** How long one open, shut or refresh of a reader may take (LIVE_STEP_TIMEOUT_MS). */
  stepTimeoutMs?: number;
}

/**
 * The readers this process holds live, with their subscriptions: the first subscription of a
 * reader opens its channel, the last one's close shuts it. Opens and shuts of one reader run one
 * after the other.
 */
export class LocalReaders {
  private readonly readers = new Map<number, Reader>();
  /** The last open or shut of each reader, which the next one waits for. */
  private readonly queues = new Map<number, Promise<void>>();
  private readonly capacity: number;
  private readonly stepTimeoutMs: number;

  constructor(
    private readonly hooks: ChannelHooks,
    private readonly warn: LiveWarn,
    options: LocalReadersOptions = {},
  ) {
    this.capacity = options.capacity ?? LIVE_BUFFER_EVENTS;
    this.stepTimeoutMs = options.stepTimeoutMs ?? LIVE_STEP_TIMEOUT_MS;
  }

  /** Readers with at least one subscription in this process. */
  ids(): number[] {
    return [...this.readers.keys()];
  }

  has(readerId: number): boolean {
    return this.readers.has(readerId);
  }

  get size(): number {
    return this.readers.size;
  }

  async connect(readerId: number): Promise<LiveSubscription> {
    let reader = this.readers.get(readerId);
    if (!reader) {
      reader = { subscriptions: new Set(), opened: this.inTurn(readerId, () => this.hooks.open(readerId)) };
      this.readers.set(readerId, reader);
    }
    const entry = reader;
    const subscription = new BufferedSubscription(readerId, this.capacity, this.warn, (closed) => this.release(readerId, entry, closed));
    entry.subscriptions.add(subscription);
    try {
      await entry.opened;
    } catch (error) {
      // The last subscription of a failed open shuts what the open may have done halfway.
      await subscription.close();
      throw error;
    }
    return subscription;
  }

  /** An event for a reader: to each of its subscriptions in this process (one object; events are read-only). */
  deliver(readerId: number, event: LiveEvent): void {
    const reader = this.readers.get(readerId);
    if (!reader) return;
    for (const subscription of reader.subscriptions) subscription.push(event);
  }

  /** Closes every subscription (the bus is closing); resolves when every channel is shut. */
  async closeAll(): Promise<void> {
    const subscriptions = [...this.readers.values()].flatMap((reader) => [...reader.subscriptions]);
    await Promise.all(subscriptions.map((subscription) => subscription.close()));
  }

  private release(readerId: number, reader: Reader, subscription: BufferedSubscription): Promise<void> {
    reader.subscriptions.delete(subscription);
    if (reader.subscriptions.size > 0 || this.readers.get(readerId) !== reader) return Promise.resolve();
    this.readers.delete(readerId);
    // A shut never throws of itself, but it may run out of time: a close still succeeds (the
    // mark expires, and the reader's next steps are free to go).
    return this.inTurn(readerId, () => this.hooks.shut(readerId)).catch((error: unknown) =>
      this.warn(`live feed: closing reader ${readerId}: ${error instanceof Error ? error.message : String(error)}`, error),
    );
  }

  /**
   * Runs `step` after the reader's previous open or shut settled, and before any later one
   * starts; its failure is the caller's alone. (A refresh of a reader's mark goes through here,
   * so it can never land after the unmark of a close that came after it.) A step that has not
   * settled after stepTimeoutMs fails, so that a Redis that does not answer cannot hold the
   * reader's next steps for ever; what it sent is still queued on its connection ahead of what
   * the next steps send there, so Redis still sees them in order.
   */
  inTurn(readerId: number, step: () => Promise<void>): Promise<void> {
    const result = (this.queues.get(readerId) ?? Promise.resolve()).then(() =>
      withTimeout(step(), this.stepTimeoutMs, `live feed: Redis (reader ${readerId})`),
    );
    const settled = result.then(
      () => {},
      () => {},
    );
    this.queues.set(readerId, settled);
    // Forget a reader's queue once nothing is waiting on it, so the map holds live readers only.
    void settled.then(() => {
      if (this.queues.get(readerId) === settled) this.queues.delete(readerId);
    });
    return result;
  }
}
