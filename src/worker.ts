/**
 * `npm run worker`: fan-out workers only (FANOUT_WORKERS of them, at least 1), no HTTP. Start
 * more processes to scale out; SIGTERM lets running jobs finish, then exits.
 *
 * It loads the domain and the stores only (composition.ts), never the API layer: no Apollo, no
 * Express, no resolver (test/integration/worker-process.test.ts checks what a running worker
 * has loaded).
 */
import 'reflect-metadata';
import { startFanoutWorkers } from './composition';
import { isMysql } from './db/mysql';
import { FanoutQueue } from './fanout/fanout.queue';
import { ConfigError, loadConfig } from './kernel/config';
import { runEntryPoint, stopOnSignals } from './kernel/lifecycle';
import { logger, Metrics, warn } from './kernel/observability';
import { describeStores, openStores } from './stores';

async function main(): Promise<void> {
  const config = loadConfig();
  if (config.embedded) {
    throw new ConfigError(
      'a fan-out worker needs Redis and MySQL: the embedded mode (no DATABASE_URL, REDIS_URL or REDIS_CLUSTER_NODES) ' +
        'uses the pull model and fans nothing out',
    );
  }
  logger.info(describeStores(config));
  const stores = await openStores(config, logger);
  const { db, redis } = stores;
  if (!isMysql(db) || !redis) throw new Error('outside the embedded mode the stores are MySQL and Redis');
  const fanoutQueue = new FanoutQueue(config);
  const count = Math.max(1, config.fanoutWorkers);
  const workers = startFanoutWorkers({ config, redis, fanoutQueue, metrics: new Metrics(), warn }, count, { kind: 'shared', db });
  logger.info(`fan-out worker running ${count} worker(s) x ${config.fanoutConcurrency} jobs (pid ${process.pid})`);
  stopOnSignals(
    'finishing running fan-out jobs',
    async () => {
      await workers.stop();
      await fanoutQueue.close();
      await stores.close();
    },
    config.shutdownTimeoutMs,
  );
}

runEntryPoint(main);
