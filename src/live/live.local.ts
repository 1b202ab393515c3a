/**
 * The part of a live bus that lives in one process, shared by both implementations so that
 * they cannot differ in it: the listeners of each reader, counted, each with the sink its events
 * go to. The implementations supply what opening and closing a reader's channel means (Redis:
 * subscribe and mark; memory: nothing).
 */
import { withTimeout } from '../kernel/timeout';
import {
  LIVE_BUFFER_EVENTS,
  LIVE_STEP_TIMEOUT_MS,
  LiveChannel,
  LiveEvent,
  LiveSink,
  LiveSubscription,
  LiveWarn,
} from './live.bus';
import { LiveQueue } from './live.queue';

/** What opening and closing one reader's channel in this process takes. */
export interface ChannelHooks {
  /** The reader's first subscription in this process is opening. Throws when it cannot. */
  open(readerId: number): Promise<void>;
  /** The reader's last subscription in this process closed (or the open failed). Never throws. */
  shut(readerId: number): Promise<void>;
}

/** One listen(): its own entry, so that a sink listening twice is two listeners. */
interface Listener {
  sink: LiveSink;
}

interface Reader {
  listeners: Set<Listener>;
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
 * The readers this process holds live, with their listeners: the first listener of a reader opens
 * its channel, the last one's close shuts it. Opens and shuts of one reader run one after the
 * other.
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

  async listen(readerId: number, sink: LiveSink): Promise<LiveChannel> {
    let reader = this.readers.get(readerId);
    if (!reader) {
      reader = { listeners: new Set(), opened: this.inTurn(readerId, () => this.hooks.open(readerId)) };
      this.readers.set(readerId, reader);
    }
    const entry = reader;
    const listener: Listener = { sink };
    entry.listeners.add(listener);
    let closing: Promise<void> | undefined;
    const channel: LiveChannel = { readerId, close: () => (closing ??= this.release(readerId, entry, listener)) };
    try {
      await entry.opened;
    } catch (error) {
      // The last listener of a failed open shuts what the open may have done halfway.
      await channel.close();
      throw error;
    }
    return channel;
  }

  /** A subscription with a queue of its own on the reader's channel. */
  async connect(readerId: number): Promise<LiveSubscription> {
    const held: { channel?: LiveChannel } = {};
    const queue = new LiveQueue({
      readerId,
      warn: this.warn,
      capacity: this.capacity,
      onClose: async () => held.channel?.close(),
    });
    held.channel = await this.listen(readerId, queue);
    // Closed while the channel opened (the bus is closing): let go of it too.
    if (queue.closed) await held.channel.close();
    return queue;
  }

  /** An event for a reader: to each of its listeners in this process (one object; events are read-only). */
  deliver(readerId: number, event: LiveEvent): void {
    const reader = this.readers.get(readerId);
    if (!reader) return;
    for (const listener of reader.listeners) listener.sink.push(event);
  }

  /** Ends every listener (the bus is closing): every channel is shut, and each sink told. */
  async closeAll(): Promise<void> {
    const all = [...this.readers.entries()].flatMap(([readerId, reader]) =>
      [...reader.listeners].map((listener) => ({ readerId, reader, listener })),
    );
    const shut = all.map(({ readerId, reader, listener }) => this.release(readerId, reader, listener));
    for (const { listener } of all) listener.sink.end();
    await Promise.all(shut);
  }

  private release(readerId: number, reader: Reader, listener: Listener): Promise<void> {
    if (!reader.listeners.delete(listener)) return Promise.resolve();
    if (reader.listeners.size > 0 || this.readers.get(readerId) !== reader) return Promise.resolve();
    this.readers.delete(readerId);
    // A shut never throws of itself, but it may run out of time: a close still succeeds (the
    // mark expires, and the reader's next steps are free to go).
    return this.inTurn(readerId, () => this.hooks.shut(readerId)).catch((error: unknown) =>
      this.warn(
        `live feed: closing reader ${readerId}: ${error instanceof Error ? error.message : String(error)}`,
        error,
      ),
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
