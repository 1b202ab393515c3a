/**
 * Rate limits, counted in Redis so that every process of a deployment shares them
 * (rate-limiter-flexible). They stop password guessing (login per IP and per nickName), sign-up
 * floods (per IP), write floods (publishBlog and likeBlog per user) and request floods from
 * clients without a token (per IP).
 *
 * A request over a limit gets RATE_LIMITED with `extensions.retryAfterSeconds`. While Redis is
 * unreachable or does not answer (its circuit breaker is open, see redis/breaker.ts) each
 * process counts in its own memory (an insurance limiter): the limits keep holding per process,
 * they neither lock everyone out nor disappear.
 * RATE_LIMITS=off turns them off (benchmarks, load tests). Without Redis at all (the embedded
 * mode, one process) they are counted in process memory from the start.
 */
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

export class RateLimits {
  private readonly limiters = new Map<LimitName, RateLimiterAbstract>();
  /** Each limit's in-memory count: the insurance of its Redis limiter, used alone while Redis is unavailable. */
  private readonly inMemory = new Map<LimitName, RateLimiterMemory>();

  constructor(
    private readonly redis: RedisClient | null,
    keys: RedisKeys,
    private readonly settings: RateLimitSettings,
  ) {
    for (const name of Object.keys(settings) as Array<keyof RateLimitSettings>) {
      if (name === 'enabled') continue;
      const rule: RateLimitRule = settings[name];
      const inMemory = new RateLimiterMemory({ points: rule.points, duration: rule.seconds });
      this.inMemory.set(name, inMemory);
      this.limiters.set(
        name,
        !redis
          ? inMemory
          : new RateLimiterRedis({
              storeClient: redis,
              keyPrefix: keys.rateLimit(name),
              points: rule.points,
              duration: rule.seconds,
              // While Redis is not connected, count in memory at once instead of waiting for it.
              rejectIfRedisNotReady: true,
              insuranceLimiter: inMemory,
            }),
      );
    }
  }

  /** `ip`: the client's address (IPv6 clients are counted per /64, see addressLimitKey). */
  signUp(ip: string): Promise<void> {
    return this.consume('signUpPerIp', addressLimitKey(ip), 'sign-ups from this address');
  }

  async login(ip: string, nickName: string): Promise<void> {
    await this.consume('loginPerIp', addressLimitKey(ip), 'logins from this address');
    await this.consume('loginPerNickName', nickNameKey(nickName), `logins as "${nickName}"`);
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

  private async consume(name: LimitName, key: string, what: string): Promise<void> {
    if (!this.settings.enabled) return;
    const rule = this.settings[name];
    // While Redis hangs or is down (its circuit breaker is open) count in memory at once,
    // instead of waiting REDIS_COMMAND_TIMEOUT_MS for the insurance limiter to take over.
    const limiter = this.redis && !redisAvailable(this.redis) ? this.inMemory.get(name)! : this.limiters.get(name)!;
    try {
      await limiter.consume(key);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfterSeconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw rateLimited(`too many ${what}: at most ${rule.points} per ${rule.seconds} s; retry in ${retryAfterSeconds} s`, name, retryAfterSeconds);
    }
  }
}
