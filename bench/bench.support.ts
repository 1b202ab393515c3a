/** Small helpers shared by the benchmarks: flags, percentiles, progress, a GraphQL client, a profiler. */
import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { Config, loadConfig } from '../src/kernel/config';

/** `--name=value` or `--name value` from the command line, else the fallback. */
export function flag(name: string, fallback: number): number {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i += 1) {
    const match = new RegExp(`^--${name}(?:=(.*))?$`).exec(args[i]);
    if (!match) continue;
    const raw = match[1] ?? args[i + 1];
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} must be a number (got "${raw}")`);
    return value;
  }
  return fallback;
}

export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}

export function rate(perSecond: number): string {
  return `${Math.round(perSecond).toLocaleString('en-US')}/s`;
}

/** A one-line progress display that rewrites itself on a terminal and prints tens elsewhere. */
export function progress(label: string, total: number): (done: number) => void {
  let lastTenth = -1;
  return (done) => {
    const tenth = Math.floor((done / total) * 10);
    if (process.stdout.isTTY) {
      process.stdout.write(`\r${label}: ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}`);
      if (done >= total) process.stdout.write('\n');
    } else if (tenth !== lastTenth) {
      lastTenth = tenth;
      console.log(`${label}: ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}`);
    }
  };
}

export async function graphql<T = any>(url: string, query: string, variables: object, token?: string): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: T; errors?: unknown[] };
  if (body.errors || !body.data) throw new Error(`GraphQL error: ${JSON.stringify(body.errors)}`);
  return body.data;
}

/** A profile of this process taken through the inspector: started, then written to a file. */
interface Recording {
  stop(file: string): Promise<string>;
}

/** Starts a recording with the inspector methods `start` (each with its parameters) and ends it with `stop`, whose reply holds the profile. */
async function record(start: Array<[string, object?]>, stop: string): Promise<Recording> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  for (const [method, params] of start) await post(method, params);
  return {
    async stop(file) {
      const { profile } = await post(stop);
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
      return file;
    },
  };
}

/** --profile: a V8 CPU profile of this process, for chrome://inspect or speedscope. */
export function startProfiler(): Promise<Recording> {
  return record([['Profiler.enable'], ['Profiler.start']], 'Profiler.stop');
}

/**
 * --heap-profile: where this process allocates, a V8 sampling heap profile (one sample every
 * 32 kB allocated) that keeps the objects garbage collected since (so it counts all
 * allocation, not only what is still alive), for Chrome's DevTools or speedscope.
 */
export function startHeapSampler(): Promise<Recording> {
  return record(
    [
      ['HeapProfiler.enable'],
      [
        'HeapProfiler.startSampling',
        { samplingInterval: 32 * 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true },
      ],
    ],
    'HeapProfiler.stopSampling',
  );
}

/** The JWT secret of the benchmarks' own servers. */
const BENCH_JWT_SECRET = 'bench-secret-of-the-benchmarks-own-servers-only';

/**
 * A benchmark server's configuration: `settings` over `base` (by default the environment, for
 * DATABASE_URL and REDIS_URL), on a free local port, in production mode, without rate limits.
 * A Redis Cluster is refused: the figures are those of one standalone Redis.
 */
export function benchConfig(
  settings: Record<string, string>,
  base: Record<string, string | undefined> = process.env,
): Config {
  // MIGRATE_ON_START: a benchmark's fresh database is migrated by the benchmark's own server.
  const config = loadConfig({
    ...base,
    PORT: '0',
    HOST: '127.0.0.1',
    NODE_ENV: 'production',
    JWT_SECRET: BENCH_JWT_SECRET,
    RATE_LIMITS: 'off',
    MIGRATE_ON_START: 'on',
    ...settings,
  });
  if (config.redisClusterNodes)
    throw new Error('the benchmarks run against a standalone Redis (REDIS_URL), not REDIS_CLUSTER_NODES');
  return config;
}

/**
 * A fresh database for a benchmark, on the server of DATABASE_URL: dropped if it exists (the
 * server creates and migrates it at start). Returns its URL.
 */
export async function freshBenchDatabase(name: string): Promise<string> {
  // Only the server's URL is wanted: FEED_MODEL=push or hybrid without REDIS_URL (a benchmark
  // that starts a Redis of its own) would fail the embedded mode's check.
  const base = loadConfig({ ...process.env, FEED_MODEL: undefined, JWT_SECRET: BENCH_JWT_SECRET });
  const server = new URL(base.databaseUrl);
  server.pathname = '/';
  const admin = await createConnection({ uri: server.toString() });
  await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await admin.end();
  server.pathname = `/${name}`;
  return server.toString();
}

/** Deletes every key of a prefix (a benchmark's own, before and after it runs). */
export async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/**
 * A child's whole stdout and its exit code. Waits for 'close', not 'exit': 'exit' may come
 * before the last of the child's output is read, and a load runner's result line is larger than
 * a pipe's buffer. (The child must also flush that line before it exits: see mixed.generator.ts.)
 */
export function outputOf(child: ChildProcess): Promise<{ code: number | null; output: string }> {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}
