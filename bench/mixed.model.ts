/**
 * Pure parts of bench:mixed (no I/O, unit-tested in test/unit/bench/mixed-bench.test.ts): a seeded
 * random source, a Zipf sampler for heavy-tailed popularity, the operation mix and its
 * prediction from the operations' rates alone, the open-loop schedule and latency summaries.
 */

/** The operations of the mix, in the order the benchmark prints them. */
export const OPERATIONS = ['first', 'deeper', 'profile', 'publish', 'like', 'follow'] as const;
export type Operation = (typeof OPERATIONS)[number];
export type Shares = Partial<Record<Operation, number>>;

/** The default mix (percent): first feed pages, deeper pages, profiles, publishes, likes, follows. */
export const DEFAULT_SHARES: Record<Operation, number> = {
  first: 45,
  deeper: 15,
  profile: 25,
  publish: 8,
  like: 5,
  follow: 2,
};

/** mulberry32: a fast seeded generator of uniform numbers in [0, 1), so that a run's graph is reproducible. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Ranks 0..n-1 drawn with probability proportional to 1 / (rank + 1)^s (Zipf): rank 0 is the most
 * popular. Inverse CDF over a cumulative table, by binary search (O(log n) a draw).
 */
export function zipfSampler(n: number, s: number, random: () => number): () => number {
  if (!Number.isInteger(n) || n < 1) throw new Error(`a Zipf sampler needs n >= 1 (got ${n})`);
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let rank = 0; rank < n; rank += 1) {
    total += 1 / Math.pow(rank + 1, s);
    cumulative[rank] = total;
  }
  return () => {
    const target = random() * total;
    let low = 0;
    let high = n - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (cumulative[middle] > target) high = middle;
      else low = middle + 1;
    }
    return low;
  };
}

/** The operation a uniform draw `u` in [0, 1) picks, each with probability share / sum of shares. */
export function pickOperation(shares: Shares, u: number): Operation {
  const entries = OPERATIONS.filter((operation) => (shares[operation] ?? 0) > 0);
  const total = entries.reduce((sum, operation) => sum + shares[operation]!, 0);
  let acc = 0;
  for (const operation of entries) {
    acc += shares[operation]! / total;
    if (u < acc) return operation;
  }
  return entries[entries.length - 1];
}

/**
 * What a mix would reach if each operation cost what it costs alone: 1 / sum(share_i / rate_i),
 * shares normalised to 1 (time per request of the mix is the share-weighted time of its parts).
 */
export function partsCapacity(shares: Shares, ratesAlone: Partial<Record<Operation, number>>): number {
  const entries = OPERATIONS.filter((operation) => (shares[operation] ?? 0) > 0);
  const total = entries.reduce((sum, operation) => sum + shares[operation]!, 0);
  let secondsPerRequest = 0;
  for (const operation of entries) {
    const rate = ratesAlone[operation];
    if (!rate || rate <= 0) throw new Error(`no rate alone for ${operation}`);
    secondsPerRequest += shares[operation]! / total / rate;
  }
  return 1 / secondsPerRequest;
}

/** Parses "first=45,deeper=15,..." (MIXED_SHARES); unknown names and bad numbers are refused. */
export function parseShares(text: string): Record<Operation, number> {
  const shares: Record<Operation, number> = { first: 0, deeper: 0, profile: 0, publish: 0, like: 0, follow: 0 };
  for (const part of text
    .split(',')
    .map((each) => each.trim())
    .filter(Boolean)) {
    const [name, raw] = part.split('=');
    const value = Number(raw);
    if (!(OPERATIONS as readonly string[]).includes(name))
      throw new Error(`MIXED_SHARES: unknown operation "${name}" (known: ${OPERATIONS.join(', ')})`);
    if (!Number.isFinite(value) || value < 0)
      throw new Error(`MIXED_SHARES: ${name} must be a number >= 0 (got "${raw}")`);
    shares[name as Operation] = value;
  }
  if (OPERATIONS.every((operation) => shares[operation] === 0))
    throw new Error('MIXED_SHARES: at least one share must be above 0');
  return shares;
}

/**
 * Open-loop schedule (as wrk2): request i is due at start + i * 1000 / rate ms, whatever happened
 * to the ones before, and its latency counts from then. The requests due by `now` from `next` on.
 */
export function dueBetween(startMs: number, rate: number, next: number, nowMs: number, endMs: number): number[] {
  const due: number[] = [];
  for (let i = next; ; i += 1) {
    const at = startMs + (i * 1000) / rate;
    if (at > nowMs || at >= endMs) break;
    due.push(i);
  }
  return due;
}

export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles (the p-th percent of the sorted samples, as bench.support's percentile). */
export function summarize(samples: readonly number[]): LatencySummary {
  if (samples.length === 0) return { count: 0, p50: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(samples).sort();
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  return { count: sorted.length, p50: at(50), p99: at(99), max: sorted[sorted.length - 1] };
}

/** The windows an open loop's page tail is counted in: a quarter of a second. */
export const TAIL_WINDOW_MS = 250;

/**
 * Where a tail was made: the slowest 1% of a phase's samples (at or above their p99), counted by
 * the window of the schedule they were due in. A tail spread over the phase is the server's
 * usual speed under that load; one packed into a few windows is a few stalls, each delaying
 * every request due while it lasted (an open loop counts each from when it was due). A 15 s
 * phase at 450/s holds about 4,000 feed pages, so about 40 such: one stall of 150 ms, delaying
 * the 70 requests due while it lasts, can make the pages' p99 alone.
 */
export interface TailWindows {
  /** The samples' p99 (ms, as summarize) and how many are at or above it. */
  p99: number;
  count: number;
  /** The windows holding at least one of them. */
  windows: number;
  /** The windows holding the most, most first (ties: the earlier first); at most `top`. */
  busiest: Array<{ atMs: number; count: number; maxMs: number }>;
}

export function tailWindows(
  samples: ReadonlyArray<{ dueMs: number; latencyMs: number }>,
  windowMs: number,
  top: number,
): TailWindows {
  const { p99 } = summarize(samples.map((sample) => sample.latencyMs));
  const byWindow = new Map<number, { atMs: number; count: number; maxMs: number }>();
  let count = 0;
  for (const { dueMs, latencyMs } of samples) {
    if (latencyMs < p99) continue;
    count += 1;
    const atMs = Math.floor(dueMs / windowMs) * windowMs;
    const window = byWindow.get(atMs) ?? { atMs, count: 0, maxMs: 0 };
    window.count += 1;
    window.maxMs = Math.max(window.maxMs, latencyMs);
    byWindow.set(atMs, window);
  }
  const busiest = [...byWindow.values()].sort((a, b) => b.count - a.count || a.atMs - b.atMs).slice(0, top);
  return { p99, count, windows: byWindow.size, busiest };
}
