/**
 * Logs and metrics.
 *
 * Logs are JSON lines (pino): one per GraphQL request with its request id (the caller's
 * `x-request-id`, or a new one, echoed in the response), operation name, root field (the
 * metric's label), duration, viewer id and error codes; and the service's warnings. LOG_LEVEL
 * sets the level.
 *
 * Metrics (prom-client) are served at GET /metrics for Prometheus (with METRICS_TOKEN set, to a
 * scraper that sends it as a bearer token), by the API on PORT and by a fan-out worker process on
 * WORKER_PORT (kernel/probes.ts). Every label takes a bounded set of values:
 * - graphql_request_duration_seconds{operation}: request latency by operation, labelled with the
 *   operation's first root field when the schema has it (followFeed, publishBlog, ...),
 *   `introspection`, or `other`: a bounded set, whatever names clients make up;
 * - graphql_errors_total{code}: errors answered, by extensions.code (kernel/errors.ts);
 * - graphql_ws_sockets_open, graphql_subscriptions_open: live-feed sockets and subscriptions;
 * - fanout_queue_jobs{state}: the fan-out queue's depth by BullMQ state (waiting, prioritized,
 *   delayed, active, failed), and fanout_queue_waiting_jobs{lane}: jobs waiting to start by
 *   lane, `dispatch` (BullMQ's wait list, served first) and `chunk` (its prioritized set);
 * - fanout_lag_seconds: from a publish (or delete) to the last inbox write of its fan-out;
 * - fanout_job_errors_total{job,code}: fan-out job attempts that failed (they are retried), by
 *   job (dispatch, chunk) and cause (DATABASE_UNAVAILABLE, REDIS_UNAVAILABLE, OTHER);
 * - feed_inbox_writes_total: inboxes written by fan-out (rate() = inbox writes per second);
 * - feed_inbox_rebuilds_in_flight: inboxes being rebuilt from MySQL now;
 * - feed_page_reads_total{source}: feed pages served from an inbox ("inbox"), from MySQL
 *   ("pull": pull model, a missing inbox, Redis down), or continued from MySQL past the bottom
 *   of an inbox ("cold");
 * - redis_breaker_state{state}: 1 for the Redis circuit breaker's state (closed, open, half-open);
 * - mysql_replica_* and mysql_reads_total{target}: the read replicas (watchReplicas);
 * - the process's own (CPU, memory, event loop lag), prefixed feed_.
 * Fan-out figures are those of the workers in the serving process (FANOUT_WORKERS > 0, or a
 * worker process).
 */
// Types only: the entry points load this module before tracing starts, and graphql must load
// after it (telemetry.ts patches graphql's files as they load).
import type { FieldNode, GraphQLSchema, OperationDefinitionNode, SelectionNode } from 'graphql';
import pino, { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type { Logger };

/**
 * Writes to stdout asynchronously (pino's sonic-boom): a request's log line does not wait for the
 * write. pino flushes what is left when the process exits.
 */
export function createLogger(level = 'info'): Logger {
  return pino({ level, base: { service: 'follow-feed' } }, pino.destination({ dest: 1, sync: false }));
}

/**
 * The service's log (JSON lines), for every process: API, fan-out worker, scripts. It starts at
 * info; each entry point sets the level its configuration parsed (LOG_LEVEL) with setLogLevel.
 */
export const logger = createLogger();

export function setLogLevel(level: string): void {
  logger.level = level;
}

/** Warnings of background work (fan-out, relay, inbox repairs): logged, never thrown at a request. */
export function warn(message: string, error?: unknown): void {
  if (error === undefined) {
    logger.warn({ msg: message });
    return;
  }
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a thrown non-Error has nothing better than its String() form
  const err = error instanceof Error ? error.message : String(error);
  logger.warn({ msg: message, err });
}

export type PageSource = 'inbox' | 'pull' | 'cold';

/** Why a fan-out job attempt failed, as fanout_job_errors_total counts it. */
export type JobErrorCode = 'DATABASE_UNAVAILABLE' | 'REDIS_UNAVAILABLE' | 'OTHER';

/** The BullMQ states fanout_queue_jobs reports (`wait` is shown as `waiting`). */
export const QUEUE_STATES = ['wait', 'prioritized', 'delayed', 'active', 'failed'] as const;

/** The gauges that share one read of the queue per scrape (one Redis round trip). */
const QUEUE_GAUGES = 2;

/** A field, by graphql's Kind.FIELD ('Field'), without loading graphql here. */
function isField(selection: SelectionNode): selection is FieldNode {
  return (selection.kind as string) === 'Field';
}

/**
 * The `operation` label of an operation: its first root field if the schema's Query or
 * Mutation has it, `introspection` for __schema/__type, else `other` (no operation, a fragment
 * at the root, an unknown field). Never the client's operationName: every made-up name would
 * be a new time series in Prometheus, so the label set stays the schema's root fields.
 */
export function operationLabeler(schema: GraphQLSchema): (operation: OperationDefinitionNode | undefined) => string {
  const known = new Set(
    [schema.getQueryType(), schema.getMutationType()].flatMap((type) => (type ? Object.keys(type.getFields()) : [])),
  );
  return (operation) => {
    const first = operation?.selectionSet.selections.find(
      (selection) => !isField(selection) || selection.name.value !== '__typename',
    );
    if (!first || !isField(first)) return 'other';
    const name = first.name.value;
    if (name === '__schema' || name === '__type') return 'introspection';
    return known.has(name) ? name : 'other';
  };
}

/** What Metrics reads of the read replicas (db/replicas.ts). */
export interface ReplicaSource {
  replicaStatuses(): Array<{ replica: string; state: 'ok' | 'lagging' | 'down'; lagMs: number | null }>;
  readonly reads: Readonly<Record<'primary' | 'replica', number>>;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requestDuration = new Histogram({
    name: 'graphql_request_duration_seconds',
    help: 'GraphQL request latency by operation',
    labelNames: ['operation'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly fanoutLag = new Histogram({
    name: 'fanout_lag_seconds',
    help: 'From a publish or delete to the last inbox write of its fan-out',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  private readonly inboxWrites = new Counter({
    name: 'feed_inbox_writes_total',
    help: 'Inboxes written by fan-out',
    registers: [this.registry],
  });
  private readonly pageReads = new Counter({
    name: 'feed_page_reads_total',
    help: 'Feed pages by where they were served from',
    labelNames: ['source'],
    registers: [this.registry],
  });

  /**
   * The replicas' gauges and the lag-tolerant reads by target, read from `source` at each scrape
   * (db/replicas.ts keeps the numbers). Replica labels are URLs without their passwords.
   */
  watchReplicas(source: ReplicaSource): void {
    new Gauge({
      name: 'mysql_replica_lag_seconds',
      help: 'How far each read replica is behind the primary (-1: unknown, the replica is down)',
      labelNames: ['replica'],
      registers: [this.registry],
      collect() {
        for (const status of source.replicaStatuses())
          this.set({ replica: status.replica }, status.lagMs === null ? -1 : status.lagMs / 1000);
      },
    });
    new Gauge({
      name: 'mysql_replica_healthy',
      help: 'Whether each read replica serves reads (1) or is skipped as lagging or down (0)',
      labelNames: ['replica'],
      registers: [this.registry],
      collect() {
        for (const status of source.replicaStatuses())
          this.set({ replica: status.replica }, status.state === 'ok' ? 1 : 0);
      },
    });
    new Counter({
      name: 'mysql_reads_total',
      help: 'Reads that may lag (feed pages, profiles, the graph, batch loads) by where they ran',
      labelNames: ['target'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [target, count] of Object.entries(source.reads)) this.inc({ target }, count);
      },
    });
  }

  private readonly errors = new Counter({
    name: 'graphql_errors_total',
    help: 'GraphQL errors answered, by extensions.code',
    labelNames: ['code'],
    registers: [this.registry],
  });
  private readonly jobErrors = new Counter({
    name: 'fanout_job_errors_total',
    help: 'Fan-out job attempts that failed (retried with backoff), by job and cause',
    labelNames: ['job', 'code'],
    registers: [this.registry],
  });

  /** @param queueDepth the fan-out queue's job counts by BullMQ state (QUEUE_STATES) */
  constructor(queueDepth?: () => Promise<Record<string, number>>) {
    collectDefaultMetrics({ register: this.registry, prefix: 'feed_' });
    if (queueDepth) this.watchQueue(queueDepth);
  }

  /**
   * The queue's depth, read once per scrape for both gauges: by state, and waiting by lane
   * (see fanout/fanout.queue.ts: dispatch jobs wait in BullMQ's wait list, chunks by priority).
   */
  private watchQueue(queueDepth: () => Promise<Record<string, number>>): void {
    // A scrape collects each gauge once: a read serves the two of them, then the next scrape reads again.
    let reading: { uses: number; counts: Promise<Record<string, number>> } | null = null;
    const counts = () => {
      if (!reading || reading.uses >= QUEUE_GAUGES) reading = { uses: 0, counts: queueDepth().catch(() => ({})) };
      reading.uses += 1;
      return reading.counts;
    };
    new Gauge({
      name: 'fanout_queue_jobs',
      help: 'Fan-out jobs in the queue by state',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        for (const [state, count] of Object.entries(await counts()))
          this.set({ state: state === 'wait' ? 'waiting' : state }, count);
      },
    });
    new Gauge({
      name: 'fanout_queue_waiting_jobs',
      help: 'Fan-out jobs waiting to start, by lane (dispatch first, then chunks by priority)',
      labelNames: ['lane'],
      registers: [this.registry],
      async collect() {
        const found = await counts();
        this.set({ lane: 'dispatch' }, found.wait ?? found.waiting ?? 0);
        this.set({ lane: 'chunk' }, found.prioritized ?? 0);
      },
    });
  }

  /** The Redis circuit breaker's state (redis/breaker.ts), read at each scrape; undefined = no breaker, counted as closed. */
  watchBreaker(state: () => 'closed' | 'open' | 'half-open' | undefined): void {
    new Gauge({
      name: 'redis_breaker_state',
      help: "The Redis circuit breaker's state: 1 for the current one (open: Redis is skipped)",
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const current = state() ?? 'closed';
        for (const each of ['closed', 'open', 'half-open'] as const)
          this.set({ state: each }, each === current ? 1 : 0);
      },
    });
  }

  /** Inbox rebuilds running in this process (feed/feed.service.ts), read at each scrape. */
  watchRebuilds(inFlight: () => number): void {
    new Gauge({
      name: 'feed_inbox_rebuilds_in_flight',
      help: 'Inboxes being rebuilt from MySQL in this process',
      registers: [this.registry],
      collect() {
        this.set(inFlight());
      },
    });
  }

  /** The live feed's open WebSocket connections and subscriptions in this process (graphql/subscriptions.ts). */
  watchSubscriptions(open: () => { sockets: number; subscriptions: number }): void {
    new Gauge({
      name: 'graphql_ws_sockets_open',
      help: 'Open graphql-ws sockets (live feed) in this process',
      registers: [this.registry],
      collect() {
        this.set(open().sockets);
      },
    });
    new Gauge({
      name: 'graphql_subscriptions_open',
      help: 'Open subscriptions (followFeedAdded) in this process',
      registers: [this.registry],
      collect() {
        this.set(open().subscriptions);
      },
    });
  }

  /** One GraphQL response's error codes (each counted once per error). */
  errored(codes: readonly string[]): void {
    for (const code of codes) this.errors.inc({ code });
  }

  /** A fan-out job attempt failed: `code` is its cause (jobErrorCode). */
  jobFailed(job: 'dispatch' | 'chunk', code: JobErrorCode): void {
    this.jobErrors.inc({ job, code });
  }

  request(operation: string, seconds: number): void {
    this.requestDuration.observe({ operation }, seconds);
  }

  pageRead(source: PageSource): void {
    this.pageReads.inc({ source });
  }

  inboxesWritten(count: number): void {
    this.inboxWrites.inc(count);
  }

  fanoutFinished(lagSeconds: number): void {
    this.fanoutLag.observe(lagSeconds);
  }
}
