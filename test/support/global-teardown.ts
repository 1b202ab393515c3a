/** After the tests: stops the Redis Cluster of the cluster pass, if one was started. */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { CLUSTER_PIDS_FILE } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  if (!existsSync(CLUSTER_PIDS_FILE)) return;
  for (const pid of JSON.parse(readFileSync(CLUSTER_PIDS_FILE, 'utf8')) as number[]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(CLUSTER_PIDS_FILE);
}
