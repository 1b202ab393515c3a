/**
 * `npm run bench:mixed`: the service under a real workload (issue 22), what the mix costs against
 * what its operations cost alone.
 *
 * Graph: MIXED_USERS users (100,000) following MIXED_FOLLOWS others on average (20, from 1 to
 * 2x-1 each), each followee drawn by Zipf popularity (exponent MIXED_ZIPF, 1.0): a few users have
 * tens of thousands of followers (big authors in the hybrid model), most a handful. MIXED_BLOGS
 * blogs (100,000) over the last week, their authors drawn by the same popularity. Bulk multi-row
 * INSERTs straight into MariaDB (database feed_bench_mixed). MIXED_ACTIVE users (5,000, drawn
 * uniformly) are the clients: their inboxes are built before the run, as fan-out writes only to
 * the inboxes of active users.
 *
 * Server: one API process with its fan-out worker (FANOUT_WORKERS, 1), NODE_ENV=production, the
 * feed model of FEED_MODEL (hybrid by default), on a private redis-server started for the run (so
 * that Redis's command count is the run's own and the "Redis lost" phase may FLUSHALL). The load
 * generator is another process (bench/mixed.generator.ts) speaking GraphQL over HTTP.
 *
 * Operations: first feed page (followFeed(first: 10)), deeper page (after a cursor 10 to 90
 * entries down), profile (a user by popularity and their first 10 blogs), publish
 * (publishBlogEdge), like (likeBlog, 60% like / 40% unlike), follow (followUser of a user by
 * popularity, 60% follow / 40% unfollow). MIXED_SHARES, by default
 * first=45,deeper=15,profile=25,publish=8,like=5,follow=2.
 *
 * Phases, MIXED_DURATION seconds each (15): every operation alone at its peak (closed loop,
 * MIXED_CONNECTIONS clients, 32), then the mix at its peak, MIXED_ROUNDS times (2; pooled, see
 * ROUNDS), each after a first page of every active reader and 3 s of the mix, not counted (see
 * SETTLE_SECONDS); then the mix open-loop at half that rate (latency from each request's due time, as wrk2); then "Redis lost": the same open-loop mix
 * for MIXED_LOST_SECONDS (60), FLUSHALL after MIXED_LOST_AT seconds (10), the feed pages' p99 per
 * second until inboxes serve the pages again, and what the rebuilds read from MySQL.
 * Per operation: SQL statements (API and worker), Redis commands (INFO stats of the private
 * server) and MySQL rows read (MariaDB's TABLE_STATISTICS, when the server has it) per request,
 * measured in its phase alone; a publish's include its fan-out, and so does every rate: a phase's
 * requests over its time until the fan-out they caused was done (see PhaseResult.drainSeconds).
 *
 * MIXED_OPEN_RATE=<n>: the open-loop phases at n requests/s instead of half the peak;
 * MIXED_OPEN_ONLY=<k> with it: only k such phases (see OPEN_ONLY).
 * MIXED_QUICK=1: a smoke run (5,000 users, 5,000 blogs, 500 active, 3 s phases, 1 round, 20 s Redis lost). MIXED_JSON=1: the
 * figures as one JSON line at the end. BENCH_NAME=<name>: a database of this run's own.
 * MIXED_CPU_PROFILE=<folder>: a CPU profile and SQL statement counts per phase (see startCpuProfile).
 * MIXED_TIMELINE=<folder>: every request's due time, latency and operation per phase,
 * `<folder>/<phase>.tsv` (GeneratorSpec.timelineFile).
 */
import './production-mode';
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HeapProfiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';
import { constants as perfConstants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { RunningApp, startApp } from '../src/app';
import { startFanoutWorkers } from '../src/composition';
import { SqlStatementLog } from '../src/db/database';
import { openMysql } from '../src/db/migrate';
import { FeedStore } from '../src/feed/feed.store';
import { toGlobalId } from '../src/kernel/global-id';
import { warn } from '../src/kernel/observability';
import { cursorsForPage, encodeCursor, START } from '../src/kernel/pagination/cursor';
import { createRedis } from '../src/redis/redis.client';
import { poolLimits } from '../src/stores';
import { benchConfig, freshBenchDatabase, ms, outputOf, progress, rate } from './bench.support';
import type { GeneratorResult, GeneratorSpec } from './mixed.generator';
import {
  DEFAULT_SHARES,
  Operation,
  OPERATIONS,
  parseShares,
  partsCapacity,
  seededRandom,
  summarize,
  TAIL_WINDOW_MS,
  TailWindows,
  zipfSampler,
} from './mixed.model';

const QUICK = process.env.MIXED_QUICK === '1';

/** An environment knob: a number >= min, else `fallback` (`quick` when MIXED_QUICK=1). */
function knob(name: string, fallback: number, quick: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return QUICK ? quick : fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number >= ${min} (got "${raw}")`);
  return value;
}

const USERS = knob('MIXED_USERS', 100_000, 5_000, 10);
const FOLLOWS = knob('MIXED_FOLLOWS', 20, 20);
const ZIPF = knob('MIXED_ZIPF', 1.0, 1.0, 0);
const BLOGS = knob('MIXED_BLOGS', 100_000, 5_000);
const ACTIVE = Math.min(USERS, knob('MIXED_ACTIVE', 5_000, 500));
const DURATION = knob('MIXED_DURATION', 15, 3);
const CONNECTIONS = knob('MIXED_CONNECTIONS', 32, 32);
/**
 * Rounds of the peak phases (every operation alone, then the mix), each round after the last: a
 * 2-core machine shared with MariaDB, Redis and the load generator drifts by tens of percent
 * within minutes, and a ratio of phases measured minutes apart carries that drift. The rounds'
 * requests and latencies are pooled (the headline ratios), and each round's ratios are printed.
 */
const ROUNDS = knob('MIXED_ROUNDS', 2, 1);
/**
 * Seconds of the mix, not counted, before each peak phase, after a first page of every active
 * reader (not counted either). A phase leaves work for whatever runs next: the follow phase
 * changes the follow version of most active readers, so their next pages read their big
 * followees again (one statement each), and without this the mix, which comes right after it,
 * paid for the follow phase's follows (0.17 statements a request against 0.02 from its own).
 * The 3 s of the mix alone reached about a quarter of the 5,000 readers on a 2-core machine: the
 * mix still read 0.11 lists a request, against the 0.02 its own follows cause (machine X, in
 * docs/benchmarks.md), hence the page of every reader first. Each peak phase starts from the state
 * the mix itself keeps.
 */
const SETTLE_SECONDS = Math.min(DURATION, 3);
/**
 * MIXED_OPEN_RATE: the open-loop phases (half peak, Redis lost) at this many requests/s instead of
 * half the mix's measured peak, so that two builds, or two runs on a machine whose speed drifts,
 * meet the same load there. 0 (the default): half the peak.
 */
const OPEN_RATE = knob('MIXED_OPEN_RATE', 0, 0, 0);
/**
 * MIXED_OPEN_ONLY=<n> (with MIXED_OPEN_RATE): only the open-loop mix, n phases, each after the
 * readers are settled, and no report: to compare the page tail of two builds or node flags
 * quickly (each phase is a sample of the tail; this machine's vary by tens of ms).
 */
const OPEN_ONLY = knob('MIXED_OPEN_ONLY', 0, 0, 0);
const LOST_SECONDS = knob('MIXED_LOST_SECONDS', 60, 20);
const LOST_AT = knob('MIXED_LOST_AT', 10, 3);
const SEED = knob('MIXED_SEED', 22, 22, 0);
const SHARES = process.env.MIXED_SHARES ? parseShares(process.env.MIXED_SHARES) : DEFAULT_SHARES;
/** MIXED_TIMELINE=<folder>: each phase's requests, one line each (GeneratorSpec.timelineFile). */
const TIMELINE = process.env.MIXED_TIMELINE;
/** Readers whose deeper-page cursors are computed (each gives up to 9, one per window of 10). */
const DEEP_READERS = Math.min(ACTIVE, 2_000);
/** How often the "Redis lost" phase reads the server's page sources and rebuild count. */
const SAMPLE_MS = 200;
/**
 * Inboxes are back when pages served from them reach this share of all pages ... (A page that finds
 * no inbox waits for its rebuild and reads it, so a reader's first page since the loss may come from
 * an inbox; before, it never could, and "back" was measured against the returning readers' pages.)
 */
const BACK_SHARE = 0.9;
/** ... over this many seconds in a row. */
const BACK_WINDOW = 3;
/**
 * Pages are settled when every second's page p99 stays under this until the end of the phase:
 * the queue of requests that built up while inboxes were missing is gone (it can outlast them).
 */
const SETTLED_P99_MS = 100;
/** Blogs the likes pick from: the newest ones. */
const LIKED_POOL = 5_000;
/** Rows per multi-row INSERT of the seed. */
const INSERT_BATCH = 10_000;
/** Inbox builds at once while warming. */
const WARM_CONCURRENCY = 16;
const WEEK_MS = 7 * 24 * 3600 * 1000;

const LABELS: Record<Operation, string> = {
  first: 'feed, first page',
  deeper: 'feed, deeper page',
  profile: 'profile',
  publish: 'publish',
  like: 'like',
  follow: 'follow',
};

interface Counters {
  statements: number;
  /** Commands Redis processed, a script's own calls included (total_commands_processed). */
  redisCommands: number;
  /** Reads from client sockets (total_reads_processed): about one per round trip, or per pipelined batch. */
  redisReads: number;
  rowsRead: number | null;
  /** InnoDB pages read from disk (Innodb_buffer_pool_reads): the buffer pool's misses. */
  diskReads: number | null;
}

interface PhaseResult {
  name: string;
  generator: GeneratorResult;
  /** Counter deltas over the phase (after the fan-out it caused finished). */
  costs: Counters;
  requests: number;
  /**
   * How long the fan-out of the phase's publishes ran on after its last request. A closed loop
   * of publishes can outrun their fan-out, which then finishes after the phase: its time is the
   * phase's too (see busySeconds).
   */
  drainSeconds: number;
  fanoutLagSeconds: number[];
  server: ServerStalls;
  /**
   * The phase's requests' times in the server (ms, Probes.requests): feed pages, and all; and the
   * feed pages' over HTTP (Probes.http: from their arrival to their answer written). What a
   * latency adds beyond those is sockets, the kernel and the load generator, on a machine they share.
   */
  inServer: { pages: number[]; all: number[]; pagesHttp: number[] };
}

/** The time a phase kept the service busy: its requests, then the fan-out they left. Rates are per this. */
function busySeconds(phase: PhaseResult): number {
  return phase.generator.seconds + phase.drainSeconds;
}

/**
 * What stalled the server process over a phase (it runs in this process): how late its event
 * loop ran timers (p99 and max) and its garbage collector's pauses (total and longest). A page
 * p99 far above its p50 with a late loop is CPU in the process (a long task, a GC); with a
 * punctual loop it is I/O (MySQL, Redis) or the queue ahead of the request.
 */
interface ServerStalls {
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  gcPauseMs: number;
  gcPauseMaxMs: number;
  /** What the longest pause was (scavenge, mark-compact, incremental marking, weak callbacks). */
  gcPauseMaxKind: string;
}

/**
 * Where the machine's CPU went over a phase, in % of one core: this process (the API and its
 * worker), MariaDB, the run's redis-server, and the whole machine (100% per core). A mix slower
 * than its parts with the machine not busy is waiting (locks, commits, the closed loop's clients
 * held by slow writes), not work.
 */
interface CpuShares {
  server: number;
  mysql: number | null;
  redis: number | null;
  machine: number;
  cores: number;
}

/** CPU seconds of a process so far (utime + stime from /proc), or null if it cannot be read. */
function processCpuSeconds(pid: number | null): number | null {
  if (pid === null) return null;
  try {
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Busy and total CPU seconds of the whole machine so far (/proc/stat), and its core count. */
function machineCpuSeconds(): { busy: number; total: number; cores: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const [, ...ticks] = lines[0].trim().split(/\s+/).map(Number);
  const idle = ticks[3] + ticks[4];
  const total = ticks.slice(0, 8).reduce((sum, tick) => sum + tick, 0);
  const cores = lines.filter((line) => /^cpu\d/.test(line)).length;
  return { busy: (total - idle) / CLOCK_TICKS_PER_SECOND, total: total / CLOCK_TICKS_PER_SECOND, cores };
}

/** Linux's USER_HZ, the unit of /proc's CPU times: 100 on every mainstream kernel. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Starts counting CPU; the returned function reports the shares since. */
function watchCpu(pids: { mysql: number | null; redis: number | null }): () => CpuShares {
  const started = performance.now();
  const server = process.cpuUsage();
  const mysql = processCpuSeconds(pids.mysql);
  const redis = processCpuSeconds(pids.redis);
  const machine = machineCpuSeconds();
  const share = (before: number | null, after: number | null, seconds: number) =>
    before === null || after === null ? null : Math.round(((after - before) / seconds) * 100);
  return () => {
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(server);
    const now = machineCpuSeconds();
    return {
      server: Math.round(((used.user + used.system) / 1e6 / seconds) * 100),
      mysql: share(mysql, processCpuSeconds(pids.mysql), seconds),
      redis: share(redis, processCpuSeconds(pids.redis), seconds),
      machine: Math.round(((now.busy - machine.busy) / (now.total - machine.total)) * now.cores * 100),
      cores: now.cores,
    };
  };
}

/** The allocation profile's mean interval between samples (V8's default is 32 KB). */
const HEAP_SAMPLING_BYTES = 16_384;

/**
 * MIXED_CPU_PROFILE=<folder>: per phase, a V8 CPU profile of this process (the API and its
 * worker), `<folder>/<phase>.cpuprofile` (Chrome's DevTools or speedscope open it), a sampling
 * profile of its allocations, `<phase>.heapprofile` (bytes allocated by function, collected or
 * not: what makes the GC run), and how
 * often each SQL statement ran, `<folder>/<phase>.statements.json` (its fan-out's included): to
 * find what the mix pays for that its operations alone do not. Profiling slows the run.
 */
async function startCpuProfile(sqlLog: SqlStatementLog): Promise<{ stop(label: string): Promise<void> } | null> {
  const folder = process.env.MIXED_CPU_PROFILE;
  if (!folder) return null;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  // Every allocation's bytes by function, what the GC has already collected included (not only
  // what is live at the end); node's typings lack the two flags V8 takes.
  const sampling: HeapProfiler.StartSamplingParameterType & Record<string, unknown> = {
    samplingInterval: HEAP_SAMPLING_BYTES,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  };
  await session.post('HeapProfiler.startSampling', sampling);
  const statements = new Map<string, number>();
  // An own property over the class's method, deleted at the end.
  sqlLog.ran = (statement, elapsedMs) => {
    const shape = statement.replace(/\s+/g, ' ').slice(0, 160);
    statements.set(shape, (statements.get(shape) ?? 0) + 1);
    SqlStatementLog.prototype.ran.call(sqlLog, statement, elapsedMs);
  };
  return {
    async stop(label) {
      const { profile } = await session.post('Profiler.stop');
      const { profile: allocations } = await session.post('HeapProfiler.stopSampling');
      session.disconnect();
      Reflect.deleteProperty(sqlLog, 'ran');
      mkdirSync(folder, { recursive: true });
      const file = join(folder, fileNameOf(label));
      writeFileSync(`${file}.cpuprofile`, JSON.stringify(profile));
      writeFileSync(`${file}.heapprofile`, JSON.stringify(allocations));
      writeFileSync(`${file}.statements.json`, JSON.stringify(Object.fromEntries(statements), null, 1));
    },
  };
}

/**
 * An open loop's page tail (GeneratorResult.pageTail). Its pages are first and deeper ones
 * together, so its p99 is not the headline's (the higher of the two kinds' own): "slowest 1% of
 * pages, first and deeper together (41, 110.1 ms or more) due in 3 windows of 250 ms, the most
 * from 12.75 s (24, to 158.4 ms), 0.75 s (16, to 201.5 ms), 0.00 s (1, to 110.6 ms)".
 */
function tailText(tail: TailWindows): string {
  const busiest = tail.busiest.map(
    (window) => `${(window.atMs / 1000).toFixed(2)} s (${window.count}, to ${window.maxMs.toFixed(1)} ms)`,
  );
  return (
    `slowest 1% of pages, first and deeper together (${tail.count}, ${tail.p99.toFixed(1)} ms or more) ` +
    `due in ${tail.windows} windows of ${TAIL_WINDOW_MS} ms, the most from ${busiest.join(', ')}`
  );
}

/** Where a phase's generator writes its timeline (MIXED_TIMELINE), when it does. */
function timelineOf(label: string): { timelineFile?: string } {
  if (!TIMELINE) return {};
  mkdirSync(TIMELINE, { recursive: true });
  return { timelineFile: join(TIMELINE, `${fileNameOf(label)}.tsv`) };
}

/** A phase's label as a file name: "mix at peak (round 1)" is "mix-at-peak-round-1-". */
function fileNameOf(label: string): string {
  return label.replace(/[^\w]+/g, '-');
}

/** MariaDB's process id from its pid file, when it runs on this machine (else null). */
async function mysqlPid(db: { select<T>(sql: string, params?: unknown[]): Promise<T[]> }): Promise<number | null> {
  try {
    const [row] = await db.select<{ Value: string }>("SHOW VARIABLES LIKE 'pid_file'");
    const pid = Number(readFileSync(row.Value, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && processCpuSeconds(pid) !== null ? pid : null;
  } catch {
    return null;
  }
}

/** Starts watching the event loop and the GC; the returned function stops and reports. */
function watchStalls(): () => ServerStalls {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const pauses: number[] = [];
  let longest = { ms: 0, kind: 'none' };
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      pauses.push(entry.duration);
      if (entry.duration > longest.ms)
        longest = { ms: entry.duration, kind: gcKind((entry as { detail?: { kind?: number } }).detail?.kind) };
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  return () => {
    loop.disable();
    gc.disconnect();
    return {
      loopDelayP99Ms: loop.percentile(99) / 1e6,
      loopDelayMaxMs: loop.max / 1e6,
      gcPauseMs: pauses.reduce((sum, pause) => sum + pause, 0),
      gcPauseMaxMs: Math.max(0, ...pauses),
      gcPauseMaxKind: longest.kind,
    };
  };
}

/** A GC entry's kind, in V8's words. */
function gcKind(kind: number | undefined): string {
  switch (kind) {
    case perfConstants.NODE_PERFORMANCE_GC_MINOR:
      return 'scavenge';
    case perfConstants.NODE_PERFORMANCE_GC_MAJOR:
      return 'mark-compact';
    case perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL:
      return 'incremental marking';
    case perfConstants.NODE_PERFORMANCE_GC_WEAKCB:
      return 'weak callbacks';
    default:
      return 'unknown';
  }
}

async function main(): Promise<void> {
  const name = process.env.BENCH_NAME ?? '';
  if (!/^\w*$/.test(name)) throw new Error(`BENCH_NAME may hold only letters, digits and _ (got "${name}")`);
  const redisServer = await startPrivateRedis();
  const cleanups: Array<() => Promise<unknown>> = [async () => redisServer.stop()];
  try {
    const databaseUrl = await freshBenchDatabase(name === '' ? 'feed_bench_mixed' : `feed_bench_mixed_${name}`);
    const config = benchConfig({
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisServer.url,
      REDIS_KEY_PREFIX: 'bench:mixed:',
      FANOUT_WORKERS: '0',
    });
    const fanoutWorkers = Math.max(1, Number(process.env.FANOUT_WORKERS ?? 1));
    const sqlLog = new SqlStatementLog(console);
    const db = await openMysql(config.databaseUrl, sqlLog, poolLimits(config));
    const redis = createRedis(config, (message) => console.warn(message)) as Redis;
    cleanups.unshift(() => Promise.allSettled([db.close(), redis.quit()]));
    const schema = new URL(databaseUrl).pathname.slice(1);
    const rows = await RowsRead.open(databaseUrl, schema);
    cleanups.unshift(() => rows.close());

    console.log(
      `mixed benchmark${QUICK ? ' (quick)' : ''}: ${USERS.toLocaleString('en-US')} users following ${FOLLOWS} on average (Zipf ${ZIPF}), ` +
        `${BLOGS.toLocaleString('en-US')} blogs, ${ACTIVE.toLocaleString('en-US')} active; ${config.feedModel}, ${fanoutWorkers} fan-out worker(s), ` +
        `${DURATION} s a phase, ${CONNECTIONS} clients at peak; shares ${OPERATIONS.map((o) => `${o}=${SHARES[o]}`).join(',')}`,
    );
    const graph = await seed(databaseUrl, config.bigAuthorFollowers);

    // The server as production runs it: the API, and its fan-out workers with a pool of their own.
    const app = await startApp({ config, db, redis });
    // Inboxes are made and written only once the Redis generation is confirmed.
    await app.services.feed.ready();
    const workers = startFanoutWorkers(app.services, fanoutWorkers, { kind: 'own', sqlLog });
    cleanups.unshift(async () => {
      await app.services.fanout
        ?.idle(60_000)
        .catch((error: unknown) => warn('fan-out still running at the end', error));
      await app.stop();
      await workers.stop();
    });
    const probes = instrument(app);
    const pids = { mysql: await mysqlPid(db), redis: redisServer.pid };

    const warmStart = performance.now();
    const built = progress('inboxes built', graph.active.length);
    let next = 0;
    let done = 0;
    await Promise.all(
      Array.from({ length: WARM_CONCURRENCY }, async () => {
        while (next < graph.active.length) {
          const reader = graph.active[next++];
          // A busy machine may time a Redis command out (REDIS_COMMAND_TIMEOUT_MS): try again.
          for (let attempt = 1; ; attempt += 1) {
            try {
              await app.services.feed.rebuildInbox(reader);
              break;
            } catch (error) {
              if (attempt >= 5) throw error;
              await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
            }
          }
          built((done += 1));
        }
      }),
    );
    await app.services.feed.syncWatermark();
    console.log(`inboxes built in ${ms(performance.now() - warmStart)}`);

    // Deeper pages: cursors 10, 20, ... 90 entries down the feeds of some active readers.
    const store = new FeedStore(db);
    const deep: GeneratorSpec['deep'] = [];
    for (let viewer = 0; viewer < DEEP_READERS; viewer += 1) {
      const top = await store.feedPage(graph.active[viewer], START, 100);
      const cursors = cursorsForPage(START, top);
      for (let depth = 10; depth < 100 && depth < top.length; depth += 10)
        deep.push({ viewer, after: encodeCursor(cursors[depth - 1]) });
    }
    if (deep.length === 0) throw new Error('no feed is 10 entries deep: more blogs or follows are needed');
    const newest = await db.select<{ id: string }>('SELECT id FROM tb_blog ORDER BY id DESC LIMIT ?', [LIKED_POOL]);
    const base: Omit<GeneratorSpec, 'shares' | 'mode' | 'durationSeconds' | 'series' | 'seed'> = {
      url: app.url,
      viewers: graph.active.map((id) => ({ token: app.services.tokens.issue(id, 0), userId: toGlobalId('User', id) })),
      deep,
      ranked: graph.ranked.map((id) => toGlobalId('User', id)),
      zipf: ZIPF,
      blogIds: newest.map((row) => toGlobalId('Blog', Number(row.id))),
    };
    const specFile = join(mkdtempSync(join(tmpdir(), 'feed-mixed-')), 'spec.json');
    let seedOfRun = SEED;
    const generate = (
      spec: Pick<GeneratorSpec, 'shares' | 'mode' | 'durationSeconds'> &
        Partial<Pick<GeneratorSpec, 'series' | 'markSecond' | 'timelineFile'>>,
      onStart?: () => void,
    ) => {
      writeFileSync(specFile, JSON.stringify({ ...base, series: false, ...spec, seed: (seedOfRun += 1) }));
      return runGenerator(specFile, onStart);
    };

    const counters = async (): Promise<Counters> => ({
      statements: sqlLog.statements,
      ...(await redisServer.stats()),
      rowsRead: await rows.total(),
      diskReads: await rows.diskReads(),
    });
    const phase = async (
      label: string,
      spec: Parameters<typeof generate>[0],
      onStart?: () => void,
    ): Promise<PhaseResult> => {
      const before = await counters();
      const sourcesBefore = await probes.pageSources();
      const lagsBefore = probes.lags.length;
      probes.requests.clear();
      probes.http.clear();
      const stalls = watchStalls();
      const cpuOver = watchCpu(pids);
      const profiling = await startCpuProfile(sqlLog);
      const generator = await generate({ ...spec, ...timelineOf(label) }, onStart);
      const server = stalls();
      // What the phase's publishes cost is theirs: wait for their fan-out before reading the counters
      // (and the CPU, which then covers it).
      const drainStart = performance.now();
      await app.services.fanout?.idle(120_000).catch((error: unknown) => console.warn(`${label}: ${String(error)}`));
      const drainSeconds = (performance.now() - drainStart) / 1000;
      const cpu = cpuOver();
      const after = await counters();
      const sources = pageSourceShares(sourcesBefore, await probes.pageSources());
      await profiling?.stop(label);
      const requests = requestsOf(generator);
      const inServer = {
        pages: probes.requests.get('followFeed') ?? [],
        all: [...probes.requests.values()].flat(),
        pagesHttp: [...(probes.http.get('first') ?? []), ...(probes.http.get('deeper') ?? [])],
      };
      const perRequest = (n: number) => (n / Math.max(1, requests)).toFixed(1);
      const errors = Object.values(generator.operations).reduce((sum, op) => sum + op.errors, 0);
      const throughput = requests / (generator.seconds + drainSeconds);
      console.log(
        `${label.padEnd(34)} ${rate(throughput).padStart(8)}  ${OPERATIONS.filter((o) => generator.operations[o])
          .map(
            (o) => `${o} p50 ${generator.operations[o]!.p50.toFixed(1)} p99 ${generator.operations[o]!.p99.toFixed(1)}`,
          )
          .join(', ')} ms${errors > 0 ? `  ERRORS ${errors}` : ''}  (p99 in the server: ${inServerText(inServer)}${
          generator.sendLag ? `; sent p99 ${generator.sendLag.p99.toFixed(1)} ms late` : ''
        }${generator.pageTail ? `; ${tailText(generator.pageTail)}` : ''}; fan-out done ${Math.round(drainSeconds * 1000)} ms after the last request; ` +
          `generator CPU ${Math.round((generator.cpuSeconds / generator.seconds) * 100)}%; ` +
          `server loop delay p99 ${server.loopDelayP99Ms.toFixed(1)} max ${server.loopDelayMaxMs.toFixed(1)} ms, ` +
          `GC pauses ${Math.round(server.gcPauseMs)} ms in all, longest ${server.gcPauseMaxMs.toFixed(1)} ms (${server.gcPauseMaxKind}); ` +
          `CPU: server ${cpu.server}%, MariaDB ${cpu.mysql ?? '?'}%, Redis ${cpu.redis ?? '?'}%, ` +
          `machine ${cpu.machine}% of ${cpu.cores * 100}%; InnoDB pages from disk ` +
          `${after.diskReads === null || before.diskReads === null ? '?' : ((after.diskReads - before.diskReads) / Math.max(1, requestsOf(generator))).toFixed(2)} a request; ` +
          `SQL ${perRequest(after.statements - before.statements)}, Redis commands ${perRequest(after.redisCommands - before.redisCommands)} ` +
          `in ${perRequest(after.redisReads - before.redisReads)} reads a request` +
          `${sources ? `; feed pages ${sources}` : ''})`,
      );
      for (const o of OPERATIONS) {
        const first = generator.operations[o]?.firstError;
        if (first) console.log(`  first ${o} error: ${first}`);
      }
      return {
        name: label,
        generator,
        requests,
        drainSeconds,
        server,
        fanoutLagSeconds: probes.lags.slice(lagsBefore),
        inServer,
        costs: {
          statements: after.statements - before.statements,
          redisCommands: after.redisCommands - before.redisCommands,
          redisReads: after.redisReads - before.redisReads,
          rowsRead: after.rowsRead === null || before.rowsRead === null ? null : after.rowsRead - before.rowsRead,
          diskReads: after.diskReads === null || before.diskReads === null ? null : after.diskReads - before.diskReads,
        },
      };
    };

    /** A first page of every active reader, then SETTLE_SECONDS of the mix, not counted, and its fan-out finished. */
    const settle = async (): Promise<void> => {
      await generate({
        shares: {},
        mode: { kind: 'each', connections: CONNECTIONS, firstPage: true },
        durationSeconds: 0,
      });
      await generate({
        shares: SHARES,
        mode: { kind: 'closed', connections: CONNECTIONS },
        durationSeconds: SETTLE_SECONDS,
      });
      await app.services.fanout?.idle(120_000).catch((error: unknown) => console.warn(`settling: ${String(error)}`));
    };

    console.log('');
    await generate({ shares: {}, mode: { kind: 'each', connections: CONNECTIONS }, durationSeconds: 0 });
    await phase('warm-up (mix, not counted)', {
      shares: SHARES,
      mode: { kind: 'closed', connections: CONNECTIONS },
      durationSeconds: Math.min(DURATION, 5),
    });

    if (OPEN_ONLY > 0) {
      if (OPEN_RATE === 0) throw new Error('MIXED_OPEN_ONLY needs MIXED_OPEN_RATE (requests/s)');
      for (let sample = 1; sample <= OPEN_ONLY; sample += 1) {
        await settle();
        await phase(`mix at ${OPEN_RATE}/s (open loop, sample ${sample})`, {
          shares: SHARES,
          mode: { kind: 'open', rate: OPEN_RATE },
          durationSeconds: DURATION,
        });
      }
      return;
    }

    const aloneRounds: Partial<Record<Operation, PhaseResult[]>> = {};
    const mixRounds: PhaseResult[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      const suffix = ROUNDS > 1 ? ` (round ${round})` : '';
      for (const operation of OPERATIONS) {
        if (SHARES[operation] === 0) continue;
        await settle();
        (aloneRounds[operation] ??= []).push(
          await phase(`${LABELS[operation]}, alone at peak${suffix}`, {
            shares: { [operation]: 1 },
            mode: { kind: 'closed', connections: CONNECTIONS },
            durationSeconds: DURATION,
          }),
        );
      }
      await settle();
      mixRounds.push(
        await phase(`mix at peak${suffix}`, {
          shares: SHARES,
          mode: { kind: 'closed', connections: CONNECTIONS },
          durationSeconds: DURATION,
        }),
      );
    }
    const alone: Partial<Record<Operation, PhaseResult>> = {};
    for (const operation of OPERATIONS) {
      const rounds = aloneRounds[operation];
      if (rounds) alone[operation] = pooled(rounds);
    }
    const mixPeak = pooled(mixRounds);
    const roundRatios = mixRounds.map((mix, i) =>
      ratiosOf(
        Object.fromEntries(Object.entries(aloneRounds).map(([operation, rounds]) => [operation, rounds[i]])),
        mix,
      ),
    );
    const peakRate = mixPeak.requests / busySeconds(mixPeak);
    const halfRate = OPEN_RATE > 0 ? OPEN_RATE : Math.max(1, Math.round(peakRate / 2));
    const half = await phase(`mix at half peak (${halfRate}/s, open loop)`, {
      shares: SHARES,
      mode: { kind: 'open', rate: halfRate },
      durationSeconds: DURATION,
    });

    // Redis lost: FLUSHALL LOST_AT s into an open-loop run at half the peak.
    const lost = await redisLost(redisServer, probes, half, (onStart) =>
      phase(
        `mix at half peak, Redis lost at ${LOST_AT} s`,
        {
          shares: SHARES,
          mode: { kind: 'open', rate: halfRate },
          durationSeconds: LOST_SECONDS,
          series: true,
          markSecond: LOST_AT,
        },
        onStart,
      ),
    );

    report({ graph, alone, mixPeak, half, lost, peakRate, halfRate, roundRatios });
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((error: unknown) => console.warn(error));
  }
}

/** The graph as seeded: who is active, and every user by popularity rank. */
interface Graph {
  active: number[];
  ranked: number[];
  follows: number;
  bigAuthors: number;
  topFollowers: number[];
  medianFollowers: number;
  seedSeconds: number;
}

/**
 * Users, follows and blogs by multi-row INSERTs on a connection of its own (unique and foreign
 * key checks off for the session: the generated rows satisfy them). Counters (follower_count,
 * following_count), has_pulled_blogs and tb_blog.pushed as the hybrid model would have left them
 * (big authors' blogs are not fanned out).
 */
async function seed(databaseUrl: string, bigAuthorFollowers: number): Promise<Graph> {
  const started = performance.now();
  const random = seededRandom(SEED);
  const popular = zipfSampler(USERS, ZIPF, random);
  const firstId = 1;
  // Popularity rank -> user id: a permutation, so that popular users are not the lowest ids.
  const ranked = Array.from({ length: USERS }, (_, i) => firstId + i);
  for (let i = USERS - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [ranked[i], ranked[j]] = [ranked[j], ranked[i]];
  }
  const followers = new Int32Array(USERS);
  const following = new Int32Array(USERS);
  const followeesOf: Int32Array[] = [];
  for (let u = 0; u < USERS; u += 1) {
    const want = Math.min(USERS - 1, 1 + Math.floor(random() * (2 * FOLLOWS - 1)));
    const chosen = new Set<number>();
    for (let attempts = 0; chosen.size < want && attempts < want * 20; attempts += 1) {
      const followee = ranked[popular()] - firstId;
      if (followee !== u) chosen.add(followee);
    }
    const list = Int32Array.from(chosen).sort();
    followeesOf.push(list);
    following[u] = list.length;
    for (const followee of list) followers[followee] += 1;
  }
  const isBig = (u: number) => followers[u] >= bigAuthorFollowers;

  const now = Date.now();
  const blogTimes = Array.from({ length: BLOGS }, () => now - Math.floor(random() * WEEK_MS)).sort((a, b) => a - b);
  const blogAuthors = Array.from({ length: BLOGS }, () => ranked[popular()] - firstId);
  const hasPulled = new Uint8Array(USERS);
  for (const author of blogAuthors) if (isBig(author)) hasPulled[author] = 1;

  const connection = await createConnection({ uri: databaseUrl });
  await connection.query('SET SESSION unique_checks = 0, foreign_key_checks = 0');
  const insert = async (label: string, statement: string, total: number, row: (i: number) => unknown[]) => {
    const shown = progress(label, total);
    for (let start = 0; start < total; start += INSERT_BATCH) {
      const batch = Array.from({ length: Math.min(INSERT_BATCH, total - start) }, (_, k) => row(start + k));
      await connection.query(statement, [batch]);
      shown(start + batch.length);
    }
  };
  const created = new Date(now - WEEK_MS - 3_600_000);
  await insert(
    'users',
    'INSERT INTO tb_user (id, nick_name, nick_key, password, created_at, follower_count, following_count, has_pulled_blogs) VALUES ?',
    USERS,
    (u) => [
      firstId + u,
      `m${firstId + u}`,
      `m${firstId + u}`,
      'not-a-hash',
      created,
      followers[u],
      following[u],
      hasPulled[u] === 1,
    ],
  );
  const pairs: Array<[number, number]> = [];
  followeesOf.forEach((list, u) => list.forEach((followee) => pairs.push([u, followee])));
  await insert('follows', 'INSERT INTO tb_follow (user_id, follow_user_id, created_at) VALUES ?', pairs.length, (i) => [
    firstId + pairs[i][0],
    firstId + pairs[i][1],
    created,
  ]);
  await insert(
    'blogs',
    'INSERT INTO tb_blog (user_id, title, content, images, created_at, pushed) VALUES ?',
    BLOGS,
    (i) => [
      firstId + blogAuthors[i],
      `Post ${i} by m${firstId + blogAuthors[i]}`,
      'Some content of a typical length for a post in a feed, seeded by bench:mixed.',
      '[]',
      new Date(blogTimes[i]),
      !isBig(blogAuthors[i]),
    ],
  );
  // Statistics as a database that grew to this size would have them: InnoDB's automatic
  // recalculation can miss a bulk load into fresh tables (tb_user then counted 0 rows, and the
  // optimizer scanned it whole to join 10 blogs to their authors).
  await connection.query('ANALYZE TABLE tb_user, tb_follow, tb_blog, tb_blog_like');
  await connection.end();

  // The active users: drawn uniformly, without repeats.
  const order = Array.from({ length: USERS }, (_, i) => i);
  for (let i = 0; i < ACTIVE; i += 1) {
    const j = i + Math.floor(random() * (USERS - i));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const sortedFollowers = Array.from(followers).sort((a, b) => b - a);
  const graph: Graph = {
    active: order.slice(0, ACTIVE).map((u) => firstId + u),
    ranked,
    follows: pairs.length,
    bigAuthors: Array.from(followers).filter((count) => count >= bigAuthorFollowers).length,
    topFollowers: sortedFollowers.slice(0, 5),
    medianFollowers: sortedFollowers[Math.floor(USERS / 2)],
    seedSeconds: (performance.now() - started) / 1000,
  };
  console.log(
    `seeded in ${graph.seedSeconds.toFixed(1)} s: ${graph.follows.toLocaleString('en-US')} follows; followers: top ${graph.topFollowers
      .map((n) => n.toLocaleString('en-US'))
      .join(
        ', ',
      )}, median ${graph.medianFollowers}; ${graph.bigAuthors} big authors (>= ${bigAuthorFollowers.toLocaleString('en-US')} followers)`,
  );
  return graph;
}

/** What the benchmark watches inside the server process: fan-out lags, rebuild snapshots, page sources. */
interface Probes {
  lags: number[];
  /**
   * Every GraphQL request's time in the server (graphql_request_duration_seconds: from Apollo's
   * requestDidStart to its answer), in ms, by root field (followFeed: first and deeper pages).
   */
  requests: Map<string, number[]>;
  /**
   * Every request's time over HTTP, in ms, by the operation its generator named (the
   * x-bench-operation header): from the server's 'request' event (its headers parsed) to its
   * answer's last byte handed to the socket ('finish'). Beyond `requests` it holds the body's
   * read, the context, the answer's write, and any turn of the event loop the request waited for
   * before Apollo started on it.
   */
  http: Map<string, number[]>;
  snapshots: { count: number; rows: number };
  pageSources(): Promise<Record<string, number>>;
}

/**
 * Taps on the running server, without changing what it does: every fan-out lag the workers report
 * (fanout_lag_seconds, publish to last inbox write), every rebuild snapshot (FeedStore.snapshot,
 * with the rows it returned: followees and entries), every GraphQL request's time in the server
 * (graphql_request_duration_seconds), and feed_page_reads_total by source.
 */
/**
 * "pages 24.1, all 27.9 ms; pages over HTTP 30.2 ms": the p99 of the phase's requests' times in
 * the server, and of its pages' over HTTP (PhaseResult.inServer).
 */
function inServerText(inServer: PhaseResult['inServer']): string {
  const pages = inServer.pages.length > 0 ? `pages ${summarize(inServer.pages).p99.toFixed(1)}, ` : '';
  const http =
    inServer.pagesHttp.length > 0 ? `; pages over HTTP ${summarize(inServer.pagesHttp).p99.toFixed(1)} ms` : '';
  return `${pages}all ${summarize(inServer.all).p99.toFixed(1)} ms${http}`;
}

/** Where a phase's feed pages came from (feed_page_reads_total): "inbox 97%, pull 2%, cold 1%", or null without pages. */
function pageSourceShares(before: Record<string, number>, after: Record<string, number>): string | null {
  const counts = Object.keys(after).map((source) => [source, after[source] - (before[source] ?? 0)] as const);
  const total = counts.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return null;
  return counts
    .filter(([, n]) => n > 0)
    .map(([source, n]) => `${source} ${Math.round((n / total) * 100)}%`)
    .join(', ');
}

function instrument(app: RunningApp): Probes {
  const probes: Probes = {
    lags: [],
    requests: new Map(),
    http: new Map(),
    snapshots: { count: 0, rows: 0 },
    async pageSources() {
      const metric = await app.services.metrics.registry.getSingleMetric('feed_page_reads_total')!.get();
      return Object.fromEntries(metric.values.map((value) => [String(value.labels.source), value.value]));
    },
  };
  const metrics = app.services.metrics;
  const fanoutFinished = metrics.fanoutFinished.bind(metrics);
  metrics.fanoutFinished = (lagSeconds: number) => {
    probes.lags.push(lagSeconds);
    fanoutFinished(lagSeconds);
  };
  const request = metrics.request.bind(metrics);
  metrics.request = (operation: string, seconds: number) => {
    let samples = probes.requests.get(operation);
    if (!samples) probes.requests.set(operation, (samples = []));
    samples.push(seconds * 1000);
    request(operation, seconds);
  };
  // First among the listeners, so that the time starts before the app's handler runs.
  app.httpServer.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const operation = req.headers['x-bench-operation'];
    if (typeof operation !== 'string') return;
    const start = performance.now();
    res.once('finish', () => {
      let samples = probes.http.get(operation);
      if (!samples) probes.http.set(operation, (samples = []));
      samples.push(performance.now() - start);
    });
  });
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with its instance below
  const snapshot = FeedStore.prototype.snapshot;
  FeedStore.prototype.snapshot = async function (this: FeedStore, readerId: number, maxItems: number) {
    const result = await snapshot.call(this, readerId, maxItems);
    probes.snapshots.count += 1;
    probes.snapshots.rows += result.followeeIds.length + result.entries.length;
    return result;
  };
  return probes;
}

interface LostResult {
  phase: PhaseResult;
  timeline: Array<{
    second: number;
    pages: number;
    p99: number;
    errors: number;
    fromInbox: number | null;
    returning: number;
    rebuilds: number;
  }>;
  /**
   * Seconds from the FLUSHALL until the inboxes are back: pages served from inboxes reach
   * BACK_SHARE of all pages over BACK_WINDOW seconds. null if not within the run.
   */
  backAfterSeconds: number | null;
  /** Seconds from the FLUSHALL until every later second's page p99 stayed under SETTLED_P99_MS (null: not within the run). */
  settledAfterSeconds: number | null;
  /** The share of pages served from inboxes over the run's last BACK_WINDOW seconds. */
  inboxShareAtEnd: number | null;
  rebuilds: number;
  rowsPerRebuild: number | null;
  /** MySQL rows read in the phase beyond what the same load read without the loss (the half-peak phase's rate), per rebuild. */
  extraRowsPerRebuild: number | null;
  pageP99UntilBack: number;
}

/** Seconds after the flush from which every second's page p99 stays under SETTLED_P99_MS to the end (null: the last one does not). */
function settledAfter(timeline: LostResult['timeline'], flushSecond: number): number | null {
  let settled: number | null = null;
  for (const row of timeline) {
    if (row.second <= flushSecond) continue;
    if (row.p99 >= SETTLED_P99_MS) settled = null;
    else settled ??= row.second - flushSecond;
  }
  return settled;
}

/** The "Redis lost" phase: FLUSHALL mid-run, then per second the pages' p99, where they came from, the rebuilds. */
async function redisLost(
  redisServer: PrivateRedis,
  probes: Probes,
  without: PhaseResult,
  run: (onStart: () => void) => Promise<PhaseResult>,
): Promise<LostResult> {
  const samples: Array<{ at: number; sources: Record<string, number>; snapshots: number }> = [];
  let startedAt = 0;
  let flushedAt = 0;
  let sampler: NodeJS.Timeout | undefined;
  let flush: NodeJS.Timeout | undefined;
  const snapshotsBefore = { ...probes.snapshots };
  const phase = await run(() => {
    startedAt = performance.now();
    const sample = async () =>
      samples.push({ at: performance.now(), sources: await probes.pageSources(), snapshots: probes.snapshots.count });
    void sample();
    sampler = setInterval(() => void sample(), SAMPLE_MS);
    flush = setTimeout(() => {
      flushedAt = performance.now();
      void redisServer.flushAll();
    }, LOST_AT * 1000);
  });
  clearInterval(sampler);
  clearTimeout(flush);
  const series = phase.generator.series ?? [];
  const timeline: LostResult['timeline'] = series.map((bucket) => {
    const at = startedAt + bucket.second * 1000;
    const from = samples.filter((s) => s.at <= at + SAMPLE_MS / 2).pop();
    const to = samples.filter((s) => s.at <= at + 1000 + SAMPLE_MS / 2).pop();
    const reads = (s: typeof from, source: string) => s?.sources[source] ?? 0;
    const total = (s: typeof from) => Object.values(s?.sources ?? {}).reduce((sum, n) => sum + n, 0);
    const served = from && to ? total(to) - total(from) : 0;
    return {
      second: bucket.second,
      pages: bucket.pages,
      p99: bucket.p99,
      errors: bucket.errors,
      fromInbox: served > 0 ? (reads(to, 'inbox') - reads(from, 'inbox')) / served : null,
      returning: bucket.pages > 0 ? bucket.returning / bucket.pages : 0,
      rebuilds: from && to ? to.snapshots - from.snapshots : 0,
    };
  });
  const flushSecond = Math.floor((flushedAt - startedAt) / 1000);
  const back = timeline.find((row, i) => {
    const window = timeline.slice(i, i + BACK_WINDOW);
    if (row.second <= flushSecond || window.length < BACK_WINDOW) return false;
    const fromInbox = window.reduce((sum, each) => sum + (each.fromInbox ?? 0) * each.pages, 0);
    const pages = window.reduce((sum, each) => sum + each.pages, 0);
    return pages > 0 && fromInbox >= BACK_SHARE * pages;
  });
  const last = timeline.slice(-BACK_WINDOW);
  const lastPages = last.reduce((sum, row) => sum + row.pages, 0);
  const rebuilds = probes.snapshots.count - snapshotsBefore.count;
  const rows = probes.snapshots.rows - snapshotsBefore.rows;
  const recovering = series.filter((bucket) => bucket.second >= flushSecond && (!back || bucket.second < back.second));
  return {
    phase,
    timeline,
    backAfterSeconds: back ? back.second - flushSecond : null,
    settledAfterSeconds: settledAfter(timeline, flushSecond),
    inboxShareAtEnd:
      lastPages > 0 ? last.reduce((sum, row) => sum + (row.fromInbox ?? 0) * row.pages, 0) / lastPages : null,
    rebuilds,
    rowsPerRebuild: rebuilds > 0 ? rows / rebuilds : null,
    extraRowsPerRebuild:
      rebuilds > 0 && phase.costs.rowsRead !== null && without.costs.rowsRead !== null
        ? (phase.costs.rowsRead - (without.costs.rowsRead / without.generator.seconds) * phase.generator.seconds) /
          rebuilds
        : null,
    pageP99UntilBack: Math.max(0, ...recovering.map((bucket) => bucket.p99)),
  };
}

function requestsOf(generator: GeneratorResult): number {
  return Object.values(generator.operations).reduce((sum, op) => sum + op.count, 0);
}

/** Phases of the same operations in several rounds as one: their requests, time, costs and latencies together. */
function pooled(phases: readonly PhaseResult[]): PhaseResult {
  if (phases.length === 1) return phases[0];
  const sum = (value: (phase: PhaseResult) => number) => phases.reduce((total, phase) => total + value(phase), 0);
  const max = (value: (phase: PhaseResult) => number) => Math.max(...phases.map(value));
  const operations: GeneratorResult['operations'] = {};
  for (const operation of OPERATIONS) {
    const parts = phases.flatMap((phase) => phase.generator.operations[operation] ?? []);
    if (parts.length === 0) continue;
    const samples = parts.flatMap((part) => part.samples);
    operations[operation] = {
      ...summarize(samples),
      samples,
      errors: parts.reduce((total, part) => total + part.errors, 0),
      firstError: parts.find((part) => part.firstError)?.firstError,
    };
  }
  const rowsRead = phases.every((phase) => phase.costs.rowsRead !== null)
    ? sum((phase) => phase.costs.rowsRead!)
    : null;
  return {
    name: `${phases[0].name.replace(/ \(round \d+\)$/, '')} (${phases.length} rounds)`,
    generator: {
      seconds: sum((phase) => phase.generator.seconds),
      cpuSeconds: sum((phase) => phase.generator.cpuSeconds),
      operations,
      abandoned: sum((phase) => phase.generator.abandoned),
    },
    requests: sum((phase) => phase.requests),
    drainSeconds: sum((phase) => phase.drainSeconds),
    fanoutLagSeconds: phases.flatMap((phase) => phase.fanoutLagSeconds),
    inServer: {
      pages: phases.flatMap((phase) => phase.inServer.pages),
      all: phases.flatMap((phase) => phase.inServer.all),
      pagesHttp: phases.flatMap((phase) => phase.inServer.pagesHttp),
    },
    server: {
      loopDelayP99Ms: max((phase) => phase.server.loopDelayP99Ms),
      loopDelayMaxMs: max((phase) => phase.server.loopDelayMaxMs),
      gcPauseMs: sum((phase) => phase.server.gcPauseMs),
      gcPauseMaxMs: max((phase) => phase.server.gcPauseMaxMs),
      gcPauseMaxKind: phases.reduce((a, b) => (b.server.gcPauseMaxMs > a.server.gcPauseMaxMs ? b : a)).server
        .gcPauseMaxKind,
    },
    costs: {
      statements: sum((phase) => phase.costs.statements),
      redisCommands: sum((phase) => phase.costs.redisCommands),
      redisReads: sum((phase) => phase.costs.redisReads),
      rowsRead,
      diskReads: phases.every((phase) => phase.costs.diskReads !== null)
        ? sum((phase) => phase.costs.diskReads!)
        : null,
    },
  };
}

interface Ratios {
  /** What the parts predict for the mix (1 / sum(share / rate alone)), requests/s. */
  predicted: number;
  mixRate: number;
  mixVsParts: number;
  /** Publishes alone / first pages alone; null when either was not run. */
  publishVsPages: number | null;
}

function ratiosOf(alone: Partial<Record<Operation, PhaseResult>>, mix: PhaseResult): Ratios {
  const rates: Partial<Record<Operation, number>> = {};
  for (const operation of OPERATIONS) {
    const phase = alone[operation];
    if (phase) rates[operation] = phase.requests / busySeconds(phase);
  }
  const predicted = partsCapacity(SHARES, rates);
  const mixRate = mix.requests / busySeconds(mix);
  return {
    predicted,
    mixRate,
    mixVsParts: mixRate / predicted,
    publishVsPages: rates.first && rates.publish ? rates.publish / rates.first : null,
  };
}

function report(input: {
  graph: Graph;
  alone: Partial<Record<Operation, PhaseResult>>;
  mixPeak: PhaseResult;
  half: PhaseResult;
  lost: LostResult;
  peakRate: number;
  halfRate: number;
  roundRatios: Ratios[];
}): void {
  const { alone, mixPeak, half, lost, peakRate, halfRate, roundRatios } = input;
  const ratesAlone: Partial<Record<Operation, number>> = {};
  for (const operation of OPERATIONS) {
    const phase = alone[operation];
    if (phase) ratesAlone[operation] = phase.requests / busySeconds(phase);
  }
  const predicted = partsCapacity(SHARES, ratesAlone);
  const perRequest = (phase: PhaseResult, value: number | null) =>
    value === null || phase.requests === 0 ? null : value / phase.requests;
  const fixed = (value: number | null, digits = 1) => (value === null ? '-' : value.toFixed(digits));
  const cell = (phase: PhaseResult, operation: Operation) => {
    const op = phase.generator.operations[operation];
    return op ? `${op.p50.toFixed(1)} / ${op.p99.toFixed(1)}` : '-';
  };
  const opRate = (phase: PhaseResult, operation: Operation) =>
    (phase.generator.operations[operation]?.count ?? 0) / busySeconds(phase);

  console.log('');
  console.log('Per operation (latency p50 / p99 in ms; costs per request measured alone, a publish with its fan-out)');
  const header = [
    'operation',
    'share',
    'alone rate',
    'alone p50/p99',
    'SQL',
    'Redis',
    'rows',
    'mix@peak rate',
    'mix@peak p50/p99',
    'half-peak p50/p99',
  ];
  const widths = [18, 6, 11, 15, 6, 7, 7, 14, 17, 18];
  const line = (cells: string[]) =>
    console.log(cells.map((text, i) => (i === 0 ? text.padEnd(widths[i]) : text.padStart(widths[i]))).join(' '));
  line(header);
  const total = OPERATIONS.reduce((sum, operation) => sum + SHARES[operation], 0);
  for (const operation of OPERATIONS) {
    const phase = alone[operation];
    if (!phase) continue;
    line([
      LABELS[operation],
      `${Math.round((SHARES[operation] / total) * 100)}%`,
      rate(ratesAlone[operation]!),
      cell(phase, operation),
      fixed(perRequest(phase, phase.costs.statements)),
      fixed(perRequest(phase, phase.costs.redisCommands)),
      fixed(perRequest(phase, phase.costs.rowsRead), 0),
      rate(opRate(mixPeak, operation)),
      cell(mixPeak, operation),
      cell(half, operation),
    ]);
  }
  line([
    'mix',
    '100%',
    '',
    '',
    fixed(perRequest(mixPeak, mixPeak.costs.statements)),
    fixed(perRequest(mixPeak, mixPeak.costs.redisCommands)),
    fixed(perRequest(mixPeak, mixPeak.costs.rowsRead), 0),
    rate(peakRate),
    '',
    '',
  ]);

  const lagOf = (phase: PhaseResult) => summarize(phase.fanoutLagSeconds.map((seconds) => seconds * 1000));
  const pages = (phase: PhaseResult) =>
    Math.max(phase.generator.operations.first?.p99 ?? 0, phase.generator.operations.deeper?.p99 ?? 0);
  const errors = [...Object.values(alone), mixPeak, half, lost.phase].reduce(
    (sum, phase) =>
      sum + Object.values(phase.generator.operations).reduce((n, op) => n + op.errors, 0) + phase.generator.abandoned,
    0,
  );
  const firstRate = ratesAlone.first;
  const publishRate = ratesAlone.publish;
  const mixRatio = peakRate / predicted;
  console.log('');
  console.log(`fan-out lag (publish to last inbox write), p50 / p99 / max:`);
  for (const phase of [alone.publish, mixPeak, half].filter((p): p is PhaseResult => p !== undefined)) {
    const lag = lagOf(phase);
    console.log(`  ${phase.name.padEnd(40)} ${lag.count} fan-outs  ${ms(lag.p50)} / ${ms(lag.p99)} / ${ms(lag.max)}`);
  }
  console.log('');
  console.log(
    'Redis lost (FLUSHALL) at half peak, per second: feed pages, their p99, the share served from inboxes, the share of returning readers ' +
      '(a page at least 1 s after their first since the loss), rebuild snapshots',
  );
  const flushSecond = LOST_AT;
  for (const row of lost.timeline) {
    const mark = row.second === flushSecond ? '  <- FLUSHALL' : '';
    console.log(
      `  ${String(row.second).padStart(3)} s  ${String(row.pages).padStart(5)} pages  p99 ${row.p99.toFixed(1).padStart(7)} ms  ` +
        `inbox ${row.fromInbox === null ? '  -' : `${Math.round(row.fromInbox * 100)}%`.padStart(4)}  returning ${`${Math.round(row.returning * 100)}%`.padStart(4)}  rebuilds ${row.rebuilds}${row.errors > 0 ? `  errors ${row.errors}` : ''}${mark}`,
    );
  }
  console.log(
    `  inboxes back (${BACK_SHARE * 100}% of the pages from inboxes over ${BACK_WINDOW} s) after ` +
      `${lost.backAfterSeconds === null ? 'MORE than the run' : `${lost.backAfterSeconds} s`}; page p99 until then ${ms(lost.pageP99UntilBack)} ` +
      `(${fixed(lost.inboxShareAtEnd === null ? null : lost.inboxShareAtEnd * 100, 0)}% from inboxes in the last ${BACK_WINDOW} s); ` +
      `page p99 under ${SETTLED_P99_MS} ms for good after ${lost.settledAfterSeconds === null ? 'MORE than the run' : `${lost.settledAfterSeconds} s`}`,
  );
  console.log(
    `  ${lost.rebuilds.toLocaleString('en-US')} rebuilds, ${fixed(lost.rowsPerRebuild, 0)} rows returned per rebuild snapshot, ` +
      `${fixed(lost.extraRowsPerRebuild, 0)} MySQL rows read per rebuild (TABLE_STATISTICS: the phase's rows beyond the same load without the loss, ` +
      'pull pages of readers waiting for their inbox included)',
  );

  console.log('');
  console.log('Summary');
  console.log(
    `  mix at peak: ${rate(peakRate)}; its parts alone predict ${rate(predicted)} (1 / sum(share / rate alone))`,
  );
  const eachRound = (value: (ratios: Ratios) => number | null) =>
    roundRatios.length > 1 ? `; rounds ${roundRatios.map((ratios) => `${fixed(value(ratios), 2)}x`).join(', ')}` : '';
  console.log(
    `  mix vs parts:                ${mixRatio.toFixed(2)}x  (target >= 0.9x${eachRound((ratios) => ratios.mixVsParts)})`,
  );
  if (firstRate && publishRate)
    console.log(
      `  publishes alone / first pages alone: ${(publishRate / firstRate).toFixed(2)}x  (target >= 0.5x${eachRound((ratios) => ratios.publishVsPages)})`,
    );
  console.log(
    `  feed page p99 at half peak (${halfRate}/s, open loop): ${ms(pages(half))}  (target < 50 ms; in the server ${ms(summarize(half.inServer.pages).p99)}, over HTTP ${ms(summarize(half.inServer.pagesHttp).p99)}${
      half.generator.sendLag ? `, requests sent p99 ${ms(half.generator.sendLag.p99)} late` : ''
    }${half.generator.pageTail ? `; ${tailText(half.generator.pageTail)}` : ''})`,
  );
  console.log(
    `  fan-out lag p99 at half peak: ${ms(lagOf(half).p99)} (${lagOf(half).count} fan-outs); with the mix at peak: ${ms(lagOf(mixPeak).p99)}`,
  );
  console.log(
    `  Redis lost: inboxes back after ${lost.backAfterSeconds === null ? 'more than the run' : `${lost.backAfterSeconds} s`}, ` +
      `page p99 under ${SETTLED_P99_MS} ms for good after ${lost.settledAfterSeconds === null ? 'more than the run' : `${lost.settledAfterSeconds} s`}, ` +
      `page p99 until then ${ms(lost.pageP99UntilBack)}, ${fixed(lost.rowsPerRebuild, 0)} rows per rebuild snapshot, ` +
      `${fixed(lost.extraRowsPerRebuild, 0)} MySQL rows read per rebuild`,
  );
  const generatorCpu = Math.max(
    ...[...Object.values(alone), mixPeak, half, lost.phase].map(
      (phase) => phase.generator.cpuSeconds / phase.generator.seconds,
    ),
  );
  console.log(`  load generator (another process): at most ${Math.round(generatorCpu * 100)}% of a core in a phase`);
  console.log(`  errors: ${errors}${errors > 0 ? '  (must be 0)' : ''}`);

  if (process.env.MIXED_JSON === '1') {
    const phaseJson = (phase: PhaseResult) => ({
      name: phase.name,
      seconds: phase.generator.seconds,
      requests: phase.requests,
      generatorCpuSeconds: phase.generator.cpuSeconds,
      operations: Object.fromEntries(
        Object.entries(phase.generator.operations).map(([operation, { samples: _samples, ...summary }]) => [
          operation,
          summary,
        ]),
      ),
      costsPerRequest: {
        statements: perRequest(phase, phase.costs.statements),
        redisCommands: perRequest(phase, phase.costs.redisCommands),
        rowsRead: perRequest(phase, phase.costs.rowsRead),
      },
      fanoutLagMs: lagOf(phase),
      server: phase.server,
      inServerMs: {
        pages: summarize(phase.inServer.pages),
        all: summarize(phase.inServer.all),
        pagesHttp: summarize(phase.inServer.pagesHttp),
      },
      ...(phase.generator.sendLag ? { sendLagMs: phase.generator.sendLag } : {}),
    });
    console.log(
      JSON.stringify({
        settings: {
          users: USERS,
          follows: FOLLOWS,
          zipf: ZIPF,
          blogs: BLOGS,
          active: ACTIVE,
          duration: DURATION,
          connections: CONNECTIONS,
          shares: SHARES,
        },
        graph: {
          follows: input.graph.follows,
          bigAuthors: input.graph.bigAuthors,
          topFollowers: input.graph.topFollowers,
          seedSeconds: input.graph.seedSeconds,
        },
        alone: Object.fromEntries(Object.entries(alone).map(([operation, phase]) => [operation, phaseJson(phase)])),
        mixPeak: phaseJson(mixPeak),
        half: phaseJson(half),
        lost: { ...lost, phase: phaseJson(lost.phase) },
        ratios: {
          predicted,
          mixVsParts: mixRatio,
          publishVsPages: firstRate && publishRate ? publishRate / firstRate : null,
          pageP99AtHalf: pages(half),
          rounds: roundRatios,
        },
        errors,
      }),
    );
  }
  if (errors > 0) process.exitCode = 1;
}

async function runGenerator(specFile: string, onStart?: () => void): Promise<GeneratorResult> {
  const child = spawn(process.execPath, [join(__dirname, 'mixed.generator.js'), specFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The generator prints "started" when its schedule begins, before its result line.
  let head = '';
  child.stdout.on('data', function watchForStart(chunk: Buffer) {
    head += chunk.toString();
    if (!head.includes('started\n')) return;
    child.stdout.off('data', watchForStart);
    onStart?.();
  });
  const { code, output } = await outputOf(child);
  if (code !== 0) throw new Error(`the load generator exited with ${code}`);
  return JSON.parse(output.trim().split('\n').pop()!) as GeneratorResult;
}

interface PrivateRedis {
  url: string;
  pid: number | null;
  /** Commands the server has processed so far, and reads from client sockets (INFO stats). */
  stats(): Promise<{ redisCommands: number; redisReads: number }>;
  flushAll(): Promise<void>;
  stop(): void;
}

/** A redis-server of the run's own (no persistence), on a free port. */
async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = 17_000 + Math.floor(Math.random() * 2000);
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 50, retryStrategy: () => 50 });
  // Refused until the server listens: ioredis retries, and the ping waits for it.
  client.on('error', () => {});
  await client.ping();
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: server.pid ?? null,
    async stats() {
      const info = await client.info('stats');
      const stat = (name: string) => Number(new RegExp(`${name}:(\\d+)`).exec(info)?.[1] ?? NaN);
      return { redisCommands: stat('total_commands_processed'), redisReads: stat('total_reads_processed') };
    },
    async flushAll() {
      await client.flushall();
    },
    stop() {
      client.disconnect();
      server.kill('SIGKILL');
    },
  };
}

/**
 * MySQL rows read in the benchmark's database: MariaDB's TABLE_STATISTICS (userstat, switched on
 * for the run and back after). null where the server has no such table.
 */
class RowsRead {
  private constructor(
    private readonly connection: Awaited<ReturnType<typeof createConnection>> | null,
    private readonly schema: string,
    private readonly restore: string | null,
  ) {}

  static async open(databaseUrl: string, schema: string): Promise<RowsRead> {
    const server = new URL(databaseUrl);
    server.pathname = '/';
    const connection = await createConnection({ uri: server.toString() });
    try {
      const [rows] = (await connection.query("SHOW VARIABLES LIKE 'userstat'")) as unknown as [
        Array<{ Value: string }>,
      ];
      if (rows.length === 0) throw new Error('no userstat');
      if (rows[0].Value !== 'ON') await connection.query('SET GLOBAL userstat = 1');
      return new RowsRead(connection, schema, rows[0].Value === 'ON' ? null : rows[0].Value);
    } catch {
      await connection.end();
      return new RowsRead(null, schema, null);
    }
  }

  async total(): Promise<number | null> {
    if (!this.connection) return null;
    const [rows] = (await this.connection.query(
      'SELECT COALESCE(SUM(ROWS_READ), 0) AS n FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ?',
      [this.schema],
    )) as unknown as [Array<{ n: string }>];
    return Number(rows[0].n);
  }

  /** InnoDB pages read from disk so far, the whole server's (the run's database is most of its work). */
  async diskReads(): Promise<number | null> {
    if (!this.connection) return null;
    const [rows] = (await this.connection.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")) as unknown as [
      Array<{ Value: string }>,
    ];
    return rows.length === 0 ? null : Number(rows[0].Value);
  }

  async close(): Promise<void> {
    if (!this.connection) return;
    if (this.restore !== null) await this.connection.query(`SET GLOBAL userstat = ${this.restore === 'ON' ? 1 : 0}`);
    await this.connection.end();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
