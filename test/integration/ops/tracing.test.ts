/**
 * Tracing end to end, on the real processes as deployed (node dist/src/server.js and
 * worker.js, OpenTelemetry on, exporting to an OTLP receiver that keeps the spans in memory,
 * test/support/otlp-receiver.ts): the caller's traceparent is honoured; a publish is one trace
 * from the HTTP request through GraphQL and its SQL statements and Redis commands, across the
 * outbox and BullMQ into the worker process's dispatch and every chunk job, each with the
 * statements and commands it ran; a feed page is one trace of its statements and commands.
 *
 * Real processes, not the app in Jest's process: the instrumentations patch modules as Node's
 * own loader loads them, which Jest's module registry bypasses.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FEED_PAGE, follow, REDIS_URL, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';
import { OtlpReceiver, ReceivedSpan, startOtlpReceiver } from '../../support/otlp-receiver';
import { freePort, startNodeProcess, startWorkerProcess, waitFor, WorkerProcess } from '../../support/processes';

const READERS = 5;
/** Two readers a chunk: three chunk jobs. */
const CHUNK_SIZE = 2;
const TITLE = 'a title that must appear in no span';
const SERVER = 2;

let receiver: OtlpReceiver;
let app: TestApp;
let server: WorkerProcess;
let worker: WorkerProcess;
let url: string;
let author: TestUser;
let readers: TestUser[];

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** POSTs an operation to the traced server with a traceparent of the caller's own; returns its trace and span ids. */
async function tracedPost(
  query: string,
  variables: Record<string, unknown>,
  token: string,
): Promise<{ traceId: string; callerSpanId: string; body: any }> {
  const traceId = hex(16);
  const callerSpanId = hex(8);
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
      traceparent: `00-${traceId}-${callerSpanId}-01`,
    },
    body: JSON.stringify({ query, variables }),
  });
  return { traceId, callerSpanId, body: await response.json() };
}

/** The database a span talked to (the instrumentations write the old or the new semantic-convention name). */
function systemOf(span: ReceivedSpan): string {
  return String(span.attributes['db.system'] ?? span.attributes['db.system.name'] ?? '');
}

function statementOf(span: ReceivedSpan): string {
  return String(span.attributes['db.query.text'] ?? span.attributes['db.statement'] ?? '');
}

/** Whether `span` lies under `ancestor` by parent links among the received spans. */
function under(span: ReceivedSpan, ancestor: ReceivedSpan, byId: Map<string, ReceivedSpan>): boolean {
  for (let parent = byId.get(span.parentSpanId); parent; parent = byId.get(parent.parentSpanId))
    if (parent.spanId === ancestor.spanId) return true;
  return false;
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // Users and follows through the untraced in-process app; the fan-out runs in the worker process.
  app = await startTestApp('tracing', { env: { FANOUT_WORKERS: '0', FEED_MODEL: 'push' } });
  author = await signUp(app, 'author');
  readers = [];
  for (let i = 0; i < READERS; i += 1) {
    const reader = await signUp(app, `reader${i}`);
    await follow(app, reader, author);
    readers.push(reader);
  }
  const traced = { ...app.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' };
  const port = await freePort();
  url = `http://127.0.0.1:${port}/graphql`;
  server = startNodeProcess('server.js', {
    ...traced,
    PORT: String(port),
    NODE_ENV: 'production',
    FANOUT_WORKERS: '0',
  });
  // One job at a time: ioredis pipelines the commands of one tick together, and a command sent
  // in another chunk's pipeline would be traced under that chunk.
  worker = startWorkerProcess({
    ...traced,
    NODE_ENV: 'production',
    FANOUT_CHUNK_SIZE: String(CHUNK_SIZE),
    FANOUT_CONCURRENCY: '1',
  });
  await waitFor('the traced server', async () => server.output().includes('follow-feed listening'), 30_000);
  await waitFor('the traced worker', async () => worker.output().includes('probes and metrics on'), 30_000);
}, 60_000);

afterAll(async () => {
  await server?.kill('SIGKILL');
  await worker?.kill('SIGKILL');
  await app?.close();
  await receiver?.close();
});

test('one trace follows a publish into every chunk that delivers it, and a feed page into its SQL statements and Redis commands', async () => {
  const publish = await tracedPost(
    'mutation($input: PublishBlogInput!) { publishBlog(input: $input) { id } }',
    { input: { title: TITLE, content: 'body' } },
    author.token,
  );
  expect(publish.body.errors).toBeUndefined();
  await app.services.fanout!.idle(30_000);
  const page = await tracedPost(FEED_PAGE, { first: 10 }, readers[0].token);
  expect(page.body.data.followFeed.edges.map((edge: any) => edge.node.title)).toEqual([TITLE]);
  // SIGTERM: each process sends what its exporter still holds, then exits.
  expect(await server.kill('SIGTERM')).toBe(0);
  expect(await worker.kill('SIGTERM')).toBe(0);

  const byId = new Map(receiver.spans.map((span) => [span.spanId, span]));
  const trace = receiver.spans.filter((span) => span.traceId === publish.traceId);
  const api = trace.filter((span) => span.service === 'follow-feed-api');
  const request = api.find((span) => span.kind === SERVER);
  // The request continues the caller's trace.
  expect(request).toMatchObject({ parentSpanId: publish.callerSpanId });
  const inRequest = (span: ReceivedSpan) => under(span, request!, byId);
  // GraphQL's phases (the execution span is named after the operation's type); no span per resolver.
  expect(api.filter(inRequest).map((span) => span.name)).toEqual(
    expect.arrayContaining(['graphql.parse', 'graphql.validate', 'mutation']),
  );
  expect(api.filter((span) => span.name.startsWith('graphql.resolve'))).toEqual([]);
  const statements = api.filter((span) => systemOf(span) === 'mysql');
  expect(statements.filter(inRequest).map(statementOf)).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^INSERT INTO tb_blog/),
      expect.stringMatching(/^\s*INSERT INTO tb_fanout_task/),
    ]),
  );
  expect(api.some((span) => systemOf(span) === 'redis' && inRequest(span))).toBe(true);

  // Across the outbox row and BullMQ, in the worker process: the dispatch under the request, every chunk under the dispatch.
  const workerSpans = trace.filter((span) => span.service === 'follow-feed-worker');
  const dispatches = workerSpans.filter((span) => span.name === 'fanout dispatch');
  expect(dispatches).toHaveLength(1);
  const [dispatch] = dispatches;
  expect(inRequest(dispatch)).toBe(true);
  expect(dispatch.attributes).toMatchObject({ 'fanout.kind': 'deliver' });
  const chunks = workerSpans.filter((span) => span.name === 'fanout chunk');
  expect(chunks.map((chunk) => chunk.attributes['fanout.chunk']).sort()).toEqual([1, 2, 3]);
  expect(chunks.map((chunk) => chunk.attributes['fanout.readers']).reduce((sum, n) => Number(sum) + Number(n), 0)).toBe(
    READERS,
  );
  for (const chunk of chunks) {
    expect(chunk.parentSpanId).toBe(dispatch.spanId);
    const inside = workerSpans.filter((span) => under(span, chunk, byId));
    // Its inbox writes (the delivery script) and its bookkeeping in MySQL.
    expect(inside.some((span) => systemOf(span) === 'redis')).toBe(true);
    expect(inside.some((span) => /tb_fanout_chunk/.test(statementOf(span)))).toBe(true);
  }

  // A feed page: its statements and commands under its request.
  const pageSpans = receiver.spans.filter((span) => span.traceId === page.traceId);
  const pageRequest = pageSpans.find((span) => span.kind === SERVER)!;
  expect(pageRequest.parentSpanId).toBe(page.callerSpanId);
  const pageWork = pageSpans.filter((span) => under(span, pageRequest, byId));
  expect(pageWork.some((span) => systemOf(span) === 'redis')).toBe(true);
  expect(pageWork.some((span) => /tb_blog/.test(statementOf(span)))).toBe(true);

  // Statements as written, with placeholders: no value reaches a span.
  expect(JSON.stringify(receiver.spans)).not.toContain(TITLE);
  // Probes and scrapes make no traces.
  expect(
    receiver.spans.some((span) =>
      /readyz|healthz|metrics/.test(String(span.attributes['url.path'] ?? span.attributes['http.target'] ?? '')),
    ),
  ).toBe(false);
});

test("every Redis command hangs under its caller's span, whatever it was auto-pipelined with", async () => {
  // test/support/redis-callers.cjs: traced callers' commands queued beside untraced ones, in one
  // batch or behind one in flight (what a worker's chunk meets beside its relay and purger).
  await promisify(execFile)(process.execPath, [join(__dirname, '..', '..', 'support', 'redis-callers.cjs')], {
    env: {
      PATH: process.env.PATH ?? '',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      REDIS_URL,
      KEY: `test:tracing:${hex(4)}`,
    },
  });
  const spans = receiver.spans.filter((span) => span.service === 'redis-callers');
  const commandsUnder = (name: string) => {
    const caller = spans.find((span) => span.name === name);
    expect(caller).toBeDefined();
    return spans.filter((span) => span.parentSpanId === caller!.spanId && systemOf(span) === 'redis').map(statementOf);
  };
  expect({
    afterUntraced: commandsUnder('after-untraced'),
    first: commandsUnder('first'),
    second: commandsUnder('second'),
    whileInFlight: commandsUnder('while-in-flight'),
  }).toEqual({ afterUntraced: ['get'], first: ['get'], second: ['exists'], whileInFlight: ['get'] });
  // The untraced commands made no spans (requireParentSpan): only the callers' four.
  expect(spans.filter((span) => systemOf(span) === 'redis')).toHaveLength(4);
});
