/**
 * `node dist/bench/otlp-sink.js [port]` (default 4318): a collector that accepts OTLP/HTTP trace
 * exports and drops them, so that a traced benchmark (bench/tracing.preload.ts) pays for
 * making and sending its spans, not for storing them. Prints what it received each 10 s.
 */
import http from 'node:http';

const port = Number(process.argv[2] ?? 4318);
let requests = 0;
let bytes = 0;
let spans = 0;

http
  .createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests += 1;
      bytes += body.length;
      // The exporter's OTLP/JSON: count the spans without keeping them.
      spans += body.toString('utf8').split('"spanId"').length - 1;
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`OTLP sink on http://127.0.0.1:${port}`));

setInterval(
  () => console.log(`received ${requests} exports, ${spans} spans, ${(bytes / 1e6).toFixed(1)} MB`),
  10_000,
).unref();
