/**
 * A load generator in its own process (so that it does not share the servers' event loop):
 * autocannon against one URL, rotating the bearer tokens (and `after` cursors) of many readers.
 * Input: a JSON file path in argv[2]; output: one JSON line with the figures.
 */
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';

interface LoadSpec {
  url: string;
  /** GraphQL: a POST body per reader; plain: the same (the handler ignores the query text). */
  bodies: string[];
  tokens: string[];
  connections: number;
  durationSeconds: number;
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2], 'utf8')) as LoadSpec;
  let next = 0;
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSeconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const i = next++ % spec.tokens.length;
          return {
            ...request,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${spec.tokens[i]}` },
            body: spec.bodies[i],
          };
        },
      },
    ],
  });
  console.log(
    JSON.stringify({
      requestsPerSecond: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      total: result.requests.total,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
