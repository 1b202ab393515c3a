/**
 * The live bus inside one process, for the embedded mode (no Redis; one process by design):
 * the semantics of live.bus.ts with the process's own subscriptions as the only readers. A
 * reader is live while it has a subscription open here; nothing needs a time to live, since
 * the marks die with the process.
 */
import { LIVE_BUFFER_EVENTS, LiveBus, LiveChannel, LiveEvent, LiveSink, LiveSubscription, LiveWarn } from './live.bus';
import { LocalReaders } from './live.local';

export class MemoryLiveBus implements LiveBus {
  private readonly readers: LocalReaders;

  constructor(warn: LiveWarn, options: { bufferEvents?: number } = {}) {
    this.readers = new LocalReaders({ open: async () => {}, shut: async () => {} }, warn, {
      capacity: options.bufferEvents ?? LIVE_BUFFER_EVENTS,
    });
  }

  listen(readerId: number, sink: LiveSink): Promise<LiveChannel> {
    return this.readers.listen(readerId, sink);
  }

  connect(readerId: number): Promise<LiveSubscription> {
    return this.readers.connect(readerId);
  }

  async liveAmong(readerIds: readonly number[]): Promise<number[]> {
    return [...new Set(readerIds)].filter((readerId) => this.readers.has(readerId));
  }

  async publish(readerIds: readonly number[], event: LiveEvent): Promise<number> {
    return this.publishToLive(await this.liveAmong(readerIds), event);
  }

  async publishToLive(liveReaderIds: readonly number[], event: LiveEvent): Promise<number> {
    const live = [...new Set(liveReaderIds)].filter((readerId) => this.readers.has(readerId));
    // A copy, as a message decoded from Redis would be: the publisher may reuse its object.
    for (const readerId of live) this.readers.deliver(readerId, { ...event });
    return live.length;
  }

  held(): number[] {
    return this.readers.ids();
  }

  close(): Promise<void> {
    return this.readers.closeAll();
  }
}
