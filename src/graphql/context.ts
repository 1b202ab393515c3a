/** The typed context of every resolver: who is asking, the services, and the request's loaders. */
import type { TokenCheck } from '../auth/auth.tokens';
import type { Core } from '../composition';
import type { RateLimits } from './rate-limits';
import { unauthenticated } from '../kernel/errors';
import type { Loaders } from './loaders';

/** The domain services the resolvers call (built by the composition root), and the API's rate limits. */
export type Services = Pick<Core, 'auth' | 'users' | 'blogs' | 'follows' | 'likes' | 'feed' | 'liveFeed'> & {
  rateLimits: RateLimits;
};

export interface Context {
  auth: TokenCheck;
  /** The client's address (from X-Forwarded-For only behind TRUSTED_PROXIES), for per-IP rate limits. */
  ip: string;
  /** The request's id (x-request-id), in its log line. */
  requestId: string;
  services: Services;
  loaders: Loaders;
  /** `userId` just wrote: their reads go to the primary for a while (read-your-writes with replicas). */
  wrote: (userId: number) => void;
}

/**
 * The viewer's user id, or null when the request carries no token. A token that was sent but
 * is forged or expired is an error even where a viewer is optional: silently treating it as
 * anonymous would hide the problem from the client.
 */
export function optionalViewerId(auth: TokenCheck): number | null {
  if (auth.kind === 'rejected') throw unauthenticated(auth.reason);
  return auth.kind === 'viewer' ? auth.userId : null;
}

/** The viewer's user id; UNAUTHENTICATED when there is none. */
export function requireViewerId(auth: TokenCheck): number {
  const viewerId = optionalViewerId(auth);
  if (viewerId === null) throw unauthenticated('sign in first: send the header "Authorization: Bearer <token>"');
  return viewerId;
}
