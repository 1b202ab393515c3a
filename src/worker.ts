/**
 * `npm run worker`: fan-out workers only (FANOUT_WORKERS of them, at least 1), no HTTP.
 * Start more processes to scale out; SIGTERM lets running jobs finish, then exits.
 */
import 'reflect-metadata';
import { logger, warn } from './app';
import { ConfigError, loadConfig } from './kernel/config';
import { runEntryPoint, stopOnSignals } from './kernel/lifecycle';
import { FanoutQueue } from './fanout/fanout.queue';
import { FanoutWorkers } from './fanout/fanout.worker';
import { Metrics } from './kernel/observability';
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
  const { db } = stores;
  const redis = stores.redis!; // never null outside the embedded mode
  const queue = new FanoutQueue(config);
  const workers = new FanoutWorkers({ config, db, redis, queue, warn, metrics: new Metrics() });
  const count = Math.max(1, config.fanoutWorkers);
  workers.start(count);
  logger.info(`fan-out worker running ${count} worker(s) x ${config.fanoutConcurrency} jobs (pid ${process.pid})`);
  stopOnSignals(
    'finishing running fan-out jobs',
    async () => {
      await workers.stop();
      await queue.close();
      await stores.close();
    },
    config.shutdownTimeoutMs,
  );
}

runEntryPoint(main);
