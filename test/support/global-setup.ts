/**
 * Before the tests: builds dist/ (some tests start the real server and worker processes and
 * kill them; tsc is incremental, so an unchanged tree takes seconds), and, for the cluster pass
 * (TEST_REDIS_CLUSTER=on, `npm run test:cluster`), starts a 3-node Redis Cluster on free local
 * ports with redis-server --cluster-enabled, whose nodes the tests find in
 * TEST_REDIS_CLUSTER_NODES. global-teardown.ts stops it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes';

/**
 * The cluster's pids, for global-teardown.ts. Named after this Jest process (setup and teardown
 * run in it): with one shared name, any other run's teardown on the machine (another checkout,
 * even one without a cluster) killed this run's cluster midway.
 */
export const CLUSTER_PIDS_FILE = join(tmpdir(), `feed-test-cluster-pids-${process.pid}.json`);

export default async function globalSetup(): Promise<void> {
  const root = join(__dirname, '..', '..');
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  execFileSync(process.execPath, [join(root, 'scripts', 'copy-lua.mjs')], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [join(root, 'scripts', 'build-graphiql.mjs')], { cwd: root, stdio: 'ignore' });
  if (process.env.TEST_REDIS_CLUSTER === 'on') await startCluster();
}

async function startCluster(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'feed-cluster-'));
  const ports = [await freePort(), await freePort(), await freePort()];
  const pids: number[] = [];
  for (const port of ports) {
    const node = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--zset-max-listpack-entries',
        '1024',
      ],
      { stdio: 'ignore', detached: true },
    );
    node.unref();
    pids.push(node.pid!);
  }
  writeFileSync(CLUSTER_PIDS_FILE, JSON.stringify(pids));
  const addresses = ports.map((port) => `127.0.0.1:${port}`);
  for (const port of ports) await until(() => ping(port), `redis-server on ${port}`);
  execFileSync('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], {
    stdio: 'ignore',
  });
  for (const port of ports) await until(() => clusterOk(port), `cluster state ok on ${port}`);
  process.env.TEST_REDIS_CLUSTER_NODES = addresses.join(',');
  console.log(`\nRedis Cluster for the tests: ${process.env.TEST_REDIS_CLUSTER_NODES}`);
}

function ping(port: number): boolean {
  try {
    return (
      execFileSync('redis-cli', ['-p', String(port), 'ping'])
        .toString()
        .trim() === 'PONG'
    );
  } catch {
    return false;
  }
}

function clusterOk(port: number): boolean {
  try {
    return execFileSync('redis-cli', ['-p', String(port), 'cluster', 'info'])
      .toString()
      .includes('cluster_state:ok');
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
