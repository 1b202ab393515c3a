/**
 * The Redis circuit breaker: a Redis that does not answer is treated like a Redis that is down.
 *
 * A stopped or overloaded Redis keeps its TCP connection open, so the connection state stays
 * "ready" while commands wait for ever. Every command of the service's clients has a deadline
 * (REDIS_COMMAND_TIMEOUT_MS, ioredis commandTimeout); the breaker watches every command of a
 * client, and the first one that times out or fails for want of a connection opens it. While it
 * is open, callers that consult redisAvailable() skip Redis at once instead of each paying the
 * timeout: feed pages come from MySQL, rate limits count in process memory, inbox writes are
 * skipped (the inbox is then rebuilt). After BREAKER_COOL_DOWN_MS the breaker half-opens: it
 * sends one PING of its own (callers still skip Redis meanwhile); an answer closes it, a failure
 * opens it for another cool-down.
 */
import type { Cluster, Command, Redis } from 'ioredis';

/** A client of a single Redis or a Cluster (redis.client.ts builds them; named here again so that the two files do not import each other). */
type RedisClient = Redis | Cluster;

/**
 * How long the breaker stays open before it probes Redis again: short, so that feeds return
 * to their inboxes about a second after Redis answers again; long enough that a hung Redis
 * costs one probe a second, not one timeout per request.
 */
export const BREAKER_COOL_DOWN_MS = 1000;

export type BreakerState = 'closed' | 'open' | 'half-open';

/** Errors that say "Redis cannot be used right now", not "this command is wrong". */
export function isRedisUnavailable(error: unknown): boolean {
  const { name, message } = (error ?? {}) as { name?: string; message?: string };
  if (name === 'MaxRetriesPerRequestError' || name === 'ClusterAllFailedError') return true;
  return /Command timed out|Connection is closed|Stream isn't writeable|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|Cluster isn't ready|None of startup nodes is available/i.test(
    message ?? '',
  );
}

export class RedisBreaker {
  private current: BreakerState = 'closed';
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly closeListeners: Array<() => void> = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly coolDownMs: number,
    /** Told each change of state (a log line: "Redis does not answer", "answers again"). */
    private readonly onChange: (state: BreakerState, error?: unknown) => void = () => {},
  ) {}

  get state(): BreakerState {
    return this.current;
  }

  /** A command of the watched client failed. */
  failed(error: unknown): void {
    if (this.current !== 'closed' || this.stopped || !isRedisUnavailable(error)) return;
    this.open(error);
  }

  /** The client (re)connected: probe at once rather than after the rest of the cool-down. */
  reconnected(): void {
    if (this.current !== 'open' || this.stopped) return;
    clearTimeout(this.timer);
    this.probe();
  }

  /** Calls `listener` each time the breaker closes again (Redis answers after a hang or an outage). */
  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  /** No more probes (the client is being closed). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private open(error?: unknown): void {
    this.current = 'open';
    this.onChange('open', error);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.probe(), this.coolDownMs);
    this.timer.unref();
  }

  private probe(): void {
    if (this.stopped) return;
    this.current = 'half-open';
    this.redis.ping().then(
      () => {
        if (this.current !== 'half-open') return;
        this.current = 'closed';
        this.onChange('closed');
        for (const listener of this.closeListeners) listener();
      },
      (error: unknown) => {
        if (!this.stopped) this.open(error);
      },
    );
  }
}

const breakers = new WeakMap<RedisClient, RedisBreaker>();

type SendCommand = (command: Command, ...rest: never[]) => unknown;

/**
 * Puts a breaker on a client: every command it sends (single, pipelined, scripted, from any
 * caller, the inboxes' included) reports its failure to the breaker.
 */
export function watchRedis(
  redis: RedisClient,
  coolDownMs: number,
  onChange?: (state: BreakerState, error?: unknown) => void,
): RedisBreaker {
  const breaker = new RedisBreaker(redis, coolDownMs, onChange);
  breakers.set(redis, breaker);
  // Every command, pipelined and scripted ones too, goes through sendCommand (Redis and Cluster alike).
  const target: { sendCommand: SendCommand } = redis;
  const send = target.sendCommand.bind(redis);
  target.sendCommand = (command: Command, ...rest: never[]) => {
    const result = send(command, ...rest);
    if (result instanceof Promise) result.catch((error: unknown) => breaker.failed(error));
    return result;
  };
  redis.on('ready', () => breaker.reconnected());
  redis.once('end', () => breaker.stop());
  return breaker;
}

/** The breaker of a client, if it has one. */
export function breakerOf(redis: RedisClient): RedisBreaker | undefined {
  return breakers.get(redis);
}

/**
 * Whether callers should use Redis now: connected, and its breaker (if any) closed. False means
 * "go to the fallback at once" (MySQL for feeds, memory for rate limits), without waiting.
 */
export function redisAvailable(redis: RedisClient): boolean {
  return redis.status === 'ready' && (breakers.get(redis)?.state ?? 'closed') === 'closed';
}
