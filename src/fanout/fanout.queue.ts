/**
 * The fan-out queue (BullMQ on Redis): its name, its two kinds of job and their options.
 *
 * - `dispatch` {taskId, fresh?}: walks the author's followers and creates chunk jobs. `fresh`: the
 *   task as its publish (or delete) recorded it, when the API queued the job right after the
 *   commit; the relay's jobs carry none (see FreshTask).
 * - `chunk` {taskId, seq, kind, blogId, authorId, score, followerIds}: writes one chunk of inboxes. The
 *   job carries what the executor needs (the dispatcher has just read the follower ids), so
 *   running a chunk costs no reads of the task, the chunk or tb_follow: per-chunk overhead
 *   is what bounds delivery speed (bench/fanout.bench.ts).
 *
 * Job ids are derived from the task (and chunk), so adding the same job twice while it is still
 * in the queue is a no-op: the outbox relay and a resumed dispatcher may both re-add safely.
 *
 * ## Lanes: which job runs next
 * One queue, ordered by BullMQ's job priorities (see chunkPriority): dispatch jobs carry none and
 * go first (BullMQ serves its plain wait list before any prioritized job), and the k-th chunk of
 * every task has priority k. So a fan-out that fits in one chunk waits for no chunk of a big one
 * except a first chunk, and big fan-outs advance together chunk by chunk: a newer one catches
 * up with the older ones (its chunk 1 goes before their chunk 40), then they alternate. Every
 * task's k-th chunk is served before any task's (k+1)-th: the fan-out that got least so far goes
 * next, which finishes small fan-outs first and shares the workers among big ones.
 *
 * Why priorities rather than a second queue for small fan-outs: BullMQ 6 keeps them in Redis
 * (a sorted set scored by priority, then by insertion order), so every worker of every process
 * honours one order without coordination, and the rest of the queue's machinery works unchanged:
 * a retried job waits out its backoff in the delayed set and comes back with its priority
 * (retryJob, promoteDelayedJobs), a stalled job (its worker died) goes to the wait list and so
 * runs again first, and the rate limit (FANOUT_JOBS_PER_SECOND) counts every job of the queue.
 * A second queue would need its own workers and limiter (two rates to configure, or slots idle
 * in one lane while the other is backed up), and would only separate small from big, not share
 * the workers between several big fan-outs. BullMQ has no per-group fairness outside its Pro
 * version ("groups"), and priorities are a bounded integer (PRIORITY_LIMIT).
 */
import { JobsOptions, PRIORITY_LIMIT, Queue } from 'bullmq';
import type { Config } from '../kernel/config';
import { connectRedis, RedisClient } from '../redis/redis.client';
import { withTimeout } from '../kernel/timeout';
import type { Listing } from '../feed/inbox';
import type { TaskKind } from './fanout.store';

export const FANOUT_QUEUE = 'fanout';

/**
 * A task as its request recorded it, carried by the dispatch job the API queues after the commit:
 * the job's first run knows the task without reading it (a statement of the four a publish's
 * dispatch ran; SQL round trips are most of a publish's cost). Only the first run may trust it:
 * a task read later may have been dispatched in part (a worker died mid-way), and a re-run
 * (attempt or stalled job) reads the row. A blog deleted before the first run needs no read
 * either: the delivery's finishing statement checks it (fanout.executor.ts).
 */
export interface FreshTask {
  kind: TaskKind;
  blogId: number;
  authorId: number;
  score: number;
  /**
   * When the job was queued (epoch ms), just after the commit: the fan-out lag of a fresh dispatch
   * counts from here, a commit's time later than its row's created_at.
   */
  queuedAt: number;
  /** The traceparent of the recording request (kernel/tracing.ts); absent when untraced. */
  trace?: string;
}

export interface DispatchJob {
  taskId: number;
  fresh?: FreshTask;
}
export interface ChunkJob {
  taskId: number;
  seq: number;
  kind: TaskKind;
  blogId: number;
  authorId: number;
  score: number;
  followerIds: number[];
  /**
   * When MySQL listed `followerIds` (FeedService.followersListed, Delivery.listed); absent when
   * not known, in jobs queued before it was carried, and in a chunk run inline by the publishing
   * process, which reads no clock on a publish's path.
   */
  listed?: Listing;
  /** The traceparent of the dispatch that made the chunk (kernel/tracing.ts); absent when untraced. */
  trace?: string;
}
export type FanoutJobData = DispatchJob | ChunkJob;
export type FanoutJobName = 'dispatch' | 'chunk';

/**
 * Completed jobs are dropped (the task row is the record), failed ones are kept so that an
 * operator can see them, until the relay drives their task again (FanoutQueue.add with redrive).
 * Attempts and backoff come from the configuration (FanoutQueue.add): by default 10 attempts
 * with exponential backoff (0.5 s, 1 s, 2 s, ... about 4 minutes in all) ride out a MySQL or
 * Redis restart; a longer outage leaves the job failed, and the relay's redrive starts it again.
 */
const JOB_OPTIONS: JobsOptions = {
  removeOnComplete: true,
  removeOnFail: { count: 10_000 },
};

export type FanoutJob = ReturnType<typeof dispatchJob> | ReturnType<typeof chunkJob>;

export interface AddOptions {
  /**
   * A job under the same id that used up its attempts (BullMQ's failed set) is removed first,
   * so the job runs again: re-adding a job id that still exists is otherwise a no-op, and the
   * event would stay stranded however often it is re-queued.
   */
  redrive?: boolean;
}

export function dispatchJob(
  taskId: number,
  fresh?: FreshTask,
): { name: FanoutJobName; data: DispatchJob; opts: JobsOptions } {
  return {
    name: 'dispatch',
    data: fresh ? { taskId, fresh } : { taskId },
    opts: { ...JOB_OPTIONS, jobId: `dispatch-${taskId}` },
  };
}

/**
 * The priority of a task's chunk `seq` (1, 2, ...): its position in the task (see Lanes above).
 * Chunks past BullMQ's limit (2,097,151) share the last priority, in the order they were queued.
 */
export function chunkPriority(seq: number): number {
  return Math.min(Math.max(1, seq), PRIORITY_LIMIT);
}

export function chunkJob(data: ChunkJob): { name: FanoutJobName; data: ChunkJob; opts: JobsOptions } {
  return {
    name: 'chunk',
    data,
    opts: { ...JOB_OPTIONS, jobId: `chunk-${data.taskId}-${data.seq}`, priority: chunkPriority(data.seq) },
  };
}

/** BullMQ keys live under the deployment's key prefix, beside the inboxes. */
export function queuePrefix(redisKeyPrefix: string): string {
  // The hash tag puts every key of the queue into one slot, as BullMQ needs on a cluster.
  return `${redisKeyPrefix}{fanout}`;
}

/** Adding with a bound on the wait: a publish must not hang on an unreachable Redis. */
const ADD_TIMEOUT_MS = 2000;

/**
 * The producer side. Its connection fails fast (no offline queue, one retry) so that a publish
 * while Redis is down returns at once and leaves the event to the outbox relay.
 */
export class FanoutQueue {
  private readonly connection: RedisClient;
  readonly queue: Queue<FanoutJobData, void, FanoutJobName>;
  /** FANOUT_JOB_ATTEMPTS and FANOUT_JOB_BACKOFF_MS, given to every job. */
  private readonly retry: JobsOptions;

  constructor(
    config: Pick<
      Config,
      | 'redisUrl'
      | 'redisClusterNodes'
      | 'redisKeyPrefix'
      | 'redisCommandTimeoutMs'
      | 'fanoutJobAttempts'
      | 'fanoutJobBackoffMs'
    >,
  ) {
    // A Redis that hangs fails an add after REDIS_COMMAND_TIMEOUT_MS, like one that is down.
    this.connection = connectRedis(config, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      commandTimeout: config.redisCommandTimeoutMs,
    });
    this.connection.on('error', () => {
      // Reported where it matters (a failed add); ioredis keeps reconnecting by itself.
    });
    this.queue = new Queue<FanoutJobData, void, FanoutJobName>(FANOUT_QUEUE, {
      connection: this.connection,
      prefix: queuePrefix(config.redisKeyPrefix),
    });
    this.queue.on('error', () => {});
    this.retry = {
      attempts: config.fanoutJobAttempts,
      backoff: { type: 'exponential', delay: config.fanoutJobBackoffMs },
    };
  }

  /** Adds jobs in one round trip; rejects when Redis does not answer within ADD_TIMEOUT_MS. */
  async add(jobs: FanoutJob[], options: AddOptions = {}): Promise<void> {
    if (jobs.length === 0) return;
    const adding = async () => {
      if (options.redrive) await this.removeFailed(jobs);
      await this.queue.addBulk(jobs.map((job) => ({ ...job, opts: { ...job.opts, ...this.retry } })));
    };
    await withTimeout(adding(), ADD_TIMEOUT_MS, 'the fan-out queue');
  }

  /** Removes the jobs under these ids that are in the failed set (their attempts are used up). */
  private async removeFailed(jobs: FanoutJob[]): Promise<void> {
    const ids = jobs.map((job) => job.opts.jobId!);
    const states = await Promise.all(ids.map((id) => this.queue.getJobState(id)));
    await Promise.all(ids.filter((_, i) => states[i] === 'failed').map((id) => this.queue.remove(id)));
  }

  async close(): Promise<void> {
    await this.queue.close().catch(() => {});
    this.connection.disconnect();
  }
}
