/**
 * An API process: the domain services (composition.ts), the in-process fan-out workers
 * (FANOUT_WORKERS), and the HTTP API on top (graphql/api.ts). `npm start` runs it (server.ts);
 * the tests and benchmarks start it with their own configuration.
 */
import { Core, createCore, CoreDeps, RunningWorkers, startFanoutWorkers } from './composition';
import { SqlStatementLog } from './db/database';
import { RunningApi, startApi } from './graphql/api';
import { PersistedDocuments } from './graphql/persisted-documents';
import { buildFeedSchema } from './graphql/schema';
import type { Services } from './graphql/context';
import { logger, setLogLevel } from './kernel/observability';

export interface RunningApp {
  url: string;
  services: Services & Core;
  /** The HTTP server, for probes (RunningApi.httpServer). */
  httpServer: RunningApi['httpServer'];
  /**
   * Stops accepting, finishes in-flight requests and the running fan-out jobs of this process
   * (queued ones stay queued for the next worker). Closing the stores is the caller's.
   */
  stop(): Promise<void>;
}

export async function startApp(deps: CoreDeps): Promise<RunningApp> {
  setLogLevel(deps.config.logLevel);
  // The trusted documents first: a manifest that cannot be used stops the start before anything runs.
  const documents = PersistedDocuments.load(deps.config.persistedDocuments, buildFeedSchema());
  const core = createCore(deps);
  // Until the Redis generation is confirmed and this process has caught up, pages come from MySQL.
  core.feed.start();
  const workers: RunningWorkers | null =
    core.fanoutQueue && deps.config.fanoutWorkers > 0
      ? startFanoutWorkers(
          core,
          deps.config.fanoutWorkers,
          { kind: 'own', sqlLog: new SqlStatementLog(logger) },
          deps.now,
        )
      : null;
  const api = await startApi(core, documents);
  return {
    url: api.url,
    services: { ...core, ...api.services },
    httpServer: api.httpServer,
    async stop() {
      await api.stop();
      await core.fanout?.flush();
      await workers?.stop();
      core.feed.stop();
      core.hydration?.close();
      await core.fanoutQueue?.close();
      await Promise.allSettled([core.liveBuses.readers.close(), core.liveBuses.authors.close(), core.sessions.close()]);
    },
  };
}
