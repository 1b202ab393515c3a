/**
 * `npm run worker`: fan-out workers only (FANOUT_WORKERS of them, at least 1), and on
 * WORKER_PORT its probes: /metrics (fan-out lag, queue depth by lane, inbox writes, the
 * breaker, job errors...), /healthz and /readyz (kernel/probes.ts). Start more processes to
 * scale out; SIGTERM lets running jobs finish, then exits.
 *
 * It loads the domain and the stores only (composition.ts), never the API layer: no Apollo, no
 * Express, no resolver (test/integration/ops/worker-process.test.ts checks what a running worker
 * has loaded). Tracing starts first, as in server.ts: what it instruments is imported after it.
 */
import 'reflect-metadata';
import type { MysqlDatabase } from './db/database';
import type { RedisClient } from './redis/redis.client';
import { ConfigError, loadConfig } from './kernel/config';
import { runEntryPoint, stopOnSignals } from './kernel/lifecycle';
import { logger, setLogLevel, warn } from './kernel/observability';
import { Readiness, serveProbes } from './kernel/probes';
import { withTimeout } from './kernel/timeout';
import { startTracing } from './telemetry';

/** How long /readyz waits for MySQL and Redis (as the API's). */
const READY_TIMEOUT_MS = 1000;

async function main(): Promise<void> {
  const config = loadConfig();
  setLogLevel(config.logLevel);
  if (config.embedded) {
    throw new ConfigError(
      'a fan-out worker needs Redis and MySQL: the embedded mode (no DATABASE_URL, REDIS_URL or REDIS_CLUSTER_NODES) ' +
        'uses the pull model and fans nothing out',
    );
  }
  const tracing = await startTracing(config.operations, 'follow-feed-worker');
  const [
    { processMetrics, startFanoutWorkers },
    { isMysql },
    { FanoutQueue },
    { breakerOf },
    { describeStores, openStores },
  ] = await Promise.all([
    import('./composition'),
    import('./db/mysql'),
    import('./fanout/fanout.queue'),
    import('./redis/breaker'),
    import('./stores'),
  ]);
  logger.info(describeStores(config));
  const stores = await openStores(config, logger);
  const { db, redis } = stores;
  if (!isMysql(db) || !redis) throw new Error('outside the embedded mode the stores are MySQL and Redis');
  const fanoutQueue = new FanoutQueue(config);
  const metrics = processMetrics(db, redis, fanoutQueue);
  const count = Math.max(1, config.fanoutWorkers);
  const workers = startFanoutWorkers({ config, redis, fanoutQueue, metrics, warn }, count, { kind: 'shared', db });
  const probes = await serveProbes({
    host: config.host,
    port: config.operations.workerPort,
    portSetting: 'WORKER_PORT',
    metrics,
    metricsToken: config.metricsToken,
    readiness: () => readiness(db, redis, () => breakerOf(redis)?.state ?? 'closed', workers.running()),
  });
  stopOnSignals(
    'finishing running fan-out jobs',
    async () => {
      await workers.stop();
      await fanoutQueue.close();
      await probes.close();
      await stores.close();
      await tracing.shutdown();
    },
    config.shutdownTimeoutMs,
  );
  // Announced once the handlers are in place: a SIGTERM sent on seeing this line (a supervisor,
  // a test) is a graceful stop, never the default action that kills the process mid-step.
  logger.info(
    `fan-out worker running ${count} worker(s) x ${config.fanoutConcurrency} jobs (pid ${process.pid}); probes and metrics on ${probes.url}`,
  );
}

/**
 * Ready means "can do fan-out work now": its workers run, MySQL answers and Redis answers with
 * its breaker closed. Unlike the API, which serves degraded feeds without Redis, a worker
 * without Redis gets no jobs, so Redis down makes it not ready (jobs wait in the queue and the
 * outbox meanwhile; nothing is lost).
 */
async function readiness(
  db: MysqlDatabase,
  redis: RedisClient,
  breaker: () => string,
  workersRunning: boolean,
): Promise<Readiness> {
  const check = (name: string, probe: Promise<unknown>) =>
    withTimeout(probe, READY_TIMEOUT_MS, name).then(
      () => 'ok',
      (error: unknown) => String(error),
    );
  const [mysql, redisCheck] = await Promise.all([check('MySQL', db.select('SELECT 1')), check('Redis', redis.ping())]);
  const redisState = redisCheck === 'ok' && breaker() !== 'closed' ? `circuit breaker ${breaker()}` : redisCheck;
  return {
    ready: workersRunning && mysql === 'ok' && redisState === 'ok',
    details: { workers: workersRunning ? 'running' : 'stopped', mysql, redis: redisState },
  };
}

runEntryPoint(main);
