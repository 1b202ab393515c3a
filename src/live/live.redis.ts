/**
 * The live bus over Redis (the semantics of live.bus.ts), on one server or a cluster.
 *
 * Publishing and marking go through the service's client (its deadline and circuit breaker
 * included). Receiving needs a connection of its own, since a connection in subscriber mode can
 * send nothing else: it is a duplicate of the client, opened at the first connect, so that
 * processes that never hold a subscription (fan-out workers) open none.
 *
 * On one server: PUBLISH / SUBSCRIBE. On a cluster: sharded pub/sub (Redis 7), SPUBLISH /
 * SSUBSCRIBE. A classic PUBLISH on a cluster is copied over the cluster bus to every node, so
 * its cost grows with the cluster; a sharded message stays in the shard that owns the
 * channel's slot, which the hash tag makes the reader's. ioredis receives sharded messages on a
 * Cluster created with `shardedSubscribers: true`: one subscriber connection per master, each
 * opened when it first has a channel, replaced and resubscribed when it drops or the slots move
 * (its ClusterSubscriberGroup). The cluster's default subscriber cannot: it is one connection,
 * to one node, so SSUBSCRIBE gets MOVED for the other nodes' slots, and it does not pass
 * sharded messages on even for its own. Auto-pipelining, which the service's client has
 * on, is off on the subscriber (the cluster and its node connections alike): a subscriber has
 * nothing to batch, and ioredis exempts SUBSCRIBE from auto-pipelining but not SSUBSCRIBE, so
 * this keeps every subscribe command on its plain path.
 *
 * A single server's subscriber reconnects by itself (the client's retry strategy) and
 * resubscribes its channels (ioredis autoResubscribe). After either kind of reconnect the
 * process refreshes its readers' marks at once, in case Redis restarted empty.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { withTimeout } from '../kernel/timeout';
import { redisAvailable } from '../redis/breaker';
import { RedisKeys } from '../redis/keys';
import { loadScripts } from '../redis/lua';
import { isCluster, RedisClient } from '../redis/redis.client';
import {
  decodeLiveEvent,
  encodeLiveEvent,
  LIVE_BUFFER_EVENTS,
  LIVE_REFRESH_MS,
  LIVE_STEP_TIMEOUT_MS,
  LIVE_TTL_MS,
  LiveBus,
  LiveChannel,
  LiveEvent,
  LiveSink,
  LiveSubscription,
  LiveWarn,
} from './live.bus';
import { LocalReaders } from './live.local';

/**
 * Readers looked up (and messages sent) per round trip. The fan-out's chunks are this size by
 * default (FANOUT_CHUNK_SIZE), so a chunk is one round trip; a larger list goes in turns, so
 * one call never queues much more than a millisecond of work in Redis ahead of other clients.
 */
export const LIVE_LOOKUP_BATCH = 1000;

/** The bus's scripts (scripts/*.lua): a reader's mark, and which readers of a batch are marked. */
const SCRIPTS = loadScripts(join(__dirname, 'scripts'), ['mark', 'look-up'] as const);

/** What mark.lua's last argument says. */
type MarkMode = 'mark' | 'unmark';

/** The per-reader commands the bus sends, on a client or a pipeline alike. */
interface Commands {
  exists(key: string): unknown;
  publish(channel: string, message: string): unknown;
  spublish(channel: string, message: string): unknown;
}

interface Outcome {
  error: Error | null;
  value: unknown;
}

export interface RedisLiveBusOptions {
  /** Names this process in the marks (default: host, pid and a random part). */
  processId?: string;
  /** A mark's time to live (default LIVE_TTL_MS). */
  ttlMs?: number;
  /** How often the process refreshes its marks (default LIVE_REFRESH_MS). */
  refreshMs?: number;
  /** Unread events a subscription keeps (default LIVE_BUFFER_EVENTS). */
  bufferEvents?: number;
  /** How long one step of a reader may take (default LIVE_STEP_TIMEOUT_MS). */
  stepTimeoutMs?: number;
}

/** What the bus talks to, with its tuning (every tuning field has a default). */
export interface RedisLiveBusDeps extends RedisLiveBusOptions {
  redis: RedisClient;
  keys: RedisKeys;
  warn: LiveWarn;
}

export class RedisLiveBus implements LiveBus {
  readonly processId: string;
  private readonly ttlMs: number;
  private readonly refreshMs: number;
  private readonly stepTimeoutMs: number;
  private readonly readers: LocalReaders;
  private readonly sharded: boolean;
  /** The channel of each reader this process is subscribed for. */
  private readonly channels = new Map<string, number>();
  private subscriber: RedisClient | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshing = false;
  private closed = false;

  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly warn: LiveWarn;

  constructor({ redis, keys, warn, ...options }: RedisLiveBusDeps) {
    this.redis = redis;
    this.keys = keys;
    this.warn = warn;
    this.processId = options.processId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    this.ttlMs = options.ttlMs ?? LIVE_TTL_MS;
    this.refreshMs = options.refreshMs ?? LIVE_REFRESH_MS;
    this.sharded = isCluster(redis);
    this.stepTimeoutMs = options.stepTimeoutMs ?? LIVE_STEP_TIMEOUT_MS;
    this.readers = new LocalReaders({ open: (id) => this.open(id), shut: (id) => this.shut(id) }, warn, {
      capacity: options.bufferEvents ?? LIVE_BUFFER_EVENTS,
      stepTimeoutMs: this.stepTimeoutMs,
    });
  }

  async listen(readerId: number, sink: LiveSink): Promise<LiveChannel> {
    if (this.closed) throw new Error('the live bus is closed');
    return this.readers.listen(readerId, sink);
  }

  async connect(readerId: number): Promise<LiveSubscription> {
    if (this.closed) throw new Error('the live bus is closed');
    return this.readers.connect(readerId);
  }

  /**
   * LIVE_LOOKUP_BATCH readers per round trip. On one server, one script call that checks every
   * mark of the batch (scripts/look-up.lua). On a cluster a script may only touch one slot, and the marks of
   * a chunk lie in about as many slots as it has readers (1000 readers over 16,384 slots: about
   * 970), so there it is one EXISTS per reader, which ioredis auto-pipelines per node: one
   * pipeline to each master, all at once. (Not MGET: a cluster refuses it across slots, and the
   * mark is a hash.) Measured here for a chunk of 1000 readers on one server: about 0.25 ms of
   * Redis's time either way, and 0.6-1.2 ms of wall time for the script against 4.6-5.3 ms for a
   * pipeline of 1000 EXISTS, most of it the client building and parsing 1000 commands (the
   * fan-out worker's CPU, which a cluster pays). Whether anyone is live or not, that is the
   * whole cost of a chunk's readers who are not connected: no PUBLISH, no message, no memory.
   */
  async liveAmong(readerIds: readonly number[]): Promise<number[]> {
    const live: number[] = [];
    const ids = [...new Set(readerIds)];
    for (let start = 0; start < ids.length; start += LIVE_LOOKUP_BATCH)
      live.push(...(await this.lookUp(ids.slice(start, start + LIVE_LOOKUP_BATCH))));
    return live;
  }

  async publish(readerIds: readonly number[], event: LiveEvent): Promise<number> {
    const ids = [...new Set(readerIds)];
    let sent = 0;
    for (let start = 0; start < ids.length; start += LIVE_LOOKUP_BATCH) {
      sent += await this.publishToLive(await this.lookUp(ids.slice(start, start + LIVE_LOOKUP_BATCH)), event);
    }
    return sent;
  }

  async publishToLive(liveReaderIds: readonly number[], event: LiveEvent): Promise<number> {
    const live = [...new Set(liveReaderIds)];
    if (live.length === 0 || !redisAvailable(this.redis)) return 0;
    const message = encodeLiveEvent(event);
    const outcomes = await this.eachReader(live, (commands, id) =>
      this.sharded
        ? commands.spublish(this.keys.liveChannel(id), message)
        : commands.publish(this.keys.liveChannel(id), message),
    );
    this.warnFailures(outcomes, `publishing a live event to ${live.length} readers`);
    return outcomes.filter((outcome) => !outcome.error).length;
  }

  held(): number[] {
    return this.readers.ids();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.readers.closeAll();
    this.stopRefresh();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber)
      await withTimeout(subscriber.quit(), this.stepTimeoutMs, 'live feed: Redis').catch(() => subscriber.disconnect());
  }

  /** Which of these readers (at most one batch) are marked; none while Redis cannot be used. */
  private async lookUp(ids: number[]): Promise<number[]> {
    // The breaker is open: it has said so once already, and waiting for a timeout per chunk
    // would slow the fan-out for nothing.
    if (ids.length === 0 || !redisAvailable(this.redis)) return [];
    if (!this.sharded) {
      try {
        const keys = ids.map((id) => this.keys.live(id));
        const positions = await SCRIPTS['look-up'].run<number[]>(this.redis, keys);
        return positions.map((position) => ids[position - 1]);
      } catch (error) {
        this.warn(`live feed: looking up ${ids.length} live readers failed (${asError(error).message})`, error);
        return [];
      }
    }
    const outcomes = await this.eachReader(ids, (commands, id) => commands.exists(this.keys.live(id)));
    this.warnFailures(outcomes, `looking up ${ids.length} live readers`);
    return ids.filter((_, i) => !outcomes[i].error && outcomes[i].value === 1);
  }

  /**
   * One command per reader, sent together: on one server as a pipeline, on a cluster as separate
   * calls that ioredis pipelines per node. Per reader, its result or error. Never throws.
   */
  private async eachReader(
    ids: readonly number[],
    send: (commands: Commands, id: number) => unknown,
  ): Promise<Outcome[]> {
    try {
      if (this.sharded) {
        const cluster: Commands = this.redis;
        const settled = await Promise.allSettled(ids.map(async (id) => send(cluster, id)));
        return settled.map((result) =>
          result.status === 'fulfilled'
            ? { error: null, value: result.value }
            : { error: asError(result.reason), value: null },
        );
      }
      const pipeline = this.redis.pipeline();
      const batch: Commands = pipeline;
      for (const id of ids) send(batch, id);
      const results = (await pipeline.exec()) ?? [];
      return ids.map((_, i) => ({
        error: results[i]?.[0] ?? (results[i] ? null : new Error('no reply')),
        value: results[i]?.[1] ?? null,
      }));
    } catch (error) {
      return ids.map(() => ({ error: asError(error), value: null }));
    }
  }

  private warnFailures(outcomes: Outcome[], what: string): void {
    const failed = outcomes.filter((outcome) => outcome.error);
    if (failed.length > 0)
      this.warn(`live feed: ${what}: ${failed.length} commands failed (${failed[0].error?.message})`, failed[0].error);
  }

  private async mark(readerId: number, mode: MarkMode): Promise<void> {
    await SCRIPTS.mark.run<number>(this.redis, [this.keys.live(readerId)], [this.processId, this.ttlMs, mode]);
  }

  /** The reader's first subscription here: listen first, then let publishers know (see live.bus.ts). */
  private async open(readerId: number): Promise<void> {
    const channel = this.keys.liveChannel(readerId);
    this.channels.set(channel, readerId);
    const subscriber = this.subscriberConnection();
    await (isCluster(subscriber) ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel));
    await this.mark(readerId, 'mark');
    this.startRefresh();
  }

  /** The reader's last subscription here closed: stop the publishers first, then stop listening. */
  private async shut(readerId: number): Promise<void> {
    const channel = this.keys.liveChannel(readerId);
    try {
      await this.mark(readerId, 'unmark');
    } catch (error) {
      // The field is dropped by another process's refresh, or expires with the key.
      this.warn(`live feed: could not unmark reader ${readerId} (${asError(error).message})`, error);
    }
    const subscriber = this.subscriber;
    if (subscriber) {
      try {
        await (isCluster(subscriber) ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel));
      } catch (error) {
        // Messages still arriving on the channel find no reader and are dropped.
        this.warn(`live feed: could not unsubscribe reader ${readerId} (${asError(error).message})`, error);
      }
    }
    this.channels.delete(channel);
    if (this.readers.size === 0) this.stopRefresh();
  }

  private subscriberConnection(): RedisClient {
    if (this.subscriber) return this.subscriber;
    const connectionName = `live-${this.processId}`;
    const subscriber: RedisClient = isCluster(this.redis)
      ? this.redis.duplicate([], {
          shardedSubscribers: true,
          enableAutoPipelining: false,
          redisOptions: { connectionName, enableAutoPipelining: false },
        })
      : this.redis.duplicate({ enableAutoPipelining: false, connectionName });
    subscriber.on(this.sharded ? 'smessage' : 'message', (channel: string, message: string) =>
      this.received(channel, message),
    );
    let down = false;
    let connected = false;
    // Without a listener ioredis prints every failed reconnect; say once that the connection is away.
    subscriber.on('error', (error: Error) => {
      if (!down)
        this.warn(
          `live feed: the subscriber connection failed (${error.message}); it reconnects and resubscribes`,
          error,
        );
      down = true;
    });
    const reconnected = () => {
      down = false;
      if (connected) void this.refresh();
      connected = true;
    };
    subscriber.on('ready', reconnected);
    // A cluster's sharded subscribers come back after its own 'ready': once they are resubscribed.
    if (this.sharded) subscriber.on('subscribersReady', () => void this.refresh());
    this.subscriber = subscriber;
    return subscriber;
  }

  private received(channel: string, message: string): void {
    const readerId = this.channels.get(channel);
    if (readerId === undefined) return;
    const event = decodeLiveEvent(message);
    if (!event) {
      this.warn(`live feed: ignored a message on ${channel} that is not a live event`);
      return;
    }
    this.readers.deliver(readerId, event);
  }

  private startRefresh(): void {
    if (this.refreshTimer || this.closed) return;
    this.refreshTimer = setInterval(() => void this.refresh(), this.refreshMs);
    this.refreshTimer.unref();
  }

  private stopRefresh(): void {
    clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  /**
   * Refreshes the mark of every reader held here. Each goes in turn with the reader's open and
   * shut, so a refresh cannot re-mark a reader whose close came after it; the calls still leave
   * together (auto-pipelined, or written back to back).
   */
  private async refresh(): Promise<void> {
    if (this.refreshing || this.closed) return;
    this.refreshing = true;
    try {
      const outcomes = await Promise.all(
        this.readers.ids().map((id) =>
          this.readers
            .inTurn(id, async () => {
              if (this.readers.has(id)) await this.mark(id, 'mark');
            })
            .then(
              (): Outcome => ({ error: null, value: null }),
              (error: unknown): Outcome => ({ error: asError(error), value: null }),
            ),
        ),
      );
      this.warnFailures(outcomes, `refreshing ${outcomes.length} live readers`);
    } finally {
      this.refreshing = false;
    }
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
