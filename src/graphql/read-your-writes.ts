/**
 * Read-your-writes with read replicas: a user who wrote (a mutation) reads the primary for a
 * while, long enough for any replica that is still read to have their write. The mark is a Redis
 * key (rw:{userId}, redis/keys.ts), so it holds in every API process behind the load balancer;
 * each process also keeps it in memory, which is what remains when there is no Redis or it is
 * down (then only the process that took the write knows: another one may serve a stale read).
 */
import { OperationTypeNode } from 'graphql';
import { readPrimaryInScope } from '../db/read-scope';
import { REPLICA_CHECK_INTERVAL_MS } from '../db/replicas';
import { warn } from '../kernel/observability';
import { redisAvailable } from '../redis/breaker';
import type { RedisKeys } from '../redis/keys';
import type { RedisClient } from '../redis/redis.client';
import type { Context } from './context';

/** Marks kept in memory before expired ones are swept: a bound on the map between sweeps. */
const MAX_LOCAL_MARKS = 100_000;

export class RecentWriters {
  /** How long a writer reads the primary: the most a replica still read can lag, plus one health check (its lag is known that late). */
  readonly windowMs: number;
  /** User id -> when the mark ends (epoch ms). */
  private readonly local = new Map<number, number>();

  constructor(
    private readonly redis: RedisClient | null,
    private readonly keys: RedisKeys,
    maxLagMs: number,
  ) {
    this.windowMs = maxLagMs + REPLICA_CHECK_INTERVAL_MS;
  }

  /** `userId` wrote just now. */
  wrote(userId: number): void {
    const now = Date.now();
    if (this.local.size >= MAX_LOCAL_MARKS) {
      for (const [id, until] of this.local) if (until <= now) this.local.delete(id);
    }
    this.local.set(userId, now + this.windowMs);
    if (this.redis && redisAvailable(this.redis)) {
      this.redis
        .set(this.keys.recentWriter(userId), '1', 'PX', this.windowMs)
        .catch((error: unknown) =>
          warn(
            `marking user ${userId} as a recent writer in Redis failed; this process still reads their writes`,
            error,
          ),
        );
    }
  }

  /** Whether `userId` wrote within the window, in this process or (by Redis) in another. */
  async isRecent(userId: number): Promise<boolean> {
    const until = this.local.get(userId);
    if (until !== undefined) {
      if (until > Date.now()) return true;
      this.local.delete(userId);
    }
    if (!this.redis || !redisAvailable(this.redis)) return false;
    // Redis failing (the breaker opens): the memory's answer, which was no.
    return this.redis.exists(this.keys.recentWriter(userId)).then(
      (found) => found === 1,
      () => false,
    );
  }
}

/**
 * Read-your-writes around one operation, over HTTP (apollo.ts) and WebSocket (subscriptions.ts)
 * alike: a mutation reads the primary from its start (what it returns must show its own write)...
 */
export function operationStarts(operation: OperationTypeNode | undefined): void {
  if (operation === OperationTypeNode.MUTATION) readPrimaryInScope();
}

/** ...and once it ran, errors or not (a mutation that failed halfway may still have written), its viewer is a recent writer. */
export function operationEnded(
  operation: OperationTypeNode | undefined,
  context: Pick<Context, 'auth' | 'wrote'>,
): void {
  if (operation === OperationTypeNode.MUTATION && context.auth?.kind === 'viewer') context.wrote(context.auth.userId);
}
