/**
 * A real graphql-ws client for the live-feed tests: subscribes to followFeedAdded on an API's
 * address and records what arrives, how the socket closed, and the errors it was sent.
 */
import { Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { waitFor } from './processes';

export const FOLLOW_FEED_ADDED = 'subscription { followFeedAdded { cursor node { id title author { nickName } } } }';

export interface LiveEdge {
  cursor: string;
  node: { id: string; title: string; author: { nickName: string } };
}

export type GqlError = { message: string; extensions?: Record<string, unknown> };

export const FOLLOW_FEED_REMOVED = 'subscription { followFeedRemoved { blogId } }';

export interface LiveClient {
  edges: LiveEdge[];
  /** Blog ids told by followFeedRemoved, in order. */
  removals: string[];
  /** Errors sent on the subscription (typed GraphQL errors). */
  errors: GqlError[];
  /** How the socket closed, once it has. */
  closed: () => { code: number; reason: string } | null;
  /** Whether the server acknowledged the socket (connection_ack). */
  acknowledged: () => boolean;
  /** Waits for `count` edges (or throws naming what came). */
  received(count: number, timeoutMs?: number): Promise<LiveEdge[]>;
  /** Starts one more subscription of the same document on this socket; resolves its errors once it ended; stop() completes it. */
  subscribeAgain(query?: string): { errors: Promise<GqlError[]>; stop: () => void };
  /** Runs a query or mutation on this socket: its result. */
  run<T = any>(query: string, variables?: Record<string, unknown>): Promise<{ data?: T | null; errors?: GqlError[] }>;
  dispose(): Promise<void>;
}

/** Connects to the API at `httpUrl` (http://.../graphql) with `token` (none: anonymous) and subscribes to `query` (null: nothing). */
export function liveClient(
  httpUrl: string,
  token: string | null,
  query: string | null = FOLLOW_FEED_ADDED,
  variables?: Record<string, unknown>,
): LiveClient {
  const edges: LiveEdge[] = [];
  const removals: string[] = [];
  const errors: GqlError[] = [];
  let closed: { code: number; reason: string } | null = null;
  let acknowledged = false;
  const client: Client = createClient({
    url: httpUrl.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: token === null ? {} : { authorization: `Bearer ${token}` },
    lazy: false,
    retryAttempts: 0,
    // How the socket closed is recorded below; graphql-ws would also print it.
    onNonLazyError: () => {},
    on: {
      connected: () => {
        acknowledged = true;
      },
      closed: (event) => {
        const { code, reason } = event as { code: number; reason: string };
        closed = { code, reason };
      },
    },
  });
  if (query !== null) {
    void collect(
      client,
      query,
      (data) => {
        const { followFeedAdded, followFeedRemoved } = data as {
          followFeedAdded?: LiveEdge;
          followFeedRemoved?: { blogId: string };
        };
        if (followFeedAdded) edges.push(followFeedAdded);
        if (followFeedRemoved) removals.push(followFeedRemoved.blogId);
      },
      (error) => errors.push(...error),
      variables,
    ).done;
  }
  return {
    edges,
    removals,
    errors,
    closed: () => closed,
    acknowledged: () => acknowledged,
    async received(count, timeoutMs = 10_000) {
      await waitFor(
        `${count} live edge(s) (got ${edges.length}: ${JSON.stringify(edges.map((edge) => edge.node.title))})`,
        async () => edges.length >= count,
        timeoutMs,
      );
      return edges.slice(0, count);
    },
    subscribeAgain(again = query ?? FOLLOW_FEED_ADDED) {
      const more: GqlError[] = [];
      const running = collect(
        client,
        again,
        () => {},
        (error) => more.push(...error),
      );
      return { errors: running.done.then(() => more), stop: running.stop };
    },
    async run(operation, variables) {
      let result: { data?: any; errors?: GqlError[] } = {};
      await collect(
        client,
        operation,
        (data) => (result = { ...result, data }),
        (error) => (result = { ...result, errors: [...(result.errors ?? []), ...error] }),
        variables,
      ).done;
      return result;
    },
    dispose: () => client.dispose() as Promise<void>,
  };
}

/** Runs one operation on the client: `done` resolves when it completes or fails; stop() completes it. */
function collect(
  client: Client,
  query: string,
  onData: (data: unknown) => void,
  onErrors: (errors: GqlError[]) => void,
  variables?: Record<string, unknown>,
): { done: Promise<void>; stop: () => void } {
  let stop = () => {};
  const done = new Promise<void>((resolve) => {
    stop = client.subscribe(
      { query, variables },
      {
        next: (result) => {
          if (result.data) onData(result.data);
          if (result.errors) onErrors(result.errors as GqlError[]);
        },
        error: (error) => {
          if (Array.isArray(error)) onErrors(error as GqlError[]);
          resolve();
        },
        complete: () => resolve(),
      },
    );
  });
  return { done, stop: () => stop() };
}
