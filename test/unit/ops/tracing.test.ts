/**
 * The hand-made spans (src/kernel/tracing.ts) under the SDK with an in-memory exporter: a
 * context stored as a traceparent (as on an outbox row, or in a chunk job's data) is continued
 * by a span made later from it, which parents the spans made inside it; a failure is recorded;
 * and with no SDK registered, nothing is traced and nothing is stored.
 */
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { currentTraceParent, inSpan } from '../../../src/kernel/tracing';

describe('without the SDK', () => {
  it('stores no context and makes no span', async () => {
    expect(currentTraceParent()).toBeNull();
    expect(await inSpan('fanout chunk', null, {}, async () => currentTraceParent())).toBeNull();
    expect(
      await inSpan('fanout chunk', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', {}, async () => 'ran'),
    ).toBe('ran');
  });
});

describe('with the SDK', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => provider.register());
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
  });
  beforeEach(() => exporter.reset());

  it("continues a stored traceparent: the dispatch under the publish, a chunk under the dispatch, the chunk's work under the chunk", async () => {
    const tracer = trace.getTracer('test');
    // The publish: its traceparent is what the outbox row keeps.
    const stored = tracer.startActiveSpan('publishBlog', (span) => {
      const traceparent = currentTraceParent();
      span.end();
      return traceparent;
    });
    expect(stored).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const publish = exporter.getFinishedSpans()[0];

    // Later, with nothing active: the dispatch continues it, and hands its own to a chunk job.
    expect(trace.getActiveSpan()).toBeUndefined();
    const chunkTrace = await inSpan('fanout dispatch', stored, { 'fanout.task_id': 7 }, async () =>
      currentTraceParent(),
    );
    await inSpan('fanout chunk', chunkTrace, { 'fanout.chunk': 1 }, async () => {
      tracer.startSpan('evalsha').end();
    });

    const spans = Object.fromEntries(exporter.getFinishedSpans().map((span) => [span.name, span]));
    const parentOf = (name: string) => spans[name].parentSpanContext?.spanId;
    expect(new Set(Object.values(spans).map((span) => span.spanContext().traceId))).toEqual(
      new Set([publish.spanContext().traceId]),
    );
    expect(parentOf('fanout dispatch')).toBe(publish.spanContext().spanId);
    expect(parentOf('fanout chunk')).toBe(spans['fanout dispatch'].spanContext().spanId);
    expect(parentOf('evalsha')).toBe(spans['fanout chunk'].spanContext().spanId);
    expect(spans['fanout dispatch'].attributes).toEqual({ 'fanout.task_id': 7 });
  });

  it('records a failure on the span and lets it through', async () => {
    await expect(
      inSpan('fanout chunk', null, {}, async () => {
        throw new Error('Redis went away');
      }),
    ).rejects.toThrow('Redis went away');
    const [span] = exporter.getFinishedSpans();
    expect(span.status).toMatchObject({ code: 2 });
    expect(span.events.map((event) => event.name)).toEqual(['exception']);
  });
});
