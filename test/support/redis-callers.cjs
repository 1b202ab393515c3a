// Run by tracing.test.ts as a process of its own (the instrumentations patch ioredis as Node's
// loader loads it, which Jest's module registry bypasses): tracing on as the service starts it
// (dist/src/telemetry.js), then the service's auto-pipelined client (dist/src/redis/redis.client.js)
// sends commands of traced callers beside untraced ones, as a worker's chunk beside its relay:
//   - "after-untraced": queued in the tick of an untraced command that came first;
//   - "first" and "second": two callers in one tick;
//   - "while-in-flight": queued while an untraced batch waits for its reply.
// Each caller is a span of its own; every command should hang under the caller that sent it.
const { setImmediate } = require('node:timers');
const { startTracing } = require('../../dist/src/telemetry.js');

async function main() {
  const tracing = await startTracing(
    { otlpEndpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: 'redis-callers' },
    'redis-callers',
  );
  // Loaded after tracing started, as server.ts and worker.ts load the app.
  const { trace } = require('@opentelemetry/api');
  const { createRedis } = require('../../dist/src/redis/redis.client.js');
  const redis = createRedis(
    { redisUrl: process.env.REDIS_URL, redisClusterNodes: undefined, redisCommandTimeoutMs: 5000 },
    (message) => console.error(message),
  );
  const key = process.env.KEY;
  const tracer = trace.getTracer('redis-callers');
  const traced = (name, command) => tracer.startActiveSpan(name, (span) => command().finally(() => span.end()));
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  await redis.ping();

  await Promise.all([redis.exists(key), traced('after-untraced', () => redis.get(key))]);
  await Promise.all([traced('first', () => redis.get(key)), traced('second', () => redis.exists(key))]);
  // The untraced EXISTS is sent in the next turn's check phase; the caller's GET, queued right
  // after it in that phase, waits for its reply and goes out from its callback.
  await Promise.all([redis.exists(key), nextTurn().then(() => traced('while-in-flight', () => redis.get(key)))]);

  redis.disconnect();
  await tracing.shutdown();
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
