/**
 * Access tokens: HS256 JWTs with an expiry, sent as `Authorization: Bearer <token>`.
 * The algorithm is pinned on verification, so a token signed with "none" or another algorithm
 * is rejected.
 */
import jwt from 'jsonwebtoken';
import { createSecretKey, KeyObject } from 'node:crypto';

const ALGORITHM = 'HS256';
/** Tolerated difference between the clocks of the servers that sign and verify (seconds). */
const CLOCK_TOLERANCE_SECONDS = 5;

export type TokenCheck =
  | { kind: 'anonymous' }
  /** expiresAt: the token's expiry in epoch ms (a live subscription ends there). */
  | { kind: 'viewer'; userId: number; expiresAt: number }
  | { kind: 'rejected'; reason: string };

/**
 * Verified tokens remembered per process, so that a client sending the same token on every
 * request pays for one HMAC verification, not one per request (about 60 µs, a tenth of a feed
 * page's CPU). Bounded: the oldest entry leaves first. Only successes are kept, each until its
 * token's own expiry, so a cached answer is never one that verifying again would change.
 */
const VERIFIED_CACHE_SIZE = 10_000;

export class TokenService {
  /**
   * The secret as a KeyObject, made once. Given a string, jsonwebtoken first tries to parse it
   * as a public key on every call (and fails): that alone took a third of a feed request's CPU.
   */
  private readonly secret: KeyObject;
  /** token -> its viewer and expiry (epoch ms); see VERIFIED_CACHE_SIZE. */
  private readonly verified = new Map<string, { userId: number; expiresAt: number }>();

  constructor(
    secret: string,
    private readonly expiresInSeconds: number,
  ) {
    this.secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  issue(userId: number): string {
    return jwt.sign({}, this.secret, {
      algorithm: ALGORITHM,
      subject: String(userId),
      expiresIn: this.expiresInSeconds,
    });
  }

  /** Reads an Authorization header value; never throws. */
  check(authorization: string | undefined): TokenCheck {
    if (authorization === undefined || authorization.trim() === '') return { kind: 'anonymous' };
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) return { kind: 'rejected', reason: 'the Authorization header must be "Bearer <token>"' };
    const known = this.verified.get(match[1]);
    if (known && Date.now() < known.expiresAt) return { kind: 'viewer', userId: known.userId, expiresAt: known.expiresAt };
    if (known) this.verified.delete(match[1]);
    return this.verify(match[1]);
  }

  private verify(token: string): TokenCheck {
    try {
      const payload = jwt.verify(token, this.secret, {
        algorithms: [ALGORITHM],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      const subject = typeof payload === 'object' ? payload.sub : undefined;
      if (typeof payload !== 'object' || payload.exp === undefined || !subject || !/^[1-9]\d{0,15}$/.test(subject)) {
        return { kind: 'rejected', reason: 'the token is not one this API issued' };
      }
      const userId = Number(subject);
      const expiresAt = payload.exp * 1000;
      this.remember(token, userId, expiresAt);
      return { kind: 'viewer', userId, expiresAt };
    } catch (error) {
      if (error instanceof jwt.TokenExpiredError) return { kind: 'rejected', reason: 'the token has expired; log in again' };
      return { kind: 'rejected', reason: 'the token is invalid (bad signature or format)' };
    }
  }

  private remember(token: string, userId: number, expiresAt: number): void {
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, { userId, expiresAt });
  }
}
