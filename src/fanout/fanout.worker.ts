/**
 * Fan-out workers: BullMQ workers that run dispatch and chunk jobs, plus the outbox relay and
 * the purge of finished tasks.
 * `npm start` runs FANOUT_WORKERS of them inside the API process; `npm run worker` runs them
 * alone, and more processes can be started to scale out.
 */
import { Job, Worker } from 'bullmq';
import type { FeedService } from '../feed/feed.service';
import type { Config } from '../kernel/config';
import { isDatabaseTooSlow, isDatabaseUnavailable } from '../db/database';
import type { JobErrorCode, Metrics } from '../kernel/observability';
import { isRedisUnavailable } from '../redis/breaker';
import { inSpan } from '../kernel/tracing';
import { connectRedis, RedisClient } from '../redis/redis.client';
import { FanoutDispatcher } from './fanout.dispatcher';
import { FanoutExecutor } from './fanout.executor';
import {
  ChunkJob,
  DispatchJob,
  FANOUT_QUEUE,
  FanoutJobData,
  FanoutJobName,
  FanoutQueue,
  queuePrefix,
} from './fanout.queue';
import { FanoutPurger } from './fanout.purge';
import { OutboxRelay } from './fanout.relay';
import { FanoutLog } from './fanout.service';
import { FanoutStore, FanoutTask } from './fanout.store';

/**
 * How long stop() lets BullMQ finish closing once no job of this process runs any more. Its close
 * can wait for good on a blocking connection that was reconnecting when it was called (Redis just
 * restarted: ioredis's disconnect of a socketless client never emits the 'end' BullMQ waits for);
 * what is left then is a few round trips, so past this the workers are dropped with a warning.
 */
export const WORKER_CLOSE_AFTER_JOBS_MS = 3000;

export interface FanoutWorkerDeps {
  config: Config;
  /** The outbox, on the workers' own MySQL pool. */
  store: FanoutStore;
  /** The feed rules: what enters an inbox (on the same pool as `store`). */
  feed: FeedService;
  queue: FanoutQueue;
  now?: () => Date;
  warn: FanoutLog;
  metrics?: Metrics;
}

export class FanoutWorkers {
  private readonly workers: Worker<FanoutJobData, void, FanoutJobName>[] = [];
  private readonly connections: RedisClient[] = [];
  private readonly relay: OutboxRelay;
  private readonly purger: FanoutPurger;
  private readonly dispatcher: FanoutDispatcher;
  private readonly executor: FanoutExecutor;
  /** The jobs this process runs now: stop() waits for them itself, not through BullMQ's close. */
  private readonly jobsInFlight = new Set<Promise<unknown>>();
  /** Dispatches running here for this process's own publishes (dispatchHere). */
  private dispatchingHere = 0;
  private stopping = false;

  constructor(private readonly deps: FanoutWorkerDeps) {
    const { store, feed } = deps;
    this.relay = new OutboxRelay({
      store,
      queue: deps.queue,
      intervalMs: deps.config.outboxRelayIntervalMs,
      redriveAfterMs: deps.config.fanoutRedriveAfterMs,
      warn: deps.warn,
      feed,
    });
    this.purger = new FanoutPurger({
      store,
      retentionDays: deps.config.fanoutRetentionDays,
      now: deps.now ?? (() => new Date()),
      warn: deps.warn,
    });
    // A finished deliver task leaves the watermark: readers trust inboxes at its score again.
    const completed = (task: { taskId: number; authorId: number }, lagSeconds: number) => {
      deps.metrics?.fanoutFinished(lagSeconds);
      feed
        .deliveryFinished([task])
        .catch((error: unknown) =>
          deps.warn(`fan-out task ${task.taskId} stays in the watermark until the relay's next pass`, error),
        );
    };
    this.dispatcher = new FanoutDispatcher({
      store,
      queue: deps.queue,
      chunkSize: deps.config.fanoutChunkSize,
      onComplete: completed,
      runChunk: (chunk, task) => this.runChunk(chunk, task),
      listed: () => feed.followersListed(),
    });
    this.executor = new FanoutExecutor({ store, feed, onComplete: completed, metrics: deps.metrics });
  }

  /** Starts `count` workers and the relay. */
  start(count: number): void {
    const { config } = this.deps;
    for (let i = 0; i < count; i += 1) {
      // Workers block on Redis while waiting for jobs: BullMQ requires maxRetriesPerRequest null,
      // and no commandTimeout (REDIS_COMMAND_TIMEOUT_MS): its blocking connection, a duplicate of
      // this one, waits seconds for a job by design. Inbox writes go through the feed's client, which has it.
      const connection = connectRedis(config, { maxRetriesPerRequest: null });
      connection.on('error', () => {});
      this.connections.push(connection);
      const worker = new Worker<FanoutJobData, void, FanoutJobName>(FANOUT_QUEUE, (job) => this.process(job), {
        connection,
        prefix: queuePrefix(config.redisKeyPrefix),
        concurrency: config.fanoutConcurrency,
        lockDuration: config.fanoutLockMs,
        stalledInterval: Math.max(500, Math.floor(config.fanoutLockMs / 2)),
        // A job whose worker died is retried; only one that keeps killing workers is failed.
        maxStalledCount: 5,
        ...(config.fanoutJobsPerSecond > 0 ? { limiter: { max: config.fanoutJobsPerSecond, duration: 1000 } } : {}),
      });
      worker.on('failed', (job, error) => {
        if (job) this.deps.metrics?.jobFailed(job.name, jobErrorCode(error));
        if (job && job.attemptsMade >= (job.opts.attempts ?? 1))
          this.deps.warn(`fan-out job ${job.id} failed for good`, error);
      });
      worker.on('error', (error) => this.deps.warn('fan-out worker error', error));
      this.workers.push(worker);
    }
    if (count > 0) {
      this.relay.start();
      this.purger.start();
    }
  }

  private process(job: Job<FanoutJobData, void, FanoutJobName>): Promise<void> {
    return this.tracked(this.runJob(job));
  }

  /** `run`, which stop() waits for. */
  private tracked<T>(run: Promise<T>): Promise<T> {
    this.jobsInFlight.add(run);
    const forget = () => this.jobsInFlight.delete(run);
    run.then(forget, forget);
    return run;
  }

  /**
   * A task this process has just committed (FanoutService.enqueue), dispatched here at once when
   * its followers fit in one chunk, as most authors' do: no dispatch job is added, taken and
   * finished in Redis (about 40 commands in three scripts, and the worker's bookkeeping), which
   * cost more than writing a few dozen inboxes, and the blog reaches them without waiting behind
   * other jobs. What makes this safe is what makes a job safe: the task is in the outbox, its
   * writes are idempotent and only one finish counts, so a process that dies meanwhile leaves the
   * task pending and the relay queues it (after RELAY_GRACE_MS), as it does when an enqueue fails.
   *
   * Resolves null when the task was delivered and finished here; else the job to queue: the same
   * one (more followers than a chunk; FANOUT_CONCURRENCY dispatches already running here; the
   * workers stopping; or FANOUT_JOBS_PER_SECOND set, which only jobs obey), or one without its
   * `fresh` part after a failure here, whose run reads the task again (and BullMQ retries it).
   */
  async dispatchHere(job: DispatchJob): Promise<DispatchJob | null> {
    const { config, warn, metrics } = this.deps;
    if (!job.fresh || this.stopping || config.fanoutJobsPerSecond > 0) return job;
    if (this.dispatchingHere >= config.fanoutConcurrency) return job;
    this.dispatchingHere += 1;
    try {
      return (await this.tracked(this.dispatcher.dispatchIfOneChunk(job.taskId, job.fresh))) ? null : job;
    } catch (error) {
      metrics?.jobFailed('dispatch', jobErrorCode(error));
      warn(`fan-out task ${job.taskId} failed in the process that published it; it is queued for the workers`, error);
      return { taskId: job.taskId };
    } finally {
      this.dispatchingHere -= 1;
    }
  }

  private async runJob(job: Job<FanoutJobData, void, FanoutJobName>): Promise<void> {
    if (job.name === 'dispatch') {
      const { taskId, fresh } = job.data as DispatchJob;
      // Only a first run may trust what the job says of its task (FreshTask): attemptsStarted
      // counts retries and stalled runs alike.
      await this.dispatcher.dispatch(taskId, job.attemptsStarted <= 1 ? fresh : undefined);
    } else await this.runChunk(job.data as ChunkJob, undefined, job.attemptsStarted <= 1);
  }

  /**
   * A chunk, from its job (`firstRun`: the job's first run), or inline in the dispatch of its
   * task, the task's only one (fanout.dispatcher.ts).
   */
  private runChunk(chunk: ChunkJob, onlyChunkOf?: FanoutTask, firstRun = false): Promise<void> {
    const attributes = {
      'fanout.task_id': chunk.taskId,
      'fanout.chunk': chunk.seq,
      'fanout.kind': chunk.kind,
      'fanout.readers': chunk.followerIds.length,
    };
    return inSpan('fanout chunk', chunk.trace, attributes, () =>
      onlyChunkOf ? this.executor.runOnlyChunk(chunk, onlyChunkOf) : this.executor.runChunk(chunk, firstRun),
    );
  }

  /** Whether every worker is running (readiness of a worker process). */
  running(): boolean {
    return this.workers.length > 0 && this.workers.every((worker) => worker.isRunning());
  }

  /** Lets running jobs finish (a SIGTERM'd worker hands nothing half-done back), then stops. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.relay.stop();
    await this.purger.stop();
    // Closing stops BullMQ fetching jobs at once; the running ones then finish on their own.
    const closed = Promise.all(this.workers.map((worker) => worker.close())).then(() => true);
    await Promise.race([closed, this.jobsFinished()]);
    if (!(await within(closed, WORKER_CLOSE_AFTER_JOBS_MS))) {
      this.deps.warn(
        `fan-out workers had not closed ${WORKER_CLOSE_AFTER_JOBS_MS} ms after their last job (a blocking Redis connection that was reconnecting): dropped`,
      );
    }
    for (const connection of this.connections) connection.disconnect();
  }

  /** Resolves once no job of this process runs (jobs started meanwhile included). */
  private async jobsFinished(): Promise<void> {
    while (this.jobsInFlight.size > 0) await Promise.allSettled([...this.jobsInFlight]);
  }
}

/** Whether `promise` settles within `ms` milliseconds (its outcome aside). */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Why a job attempt failed, for fanout_job_errors_total: a store away (the retry will likely succeed once it is back), or anything else. */
function jobErrorCode(error: unknown): JobErrorCode {
  if (isDatabaseUnavailable(error) || isDatabaseTooSlow(error)) return 'DATABASE_UNAVAILABLE';
  if (isRedisUnavailable(error)) return 'REDIS_UNAVAILABLE';
  return 'OTHER';
}
