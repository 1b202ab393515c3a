/**
 * Which Redis server(s) a client talks to, as the servers name themselves: each server's run id
 * (new at every start, so a restart from a dump, a restore from a backup or a failover to another
 * server all show) and its replication id (new when a replica is promoted or a server is
 * re-pointed). On a cluster, every master's, in a stable order. feed/generation.ts compares it
 * with the identity recorded in MySQL.
 */
import type { Redis } from 'ioredis';
import { isCluster, RedisClient } from './redis.client';

/** One field of an INFO reply ("run_id:abc" lines). */
function infoField(info: string, name: string): string {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '';
}

async function serverIdentity(server: Redis | RedisClient): Promise<string> {
  const [serverInfo, replication] = await Promise.all([server.info('server'), server.info('replication')]);
  return `${infoField(serverInfo, 'run_id')}/${infoField(replication, 'master_replid')}`;
}

/** The identity of the server, or of every master of the cluster, behind this client. */
export async function redisIdentity(redis: RedisClient): Promise<string> {
  if (!isCluster(redis)) return serverIdentity(redis);
  const masters = await Promise.all(redis.nodes('master').map((node) => serverIdentity(node)));
  return masters.sort().join(',');
}
