/**
 * Spans made by hand, where no instrumentation sees the work: a trace's context carried where
 * no async context flows (an outbox row, a queue job), and the fan-out jobs that continue a
 * publish in another process.
 *
 * Only OpenTelemetry's API is used here: without the SDK (src/telemetry.ts starts it when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set) every call is a no-op that allocates nothing
 * (the API's non-recording span, no context manager, no propagator).
 */
import { Attributes, context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/** The tracer of the service's own spans. */
const TRACER_NAME = 'follow-feed';

/**
 * The active span's context as a W3C traceparent ("00-<trace id>-<span id>-<flags>", 55
 * characters), to store beside work that continues elsewhere; null when nothing is traced.
 */
export function currentTraceParent(): string | null {
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/**
 * Runs `work` in a span named `name`, a child of `parent` (a traceparent stored by
 * currentTraceParent, in another process or long ago), else of the active span. The span ends
 * when `work` settles and records its error.
 */
export function inSpan<T>(
  name: string,
  parent: string | null | undefined,
  attributes: Attributes,
  work: () => Promise<T>,
): Promise<T> {
  const parentContext = parent ? propagation.extract(ROOT_CONTEXT, { traceparent: parent }) : context.active();
  return trace
    .getTracer(TRACER_NAME)
    .startActiveSpan(name, { kind: SpanKind.CONSUMER, attributes }, parentContext, async (span) => {
      try {
        return await work();
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    });
}
