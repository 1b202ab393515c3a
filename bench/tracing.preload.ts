/**
 * Tracing for a benchmark process, registered before its first import (the instrumentations
 * patch modules as they load, and a benchmark imports the app at its top):
 *
 *   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 NODE_ENV=production \
 *     node --max-semi-space-size=16 --require ./dist/bench/tracing.preload.js dist/bench/feed.bench.js
 *
 * The same registration as the service's (src/telemetry.ts), with the SDK loaded statically so
 * that it is in place when this file returns. Without OTEL_EXPORTER_OTLP_ENDPOINT it does nothing.
 * bench/otlp-sink.ts is a collector that accepts and drops what it is sent.
 */
import * as sdkTraceNode from '@opentelemetry/sdk-trace-node';
import * as exporter from '@opentelemetry/exporter-trace-otlp-http';
import * as resources from '@opentelemetry/resources';
import * as instrumentation from '@opentelemetry/instrumentation';
import * as http from '@opentelemetry/instrumentation-http';
import * as graphql from '@opentelemetry/instrumentation-graphql';
import * as mysql2 from '@opentelemetry/instrumentation-mysql2';
import * as ioredis from '@opentelemetry/instrumentation-ioredis';
import { loadConfig } from '../src/kernel/config';
import { registerTracing } from '../src/telemetry';

const { operations } = loadConfig({ ...process.env, JWT_SECRET: 'bench-secret-bench-secret' });
registerTracing(
  { sdkTraceNode, exporter, resources, instrumentation, http, graphql, mysql2, ioredis },
  operations,
  'follow-feed-bench',
);
if (operations.otlpEndpoint)
  console.log(
    `tracing on: spans to ${operations.otlpEndpoint} (OTEL_TRACES_SAMPLER=${process.env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on'})`,
  );
