/**
 * bench:mixed's load generator, in its own process (the server's event loop is the one measured):
 * GraphQL over node:http with keep-alive, as the seeded active users.
 * - closed: `connections` clients, each sending its next request when the last one answered
 *   (the capacity: what the server completes per second at that concurrency);
 * - open: requests due at a fixed rate (as wrk2), sent when due whatever is still in flight, each
 *   latency counted from when it was due, so a stall shows in every request it delays
 *   (no coordinated omission);
 * - each: one `{ __typename }` per user (a process reads a user's sessions at their first request
 *   there: paid before the measured phases).
 * Input: a JSON spec file in argv[2]. Prints "started" when the schedule begins, then one JSON
 * line with the figures.
 */
import http from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import {
  dueBetween,
  LatencySummary,
  Operation,
  OPERATIONS,
  pickOperation,
  seededRandom,
  Shares,
  summarize,
  TAIL_WINDOW_MS,
  TailWindows,
  tailWindows,
  zipfSampler,
} from './mixed.model';

export interface GeneratorSpec {
  url: string;
  /** The active users: their bearer token and global id. */
  viewers: Array<{ token: string; userId: string }>;
  /** Deeper pages: a viewer (index into viewers) and an `after` cursor 10 to 90 entries down their feed. */
  deep: Array<{ viewer: number; after: string }>;
  /** Every user's global id by popularity rank (0 = most followed): profiles and follows pick by Zipf. */
  ranked: string[];
  zipf: number;
  /** Blogs to like. */
  blogIds: string[];
  shares: Shares;
  mode:
    | { kind: 'closed'; connections: number }
    | { kind: 'open'; rate: number }
    /** Every viewer once, in turn: their session warmed (`{ __typename }`), or with `firstPage` their first feed page. */
    | { kind: 'each'; connections: number; firstPage?: boolean };
  durationSeconds: number;
  seed: number;
  /** Feed pages' latency per second (the "Redis lost" timeline). */
  series: boolean;
  /** With series: the second of the schedule from which pages count as returning (see GeneratorResult.series). */
  markSecond?: number;
  /**
   * Where to write every request's due time (ms from the schedule's start), latency (ms) and
   * operation, one line each, tab-separated, once the phase is over (MIXED_TIMELINE): whether a
   * tail is spread over the phase or made in a few moments, and which.
   */
  timelineFile?: string;
}

export interface GeneratorResult {
  seconds: number;
  /** CPU seconds this process used (user + system). */
  cpuSeconds: number;
  /** Per operation its latency summary and every latency (ms, to 0.01), so that phases of several rounds can be pooled. */
  operations: Partial<Record<Operation, LatencySummary & { samples: number[]; errors: number; firstError?: string }>>;
  /**
   * Per second of the schedule: feed pages (first and deeper) answered, their p99 (ms), errors, and
   * how many were returning: due at markSecond or later for a reader with a page due since then
   * at least RETURNING_AFTER_MS earlier (a reader whose inbox, lost at the mark, could be back).
   */
  series?: Array<{ second: number; pages: number; p50: number; p99: number; errors: number; returning: number }>;
  /** open: requests still unanswered 30 s after the schedule ended (counted as errors). */
  abandoned: number;
  /**
   * open: how late this process sent its requests (ms from each one's due time to its send): the
   * part of the latencies that is the load generator's own, on a machine it shares.
   */
  sendLag?: LatencySummary;
  /** open: where the feed pages' slowest 1% were due (TAIL_WINDOW_MS windows of the schedule). */
  pageTail?: TailWindows;
}

const FEED = `query($after: String) { followFeed(first: 10, after: $after) {
  edges { cursor node { id title content likeCount isLiked createdAt author { id nickName } } }
  pageInfo { hasNextPage endCursor } } }`;
const PROFILE = `query($id: ID!) { user(id: $id) { id nickName followerCount followingCount isFollowedByViewer
  blogs(first: 10) { edges { cursor node { id title content likeCount isLiked createdAt } } pageInfo { hasNextPage endCursor } } } }`;
const PUBLISH =
  'mutation($t: String!) { publishBlogEdge(input: { title: $t, content: "Posted during bench:mixed." }) { cursor node { id } } }';
const LIKE = 'mutation($b: ID!, $l: Boolean!) { likeBlog(blogId: $b, liked: $l) { id likeCount isLiked } }';
const FOLLOW = 'mutation($u: ID!, $f: Boolean!) { followUser(userId: $u, follow: $f) { user { id followerCount } } }';

/** Sockets at most (open loop): past it requests wait in the agent, their wait counted in their latency. */
const MAX_SOCKETS = 512;
/** A page counts as returning when its reader's first page since the mark was due this long before. */
const RETURNING_AFTER_MS = 1000;
/** How long an open-loop run waits for its last answers. */
const DRAIN_MS = 30_000;
/** How many of the windows holding an open loop's page tail it names, the busiest (GeneratorResult.pageTail). */
const TAIL_WINDOWS_NAMED = 3;

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2], 'utf8')) as GeneratorSpec;
  const url = new URL(spec.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  const random = seededRandom(spec.seed);
  const popular = zipfSampler(spec.ranked.length, spec.zipf, random);
  const any = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];

  /** The request of one operation: the viewer's token and the body. */
  const requestOf = (operation: Operation): { token: string; body: string; viewer: number } => {
    const index = Math.floor(random() * spec.viewers.length);
    const viewer = spec.viewers[index];
    switch (operation) {
      case 'first':
        return {
          token: viewer.token,
          viewer: index,
          body: JSON.stringify({ query: FEED, variables: { after: null } }),
        };
      case 'deeper': {
        const deep = any(spec.deep);
        return {
          token: spec.viewers[deep.viewer].token,
          viewer: deep.viewer,
          body: JSON.stringify({ query: FEED, variables: { after: deep.after } }),
        };
      }
      case 'profile':
        return {
          token: viewer.token,
          viewer: index,
          body: JSON.stringify({ query: PROFILE, variables: { id: spec.ranked[popular()] } }),
        };
      case 'publish':
        return {
          token: viewer.token,
          viewer: index,
          body: JSON.stringify({
            query: PUBLISH,
            variables: { t: `mixed ${Date.now()} ${Math.floor(random() * 1e9)}` },
          }),
        };
      case 'like':
        return {
          token: viewer.token,
          viewer: index,
          body: JSON.stringify({ query: LIKE, variables: { b: any(spec.blogIds), l: random() < 0.6 } }),
        };
      case 'follow': {
        let target = spec.ranked[popular()];
        while (target === viewer.userId) target = spec.ranked[popular()];
        return {
          token: viewer.token,
          viewer: index,
          body: JSON.stringify({ query: FOLLOW, variables: { u: target, f: random() < 0.6 } }),
        };
      }
    }
  };

  /**
   * Resolves with an error text, or null when the answer is a 200 without GraphQL errors. A
   * kept-alive socket the server closed as the request went out (its idle timeout) is no answer of
   * the server's: sent again once on a new socket, as node:http's documentation advises.
   */
  const send = (token: string, body: string, operation?: Operation, retried = false): Promise<string | null> =>
    new Promise((resolve) => {
      const request = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            authorization: `Bearer ${token}`,
            // For the server's probe of its HTTP requests (mixed.bench.ts, Probes.http).
            ...(operation ? { 'x-bench-operation': operation } : {}),
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve(
              response.statusCode !== 200 || text.includes('"errors"')
                ? `${response.statusCode}: ${text.slice(0, 300)}`
                : null,
            );
          });
          response.on('error', (error) => resolve(String(error)));
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (!retried && request.reusedSocket && error.code === 'ECONNRESET')
          resolve(send(token, body, operation, true));
        else resolve(String(error));
      });
      request.end(body);
    });

  const latencies = new Map<Operation, number[]>(OPERATIONS.map((operation) => [operation, []]));
  const errors = new Map<Operation, { count: number; first?: string }>(
    OPERATIONS.map((operation) => [operation, { count: 0 }]),
  );
  const perSecond: Array<{ pages: number[]; errors: number; returning: number }> = [];
  /** Per reader, when their first page since the mark was due. */
  const firstSinceMark = new Map<number, number>();
  const timeline: string[] = [];
  /** Open loop: feed pages' due times (ms into the schedule) and latencies (GeneratorResult.pageTail). */
  const pages: Array<{ dueMs: number; latencyMs: number }> = [];
  const record = (operation: Operation, viewer: number, dueAt: number, startedAt: number, error: string | null) => {
    const elapsed = performance.now() - dueAt;
    latencies.get(operation)!.push(elapsed);
    if (spec.mode.kind === 'open' && (operation === 'first' || operation === 'deeper'))
      pages.push({ dueMs: dueAt - startedAt, latencyMs: elapsed });
    if (spec.timelineFile) timeline.push(`${(dueAt - startedAt).toFixed(1)}\t${elapsed.toFixed(1)}\t${operation}`);
    if (error) {
      const e = errors.get(operation)!;
      e.count += 1;
      e.first ??= error;
    }
    if (spec.series && (operation === 'first' || operation === 'deeper')) {
      const second = Math.floor((dueAt - startedAt) / 1000);
      perSecond[second] ??= { pages: [], errors: 0, returning: 0 };
      perSecond[second].pages.push(elapsed);
      if (error) perSecond[second].errors += 1;
      if (spec.markSecond !== undefined && dueAt - startedAt >= spec.markSecond * 1000) {
        const first = firstSinceMark.get(viewer);
        if (first === undefined) firstSinceMark.set(viewer, dueAt);
        else if (dueAt - first >= RETURNING_AFTER_MS) perSecond[second].returning += 1;
      }
    }
  };

  const sendLags: number[] = [];
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const end = started + spec.durationSeconds * 1000;
  let abandoned = 0;
  console.log('started');
  if (spec.mode.kind === 'each') {
    let next = 0;
    const { firstPage } = spec.mode;
    const body = firstPage ? JSON.stringify({ query: FEED, variables: { after: null } }) : '{"query":"{ __typename }"}';
    const client = async () => {
      while (next < spec.viewers.length) {
        const viewer = spec.viewers[next++];
        const error = await send(viewer.token, body);
        if (error)
          throw new Error(`${firstPage ? 'a first page of every viewer' : 'warming the sessions'} failed: ${error}`);
      }
    };
    await Promise.all(Array.from({ length: spec.mode.connections }, client));
  } else if (spec.mode.kind === 'closed') {
    const client = async () => {
      while (performance.now() < end) {
        const operation = pickOperation(spec.shares, random());
        const { token, body, viewer } = requestOf(operation);
        const at = performance.now();
        record(operation, viewer, at, started, await send(token, body, operation));
      }
    };
    await Promise.all(Array.from({ length: spec.mode.connections }, client));
  } else {
    const rate = spec.mode.rate;
    const inFlight = new Set<Promise<void>>();
    let index = 0;
    await new Promise<void>((resolve) => {
      const tick = () => {
        for (const i of dueBetween(started, rate, index, performance.now(), end)) {
          index = i + 1;
          const due = started + (i * 1000) / rate;
          const operation = pickOperation(spec.shares, random());
          const { token, body, viewer } = requestOf(operation);
          sendLags.push(performance.now() - due);
          const work = send(token, body, operation).then((error) => record(operation, viewer, due, started, error));
          inFlight.add(work);
          void work.finally(() => inFlight.delete(work));
        }
        const nextDue = started + (index * 1000) / rate;
        if (nextDue >= end) resolve();
        else setTimeout(tick, Math.max(0, Math.min(1, nextDue - performance.now())));
      };
      tick();
    });
    const drained = await Promise.race([
      Promise.allSettled([...inFlight]).then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), DRAIN_MS)),
    ]);
    if (!drained) abandoned = inFlight.size;
  }
  const seconds = spec.mode.kind === 'open' ? spec.durationSeconds : (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const result: GeneratorResult = { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, operations: {}, abandoned };
  if (spec.mode.kind === 'open') {
    result.sendLag = summarize(sendLags);
    result.pageTail = tailWindows(pages, TAIL_WINDOW_MS, TAIL_WINDOWS_NAMED);
  }
  for (const operation of OPERATIONS) {
    const samples = latencies.get(operation)!;
    if (samples.length === 0) continue;
    const e = errors.get(operation)!;
    result.operations[operation] = {
      ...summarize(samples),
      samples: samples.map((sample) => Math.round(sample * 100) / 100),
      errors: e.count,
      firstError: e.first,
    };
  }
  if (spec.series) {
    result.series = Array.from({ length: perSecond.length }, (_, second) => {
      const bucket = perSecond[second] as (typeof perSecond)[number] | undefined;
      const summary = summarize(bucket?.pages ?? []);
      return {
        second,
        pages: summary.count,
        p50: summary.p50,
        p99: summary.p99,
        errors: bucket?.errors ?? 0,
        returning: bucket?.returning ?? 0,
      };
    });
  }
  agent.destroy();
  if (spec.timelineFile) writeFileSync(spec.timelineFile, `due_ms\tlatency_ms\toperation\n${timeline.join('\n')}\n`);
  // The line outgrows a pipe's buffer, and process.exit() drops what stdout has not written yet
  // (runs failed on a line cut at 219,264 characters): exit once the write is flushed.
  await new Promise<void>((resolve) => process.stdout.write(`${JSON.stringify(result)}\n`, () => resolve()));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
