/**
 * The subscribers of bench:live, in a process of their own (the server's CPU and memory must be
 * the server's alone): one graphql-ws client per token, each subscribed to followFeedAdded.
 * Talks to its parent over IPC: `ready` once every subscription is acknowledged, then one
 * `received` batch per second ({ title, at } of each event, `at` in epoch ms), until told to stop.
 */
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

interface Start {
  url: string;
  tokens: string[];
}

const SUBSCRIPTION = 'subscription { followFeedAdded { cursor node { id title } } }';

/**
 * Sockets opened per tick of CONNECT_TICK_MS: 2,000 clients in about 8 s. All at once, the
 * server's event loop spends its first second on 2,000 handshakes and subscribe messages, and
 * its Redis replies wait past REDIS_COMMAND_TIMEOUT_MS: a reconnect storm, not the steady state
 * this benchmark measures.
 */
const CONNECT_BATCH = 25;
const CONNECT_TICK_MS = 100;

process.once('message', (message: Start) => {
  const wsUrl = message.url.replace(/^http/, 'ws');
  const received: Array<{ title: string; at: number }> = [];
  let acknowledged = 0;
  const clients: Array<ReturnType<typeof createClient>> = [];
  const connect = (token: string) => {
    const client = createClient({
      url: wsUrl,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${token}` },
      lazy: false,
      retryAttempts: 0,
    });
    client.subscribe<{ followFeedAdded: { node: { title: string } } }>(
      { query: SUBSCRIPTION },
      {
        next: (result) => {
          if (result.data) received.push({ title: result.data.followFeedAdded.node.title, at: Date.now() });
          // A subscription the server could not start ends with one result of errors, then completes.
          if (result.errors)
            process.send!({ kind: 'error', error: result.errors.map((error) => error.message).join('; ') });
        },
        error: (error) =>
          process.send!({ kind: 'error', error: String((error as Error)?.message ?? JSON.stringify(error)) }),
        complete: () => {},
      },
    );
    client.on('connected', () => {
      acknowledged += 1;
      if (acknowledged === message.tokens.length) setTimeout(() => process.send!({ kind: 'ready' }), 500);
    });
    clients.push(client);
  };
  for (let start = 0; start < message.tokens.length; start += CONNECT_BATCH) {
    setTimeout(
      () => message.tokens.slice(start, start + CONNECT_BATCH).forEach(connect),
      (start / CONNECT_BATCH) * CONNECT_TICK_MS,
    );
  }
  const flush = setInterval(() => {
    if (received.length > 0) process.send!({ kind: 'received', events: received.splice(0) });
  }, 250);
  process.on('message', (next: { kind: string }) => {
    if (next.kind !== 'stop') return;
    clearInterval(flush);
    process.send!({ kind: 'received', events: received.splice(0) }, undefined, undefined, () => {
      void Promise.all(clients.map(async (client) => client.dispose())).then(() => process.exit(0));
    });
  });
});
