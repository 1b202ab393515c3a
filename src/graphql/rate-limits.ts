/**
 * Rate limits, counted in Redis so that every process of a deployment shares them
 * (rate-limiter-flexible). They stop password guessing (login per IP, per nickName and address,
 * and failures per nickName), sign-up floods (per IP), write floods (publishBlog, likeBlog,
 * follow per user) and request floods from clients without a token (per IP).
 *
 * Logins: every attempt counts per address and per (nickName, address) pair, which stops one
 * address guessing a password, its owner's right one included once over. Failures also count
 * per nickName from every address (loginPerNickName, a longer window): past that limit the
 * nickName is under attack from many addresses, and each address that failed for it in the
 * window is refused too. An address that has not failed is never refused by it, so a stranger
 * cannot lock the user out: a distributed attack gets one guess per new address, the user's own
 * device gets in.
 *
 * A request over a limit gets RATE_LIMITED with `extensions.retryAfterSeconds`. While Redis is
 * unreachable or does not answer (its circuit breaker is open, see redis/breaker.ts) each
 * process counts in its own memory (an insurance limiter): the limits keep holding per process,
 * they neither lock everyone out nor disappear.
 * RATE_LIMITS=off turns them off (benchmarks, load tests). Without Redis at all (the embedded
 * mode, one process) they are counted in process memory from the start.
 */
import { createHash } from 'node:crypto';
import { RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimitRule, RateLimitSettings } from '../kernel/config';
import { RedisKeys } from '../redis/keys';
import { redisAvailable } from '../redis/breaker';
import type { RedisClient } from '../redis/redis.client';
import { nickNameKey } from '../user/user.service';
import { addressLimitKey } from './client-address';
import { ErrorCode, rateLimited, requestRateLimited } from '../kernel/errors';
import { GraphQLError } from 'graphql';

type LimitName = keyof Omit<RateLimitSettings, 'enabled'>;

/**
 * The failures of each (nickName, address) pair within loginPerNickName's window: whether an
 * address "has failed" for a nickName. Counted, not limited (its points are never reached).
 */
const LOGIN_FAILURES_OF_PAIR = 'loginFailuresPerNickNameIp';

/** Longest key part kept as it is; a longer one (a made-up nickName of 100 kB) is hashed, so Redis keys stay small. */
const MAX_KEY_PART = 128;

export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();
  /** Each limit's in-memory count: the insurance of its Redis limiter, used alone while Redis is unavailable. */
  private readonly inMemory = new Map<string, RateLimiterMemory>();

  constructor(
    private readonly redis: RedisClient | null,
    private readonly keys: RedisKeys,
    private readonly settings: RateLimitSettings,
  ) {
    for (const name of Object.keys(settings) as Array<keyof RateLimitSettings>) {
      if (name === 'enabled') continue;
      this.addLimiter(name, settings[name]);
    }
    this.addLimiter(LOGIN_FAILURES_OF_PAIR, {
      points: Number.MAX_SAFE_INTEGER,
      seconds: settings.loginPerNickName.seconds,
    });
  }

  private addLimiter(name: string, rule: RateLimitRule): void {
    const inMemory = new RateLimiterMemory({ points: rule.points, duration: rule.seconds });
    this.inMemory.set(name, inMemory);
    this.limiters.set(
      name,
      !this.redis
        ? inMemory
        : new RateLimiterRedis({
            storeClient: this.redis,
            keyPrefix: this.keys.rateLimit(name),
            points: rule.points,
            duration: rule.seconds,
            // While Redis is not connected, count in memory at once instead of waiting for it.
            rejectIfRedisNotReady: true,
            insuranceLimiter: inMemory,
          }),
    );
  }

  /** `ip`: the client's address (IPv6 clients are counted per /64, see addressLimitKey). */
  signUp(ip: string): Promise<void> {
    return this.consume('signUpPerIp', addressLimitKey(ip), 'sign-ups from this address');
  }

  /** Before a login is checked: per address, per (nickName, address), and the nickName's failures if this address failed. */
  async login(ip: string, nickName: string): Promise<void> {
    if (!this.settings.enabled) return;
    const address = addressLimitKey(ip);
    const pair = loginPairKey(nickName, address);
    await this.consume('loginPerIp', address, 'logins from this address');
    await this.consume('loginPerNickNameIp', pair, `logins as "${shown(nickName)}" from this address`);
    const [failures, failedHere] = await Promise.all([
      this.counted('loginPerNickName', limitKey(nickNameKey(nickName))),
      this.counted(LOGIN_FAILURES_OF_PAIR, pair),
    ]);
    const rule = this.settings.loginPerNickName;
    if (failures && failures.consumedPoints >= rule.points && failedHere && failedHere.consumedPoints > 0) {
      const retryAfterSeconds = Math.max(1, Math.ceil(failures.msBeforeNext / 1000));
      throw rateLimited(
        `too many failed logins as "${shown(nickName)}": at most ${rule.points} per ${rule.seconds} s from all addresses, and this address failed; retry in ${retryAfterSeconds} s`,
        'loginPerNickName',
        retryAfterSeconds,
      );
    }
  }

  /** A login failed (wrong nickName or password): counted for the nickName and for this address's pair. */
  async loginFailed(ip: string, nickName: string): Promise<void> {
    if (!this.settings.enabled) return;
    await Promise.all([
      this.add('loginPerNickName', limitKey(nickNameKey(nickName))),
      this.add(LOGIN_FAILURES_OF_PAIR, loginPairKey(nickName, addressLimitKey(ip))),
    ]);
  }

  /** follow and unfollow alike: both lock two user rows and change the viewer's inbox. */
  follow(userId: number): Promise<void> {
    return this.consume('followPerUser', String(userId), 'follows and unfollows');
  }

  publish(userId: number): Promise<void> {
    return this.consume('publishPerUser', String(userId), 'blogs published');
  }

  like(userId: number): Promise<void> {
    return this.consume('likePerUser', String(userId), 'likes');
  }

  subscribe(userId: number): Promise<void> {
    return this.consume('subscribePerUser', String(userId), 'subscriptions started');
  }

  /**
   * A GraphQL request from `ip` without a valid token. Over the limit the whole request is
   * refused before it is parsed: HTTP 429 with Retry-After. Signed-in requests are not counted
   * (they have limits of their own per user), so a feed page never waits for this count.
   */
  async anonymousRequest(ip: string): Promise<void> {
    try {
      await this.consume('anonymousPerIp', addressLimitKey(ip), 'requests without a token from this address');
    } catch (error) {
      if (!(error instanceof GraphQLError) || error.extensions.code !== ErrorCode.RATE_LIMITED) throw error;
      throw requestRateLimited(error.message, 'anonymousPerIp', error.extensions.retryAfterSeconds as number);
    }
  }

  /**
   * The limiter to count with now: while Redis hangs or is down (its circuit breaker is open)
   * the one in memory, instead of waiting REDIS_COMMAND_TIMEOUT_MS for the insurance to take over.
   */
  private limiter(name: string): RateLimiterAbstract {
    return this.redis && !redisAvailable(this.redis) ? this.inMemory.get(name)! : this.limiters.get(name)!;
  }

  /** What `key` has used of limit `name` in its window (null: nothing); a Redis failure reads the memory's count. */
  private async counted(name: string, key: string): Promise<RateLimiterRes | null> {
    return this.limiter(name)
      .get(key)
      .catch(() => this.inMemory.get(name)!.get(key));
  }

  /** Counts one for `key` without refusing anything (failures are counted after the fact). */
  private async add(name: string, key: string): Promise<void> {
    await this.limiter(name)
      .penalty(key, 1)
      .catch(() => this.inMemory.get(name)!.penalty(key, 1));
  }

  private async consume(name: LimitName, key: string, what: string): Promise<void> {
    if (!this.settings.enabled) return;
    const rule = this.settings[name];
    const limiter = this.limiter(name);
    try {
      await limiter.consume(key);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfterSeconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw rateLimited(
        `too many ${what}: at most ${rule.points} per ${rule.seconds} s; retry in ${retryAfterSeconds} s`,
        name,
        retryAfterSeconds,
      );
    }
  }
}

/** A key part as it is when short, else its hash (SHA-256, base64url). */
function limitKey(part: string): string {
  return part.length <= MAX_KEY_PART ? part : `#${createHash('sha256').update(part).digest('base64url')}`;
}

/** The key of a (nickName, address) pair: the nickName as login finds it (nickNameKey) and the address as counted (addressLimitKey). */
function loginPairKey(nickName: string, address: string): string {
  return `${address}|${limitKey(nickNameKey(nickName))}`;
}

/** A nickName as an error message may quote it: at most 40 characters. */
function shown(nickName: string): string {
  return nickName.length > 40 ? `${nickName.slice(0, 40)}...` : nickName;
}
