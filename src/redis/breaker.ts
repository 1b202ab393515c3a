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
 *
 * A timeout is only evidence when this process was listening. The deadline is a timer, and after
 * the event loop was busy (a long GC pause, a burst of requests at peak) Node runs expired timers
 * before it polls the sockets: a reply that arrived in time is read after its command "timed
 * out". Opening the breaker then would send a second of every request to MySQL because this
 * process was busy, and make it busier. So a timeout opens the breaker at once only when the
 * event loop was idle for at least half of the deadline before it (it was waiting, and nothing
 * came: LoopIdleness below); otherwise the breaker stays closed and sends one PING, and only a
 * failure of that PING opens it.
 */
import { performance } from 'node:perf_hooks';
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

/** A command's deadline ran out (ioredis commandTimeout), as opposed to a connection error. */
function isTimeout(error: unknown): boolean {
  return /Command timed out/i.test((error as { message?: string } | null)?.message ?? '');
}

/**
 * The share of a recent stretch of time that the event loop spent idle, waiting for I/O
 * (libuv's idle time, performance.eventLoopUtilization): sampled every quarter of the window it
 * answers for, the last few samples kept. Costs one timer; not read per command.
 */
export class LoopIdleness {
  private readonly samples: Array<{ at: number; idle: number }> = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly windowMs: number) {
    this.sample();
    this.timer = setInterval(() => this.sample(), Math.max(5, Math.round(windowMs / 4)));
    this.timer.unref();
  }

  /** The idle share of (about) the last `windowMs`, from 0 (busy throughout) to 1. */
  idleShare(): number {
    const now = performance.now();
    const idle = performance.eventLoopUtilization().idle;
    // The newest sample at least a window old (else the oldest there is).
    const from = this.samples.findLast((sample) => sample.at <= now - this.windowMs) ?? this.samples[0];
    const span = now - from.at;
    return span <= 0 ? 1 : Math.min(1, (idle - from.idle) / span);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): void {
    this.samples.push({ at: performance.now(), idle: performance.eventLoopUtilization().idle });
    // Four samples a window: eight cover the window wherever in its quarter the timeout falls.
    if (this.samples.length > 8) this.samples.shift();
  }
}

/** A timeout opens the breaker at once only when the loop was idle at least this share of the deadline before it. */
const LISTENING_SHARE = 0.5;

export interface RedisBreakerDeps {
  redis: RedisClient;
  coolDownMs: number;
  /** Told each change of state (a log line: "Redis does not answer", "answers again"). */
  onChange?: (state: BreakerState, error?: unknown) => void;
  /** The event loop's recent idleness, for timeouts (none: every timeout opens the breaker). */
  loop?: LoopIdleness;
}

export class RedisBreaker {
  private current: BreakerState = 'closed';
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** A PING checks a timeout that came after a busy stretch (see the top of the file). */
  private checking = false;
  private readonly closeListeners: Array<() => void> = [];

  private readonly redis: RedisClient;
  private readonly coolDownMs: number;
  private readonly onChange: (state: BreakerState, error?: unknown) => void;
  private readonly loop?: LoopIdleness;

  constructor(deps: RedisBreakerDeps) {
    this.redis = deps.redis;
    this.coolDownMs = deps.coolDownMs;
    this.onChange = deps.onChange ?? (() => {});
    this.loop = deps.loop;
  }

  get state(): BreakerState {
    return this.current;
  }

  /** A command of the watched client failed. */
  failed(error: unknown): void {
    if (this.current !== 'closed' || this.stopped || !isRedisUnavailable(error)) return;
    if (isTimeout(error) && this.loop && this.loop.idleShare() < LISTENING_SHARE) this.check(error);
    else this.open(error);
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
    this.loop?.stop();
  }

  /**
   * A timeout after a busy stretch: one PING (with the same deadline) while callers go on using
   * Redis. Its answer keeps the breaker closed; its failure opens it, busy or not.
   */
  private check(timeout: unknown): void {
    if (this.checking) return;
    this.checking = true;
    this.redis.ping().then(
      () => {
        this.checking = false;
      },
      (error: unknown) => {
        this.checking = false;
        if (this.current === 'closed' && !this.stopped) this.open(isRedisUnavailable(error) ? error : timeout);
      },
    );
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
  /** The client's command deadline (commandTimeout): a timeout after a busy stretch of it is checked, not believed. */
  commandTimeoutMs?: number,
): RedisBreaker {
  const loop = commandTimeoutMs === undefined ? undefined : new LoopIdleness(commandTimeoutMs);
  const breaker = new RedisBreaker({ redis, coolDownMs, onChange, loop });
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
