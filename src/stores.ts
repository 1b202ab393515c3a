/**
 * Opening the configured stores, for every entry point (server, worker, seed, tests):
 * - with DATABASE_URL / REDIS_URL / REDIS_CLUSTER_NODES: MySQL (created and migrated when
 *   needed and MIGRATE_ON_START is on) and Redis;
 * - with none of them: the embedded mode, a SQLite file (created and migrated the same way)
 *   and no Redis at all.
 * With MIGRATE_ON_START=off nothing is created or migrated: a database that lacks a migration
 * stops the process with a message that says to run `npm run migrate`.
 */
import { resolve } from 'node:path';
import { Database, LogSink, SqlStatementLog } from './db/database';
import { MigrationsPending, openMysql, openSqlite } from './db/migrate';
import type { MysqlDatabase } from './db/database';
import type { MysqlPool, PoolLimits } from './db/mysql';
import { redactUrl, ReplicatedDatabase } from './db/replicas';
import { Config, ConfigError } from './kernel/config';
import { checkMemoryPolicy, createRedis, RedisClient } from './redis/redis.client';

export interface Stores {
  /** The Database adapter chosen by the configuration: MySQL, or the embedded SQLite file. */
  db: Database;
  /** null in the embedded mode. */
  redis: RedisClient | null;
  /** Closes both. */
  close(): Promise<void>;
}

/** `log` receives the database's and Redis's warnings: the service's logger, passed down from the entry point. */
export async function openStores(config: Config, log: LogSink, sqlLog = new SqlStatementLog(log)): Promise<Stores> {
  const { migrateOnStart } = config.operations;
  if (config.embedded) {
    const db = await openSqlite(config.embeddedDbFile, sqlLog, migrateOnStart).catch((error: unknown) => {
      throw new ConfigError(
        `cannot open the embedded database EMBEDDED_DB_FILE (${resolve(config.embeddedDbFile)}): ${reasonOf(error)}`,
      );
    });
    return { db, redis: null, close: () => db.close() };
  }
  const primary = await openMysql(config.databaseUrl, sqlLog, poolLimits(config), migrateOnStart).catch(
    (error: unknown) => {
      throw new ConfigError(
        `cannot open the database of DATABASE_URL (${redactUrl(config.databaseUrl)}): ${reasonOf(error)}`,
      );
    },
  );
  const db = await withReplicas(primary, config, sqlLog);
  const redis = createRedis(config, (message) => log.warn(message));
  await checkMemoryPolicy(redis, (message) => log.warn(message)).catch(async (error: unknown) => {
    await Promise.allSettled([db.close(), redis.quit()]);
    throw error;
  });
  return {
    db,
    redis,
    async close() {
      await Promise.allSettled([db.close(), redis.quit()]);
    },
  };
}

function reasonOf(error: unknown): string {
  return error instanceof MigrationsPending ? error.message : String(error);
}

/**
 * The primary alone, or with DATABASE_REPLICA_URLS its replicas beside it (migrations ran on the
 * primary only: the replicas receive them through replication). A replica that is down at start
 * is no error: it is skipped until its health check finds it well.
 */
async function withReplicas(primary: MysqlPool, config: Config, sqlLog: SqlStatementLog): Promise<MysqlDatabase> {
  if (config.databaseReplicaUrls.length === 0) return primary;
  const db = new ReplicatedDatabase({
    primary,
    replicaUrls: config.databaseReplicaUrls,
    limits: poolLimits(config),
    log: sqlLog,
    settings: { maxLagMs: config.replicaMaxLagMs },
  });
  await db.start();
  return db;
}

/** The MySQL pool's limits from the configuration. */
export function poolLimits(
  config: Pick<Config, 'databasePoolSize' | 'databaseStatementTimeoutMs' | 'feedRebuildsInFlight'>,
): PoolLimits {
  return {
    poolSize: config.databasePoolSize,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    snapshotPoolSize: config.feedRebuildsInFlight,
  };
}

/** What the process runs on, in one line (the first line the server logs). */
export function describeStores(config: Config): string {
  if (config.embedded) {
    return (
      `embedded mode: SQLite at ${resolve(config.embeddedDbFile)}, FEED_MODEL=pull, rate limits in process memory, ` +
      'no Redis (set DATABASE_URL and REDIS_URL to run on MySQL and Redis)'
    );
  }
  const redis = config.redisClusterNodes
    ? `Redis Cluster ${config.redisClusterNodes.map((node) => `${node.host}:${node.port}`).join(',')}`
    : `Redis ${redactUrl(config.redisUrl)}`;
  const replicas = config.databaseReplicaUrls.length
    ? ` (replicas ${config.databaseReplicaUrls.map(redactUrl).join(',')})`
    : '';
  return `MySQL ${redactUrl(config.databaseUrl)}${replicas}, ${redis}, FEED_MODEL=${config.feedModel}`;
}
