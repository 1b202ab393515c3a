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

export type TokenCheck = { kind: 'anonymous' } | { kind: 'viewer'; userId: number } | { kind: 'rejected'; reason: string };

export class TokenService {
  /**
   * The secret as a KeyObject, made once. Given a string, jsonwebtoken first tries to parse it
   * as a public key on every call (and fails): that alone took a third of a feed request's CPU.
   */
  private readonly secret: KeyObject;

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
    try {
      const payload = jwt.verify(match[1], this.secret, {
        algorithms: [ALGORITHM],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      const subject = typeof payload === 'object' ? payload.sub : undefined;
      if (typeof payload !== 'object' || payload.exp === undefined || !subject || !/^[1-9]\d{0,15}$/.test(subject)) {
        return { kind: 'rejected', reason: 'the token is not one this API issued' };
      }
      return { kind: 'viewer', userId: Number(subject) };
    } catch (error) {
      if (error instanceof jwt.TokenExpiredError) return { kind: 'rejected', reason: 'the token has expired; log in again' };
      return { kind: 'rejected', reason: 'the token is invalid (bad signature or format)' };
    }
  }
}
