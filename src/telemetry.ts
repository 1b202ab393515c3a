/**
 * Tracing (OpenTelemetry), for the entry points: off unless OTEL_EXPORTER_OTLP_ENDPOINT is set,
 * and then nothing of the SDK is even loaded (the API calls of kernel/tracing.ts stay no-ops).
 *
 * When on: the official Node SDK, spans batched and posted as OTLP/HTTP (JSON) to
 * <endpoint>/v1/traces, and the instrumentations of what a request passes through: node:http
 * (the request, with its incoming traceparent), graphql (parse, validate and execute), mysql2 (each statement, as written: with `?`, never the values) and
 * ioredis (each command by name, never its arguments; only inside a traced operation, so the
 * queue's idle polling makes no traces). The fan-out's jobs get hand-made spans that continue
 * the publish's trace across the outbox and BullMQ (kernel/tracing.ts, fanout/).
 *
 * The instrumentations patch modules as they are loaded: an entry point starts tracing before it
 * imports anything that loads http, graphql, mysql2 or ioredis (server.ts and worker.ts import
 * them dynamically, after this). The SDK reads its own standard variables too, e.g.
 * OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_SCHEDULE_DELAY and OTEL_EXPORTER_OTLP_HEADERS.
 */
import type { IncomingMessage } from 'node:http';
import { Context, context } from '@opentelemetry/api';
import type { OperationsSettings } from './kernel/config';

export interface Tracing {
  /** Sends the spans still batched, then stops (at shutdown). */
  shutdown(): Promise<void>;
}

const OFF: Tracing = { shutdown: async () => {} };

/** Paths of probes and scrapes: polled every few seconds, never worth a trace. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** The SDK's modules, loaded by startTracing only when tracing is on. */
export interface TracingSdk {
  sdkTraceNode: typeof import('@opentelemetry/sdk-trace-node');
  exporter: typeof import('@opentelemetry/exporter-trace-otlp-http');
  resources: typeof import('@opentelemetry/resources');
  instrumentation: typeof import('@opentelemetry/instrumentation');
  http: typeof import('@opentelemetry/instrumentation-http');
  graphql: typeof import('@opentelemetry/instrumentation-graphql');
  mysql2: typeof import('@opentelemetry/instrumentation-mysql2');
  ioredis: typeof import('@opentelemetry/instrumentation-ioredis');
}

type TracingSettings = Pick<OperationsSettings, 'otlpEndpoint' | 'serviceName'>;

export async function startTracing(settings: TracingSettings, defaultServiceName: string): Promise<Tracing> {
  if (!settings.otlpEndpoint) return OFF;
  const [sdkTraceNode, exporter, resources, instrumentation, http, graphql, mysql2, ioredis] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-graphql'),
    import('@opentelemetry/instrumentation-mysql2'),
    import('@opentelemetry/instrumentation-ioredis'),
  ]);
  return registerTracing(
    { sdkTraceNode, exporter, resources, instrumentation, http, graphql, mysql2, ioredis },
    settings,
    defaultServiceName,
  );
}

/**
 * The provider, exporter and instrumentations, registered globally. Exported for a process that
 * must register them synchronously, before its first import (the traced benchmark's preload).
 */
export function registerTracing(sdk: TracingSdk, settings: TracingSettings, defaultServiceName: string): Tracing {
  if (!settings.otlpEndpoint) return OFF;
  const provider = new sdk.sdkTraceNode.NodeTracerProvider({
    resource: sdk.resources.resourceFromAttributes({ 'service.name': settings.serviceName ?? defaultServiceName }),
    spanProcessors: [
      new sdk.sdkTraceNode.BatchSpanProcessor(
        new sdk.exporter.OTLPTraceExporter({ url: `${settings.otlpEndpoint}/v1/traces` }),
      ),
    ],
  });
  // The global tracer provider, W3C trace context propagation, and an AsyncLocalStorage context manager.
  provider.register();
  sdk.instrumentation.registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new sdk.http.HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.has((req.url ?? '').split('?', 1)[0]),
      }),
      // Parse, validate and execute, not each resolver: a span per field of a 20-edge page cost
      // more than the page itself (bench:feed); statements and commands hang under execute.
      new sdk.graphql.GraphQLInstrumentation({ ignoreResolveSpans: true, mergeItems: true }),
      // The statement as the stores wrote it: placeholders, no values (passwords, blog text).
      new sdk.mysql2.MySQL2Instrumentation({ maskStatement: true, maskStatementHook: (sql: string) => sql }),
      new sdk.ioredis.IORedisInstrumentation({
        requireParentSpan: true,
        dbStatementSerializer: (command: string) => command,
      }),
      // After the one above, so that it patches ioredis last: its sendCommand runs around theirs.
      redisCallersContext(sdk),
    ],
  });
  return { shutdown: () => provider.shutdown() };
}

/** What redisCallersContext patches: ioredis's module, its client and its pipeline. */
interface RedisModule {
  prototype: { sendCommand: (this: unknown, command: object, ...rest: unknown[]) => unknown };
  Pipeline: { prototype: { sendCommand: (this: unknown, command: object) => unknown } };
}

/**
 * Sends every Redis command in the context of the code that called it, so that its span hangs
 * under its caller's.
 *
 * The ioredis instrumentation starts a command's span when ioredis sends it, in the context active
 * then. The service's client auto-pipelines (redis/redis.client.ts): a command is queued, and the
 * queue is sent later, from a setImmediate scheduled by the first command of the tick, or from the
 * reply of the batch still in flight. Every command of a batch then took the context of whoever
 * queued its first one: a fan-out chunk's delivery sent beside the relay's timer, or queued while
 * an untraced command was in flight, was traced in another trace or (requireParentSpan) not at
 * all, and a page's commands could hang under another page's request. Here a command remembers
 * the context it was queued in (Pipeline.sendCommand, in the caller's turn), and is sent in it.
 */
function redisCallersContext(sdk: TracingSdk) {
  const { InstrumentationBase, InstrumentationNodeModuleDefinition } = sdk.instrumentation;
  class RedisCallersContext extends InstrumentationBase {
    constructor() {
      super('follow-feed-redis-callers-context', '1.0.0', {});
    }

    protected init() {
      return new InstrumentationNodeModuleDefinition('ioredis', ['>=5 <7'], (module: RedisModule) => {
        sendInCallersContext(module);
        return module;
      });
    }
  }
  return new RedisCallersContext();
}

function sendInCallersContext(module: RedisModule): void {
  const callers = new WeakMap<object, Context>();
  const queue = module.Pipeline.prototype.sendCommand;
  module.Pipeline.prototype.sendCommand = function (this: unknown, command: object) {
    callers.set(command, context.active());
    return queue.call(this, command);
  };
  const send = module.prototype.sendCommand;
  module.prototype.sendCommand = function (this: unknown, command: object, ...rest: unknown[]) {
    const caller = callers.get(command);
    return caller ? context.with(caller, () => send.call(this, command, ...rest)) : send.call(this, command, ...rest);
  };
}
