/**
 * Access tokens: HS256 JWTs with an expiry, sent as `Authorization: Bearer <token>`.
 * The algorithm is pinned on verification, so a token signed with "none" or another algorithm
 * is rejected.
 *
 * Each token is a session of its own: it carries an id (`jti`, random) and its user's token
 * version (`tv`), which `logout` and `logoutEverywhere` use to end it (auth.sessions.ts). A token
 * issued before tokens carried them counts as version 0, with an id made from its own text.
 */
import jwt from 'jsonwebtoken';
import { createHash, createSecretKey, KeyObject, randomBytes } from 'node:crypto';
import { Session, SESSION_END_REASON, SessionEnd } from './auth.sessions';

const ALGORITHM = 'HS256';
/** Tolerated difference between the clocks of the servers that sign and verify (seconds). */
export const CLOCK_TOLERANCE_SECONDS = 5;

/** Random bytes of a token id: 128 bits, never repeated in practice. */
const SESSION_ID_BYTES = 16;

/** A token id as this API makes them (base64url), or as it derives them for older tokens. */
const SESSION_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** A verified token: its viewer, its session, and when it expires. */
export interface ViewerToken extends Session {
  kind: 'viewer';
  /** The token's expiry in epoch ms (a live subscription ends there). */
  expiresAt: number;
}

export type TokenCheck = { kind: 'anonymous' } | ViewerToken | { kind: 'rejected'; reason: string };

/** Whether a session ended (auth.sessions.ts); synchronous when the answer is known in memory. */
export interface SessionCheck {
  check(session: Session): SessionEnd | null | Promise<SessionEnd | null>;
}

/**
 * Verified tokens remembered per process, so that a client sending the same token on every
 * request pays for one HMAC verification, not one per request (about 60 µs, a tenth of a feed
 * page's CPU). Bounded: the oldest entry leaves first. Only valid signatures are kept, each
 * until its token's own expiry; whether the session still runs is asked on every request (from
 * memory, see auth.sessions.ts).
 */
const VERIFIED_CACHE_SIZE = 10_000;

export class TokenService {
  /**
   * The secret as a KeyObject, made once. Given a string, jsonwebtoken first tries to parse it
   * as a public key on every call (and fails): that alone took a third of a feed request's CPU.
   */
  private readonly secret: KeyObject;
  /** token -> what it says (see VERIFIED_CACHE_SIZE). */
  private readonly verified = new Map<string, ViewerToken>();

  constructor(
    secret: string,
    private readonly expiresInSeconds: number,
    private readonly sessions: SessionCheck,
  ) {
    this.secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  /** A new session's token for a user whose token version is `tokenVersion`. */
  issue(userId: number, tokenVersion: number): string {
    return jwt.sign({ tv: tokenVersion }, this.secret, {
      algorithm: ALGORITHM,
      subject: String(userId),
      expiresIn: this.expiresInSeconds,
      jwtid: randomBytes(SESSION_ID_BYTES).toString('base64url'),
    });
  }

  /** Reads an Authorization header value; never rejects (a session that cannot be checked, MySQL away, does). */
  async check(authorization: string | undefined): Promise<TokenCheck> {
    if (authorization === undefined || authorization.trim() === '') return { kind: 'anonymous' };
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) return { kind: 'rejected', reason: 'the Authorization header must be "Bearer <token>"' };
    let viewer: TokenCheck | undefined = this.verified.get(match[1]);
    if (viewer && Date.now() >= viewer.expiresAt) {
      this.verified.delete(match[1]);
      viewer = undefined;
    }
    viewer ??= this.verify(match[1]);
    if (viewer.kind !== 'viewer') return viewer;
    const ended = this.sessions.check(viewer);
    const why = ended instanceof Promise ? await ended : ended;
    return why ? { kind: 'rejected', reason: SESSION_END_REASON[why] } : viewer;
  }

  private verify(token: string): TokenCheck {
    try {
      const payload = jwt.verify(token, this.secret, {
        algorithms: [ALGORITHM],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      const viewer = typeof payload === 'object' ? viewerOf(payload, token) : null;
      if (!viewer) return { kind: 'rejected', reason: 'the token is not one this API issued' };
      this.remember(token, viewer);
      return viewer;
    } catch (error) {
      if (error instanceof jwt.TokenExpiredError)
        return { kind: 'rejected', reason: 'the token has expired; log in again' };
      return { kind: 'rejected', reason: 'the token is invalid (bad signature or format)' };
    }
  }

  private remember(token: string, viewer: ViewerToken): void {
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, viewer);
  }
}

/** The viewer of a verified payload; null when its claims are not what this API puts there. */
function viewerOf(payload: jwt.JwtPayload, token: string): ViewerToken | null {
  const { sub, exp, jti, tv } = payload;
  if (exp === undefined || !sub || !/^[1-9]\d{0,15}$/.test(sub)) return null;
  if (tv !== undefined && !(Number.isSafeInteger(tv) && (tv as number) >= 0)) return null;
  if (jti !== undefined && !SESSION_ID.test(jti)) return null;
  return {
    kind: 'viewer',
    userId: Number(sub),
    expiresAt: exp * 1000,
    tokenVersion: (tv as number | undefined) ?? 0,
    // A token without an id (issued before tokens had one) is named by its own text.
    sessionId: jti ?? `h.${createHash('sha256').update(token).digest('base64url').slice(0, 32)}`,
  };
}
