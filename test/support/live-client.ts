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

export interface LiveClient {
  edges: LiveEdge[];
  /** Errors sent on the subscription (typed GraphQL errors). */
  errors: Array<{ message: string; extensions?: Record<string, unknown> }>;
  /** How the socket closed, once it has. */
  closed: () => { code: number; reason: string } | null;
  /** Waits for `count` edges (or throws naming what came). */
  received(count: number, timeoutMs?: number): Promise<LiveEdge[]>;
  /** Starts one more subscription of the same document on this socket; resolves its errors once it ended. */
  subscribeAgain(query?: string): { errors: Promise<Array<{ message: string; extensions?: Record<string, unknown> }>> };
  dispose(): Promise<void>;
}

/** Connects to the API at `httpUrl` (http://.../graphql) with `token` (none: anonymous) and subscribes. */
export function liveClient(httpUrl: string, token: string | null, query = FOLLOW_FEED_ADDED): LiveClient {
  const edges: LiveEdge[] = [];
  const errors: Array<{ message: string; extensions?: Record<string, unknown> }> = [];
  let closed: { code: number; reason: string } | null = null;
  const client: Client = createClient({
    url: httpUrl.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: token === null ? {} : { authorization: `Bearer ${token}` },
    lazy: false,
    retryAttempts: 0,
    on: {
      closed: (event) => {
        const { code, reason } = event as { code: number; reason: string };
        closed = { code, reason };
      },
    },
  });
  void collect(
    client,
    query,
    (data) => edges.push((data as { followFeedAdded: LiveEdge }).followFeedAdded),
    (error) => errors.push(...error),
  );
  return {
    edges,
    errors,
    closed: () => closed,
    async received(count, timeoutMs = 10_000) {
      await waitFor(
        `${count} live edge(s) (got ${edges.length}: ${JSON.stringify(edges.map((edge) => edge.node.title))})`,
        async () => edges.length >= count,
        timeoutMs,
      );
      return edges.slice(0, count);
    },
    subscribeAgain(again = query) {
      const more: Array<{ message: string; extensions?: Record<string, unknown> }> = [];
      return {
        errors: collect(
          client,
          again,
          () => {},
          (error) => more.push(...error),
        ).then(() => more),
      };
    },
    dispose: () => client.dispose() as Promise<void>,
  };
}

/** Runs one operation on the client; resolves when it completes or fails. */
function collect(
  client: Client,
  query: string,
  onData: (data: unknown) => void,
  onErrors: (errors: Array<{ message: string; extensions?: Record<string, unknown> }>) => void,
): Promise<void> {
  return new Promise((resolve) => {
    client.subscribe(
      { query },
      {
        next: (result) => {
          if (result.data) onData(result.data);
          if (result.errors) onErrors(result.errors as Array<{ message: string; extensions?: Record<string, unknown> }>);
        },
        error: (error) => {
          if (Array.isArray(error)) onErrors(error as Array<{ message: string; extensions?: Record<string, unknown> }>);
          resolve();
        },
        complete: () => resolve(),
      },
    );
  });
}
