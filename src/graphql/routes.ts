/**
 * The HTTP routes beside POST /graphql (which skips Express, see http.ts): liveness and
 * readiness, Prometheus metrics, and the GraphiQL page with its bundle.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { Express } from 'express';
import type { Database } from '../db/database';
import { replicasOf } from '../db/replicas';
import type { Config } from '../kernel/config';
import type { Metrics } from '../kernel/observability';
import { hidePasswords } from '../kernel/redaction';
import { withTimeout } from '../kernel/timeout';
import { breakerOf } from '../redis/breaker';
import type { RedisClient } from '../redis/redis.client';

/** dist/graphiql, from dist/src/graphql (compiled) or src/graphql (ts-jest). */
const GRAPHIQL_DIR = join(
  __dirname,
  ...(__dirname.endsWith(join('dist', 'src', 'graphql')) ? ['..', '..'] : ['..', '..', 'dist']),
  'graphiql',
);

const GRAPHIQL_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>follow-feed GraphiQL</title>
  <link rel="stylesheet" href="/graphiql/app.css" />
  <style>body { margin: 0; } #graphiql { height: 100dvh; }</style>
</head>
<body>
  <div id="graphiql">Loading GraphiQL...</div>
  <script type="module" src="/graphiql/app.js"></script>
</body>
</html>
`;

/** How long /readyz waits for MySQL and Redis. */
const READY_TIMEOUT_MS = 1000;

export interface RouteDeps {
  config: Pick<Config, 'embedded' | 'metricsToken'>;
  db: Database;
  redis: RedisClient | null;
  metrics: Metrics;
}

export function createRoutes({ config, db, redis, metrics }: RouteDeps): Express {
  const app = express();
  // Liveness: the process answers. Readiness: it can reach its database and Redis (orchestrators
  // send traffic only to ready instances; a not-ready one still serves degraded feeds).
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // GraphiQL for a browser (Accept: text/html) at the API's own address; its bundle is served
  // from /graphiql (built by `npm run build`, no CDN). Clients posting JSON never see it.
  app.use('/graphiql', express.static(GRAPHIQL_DIR, { maxAge: '1h' }));
  app.get('/graphql', (req, res, next) => {
    if (req.accepts(['json', 'html']) !== 'html') return next();
    if (!existsSync(join(GRAPHIQL_DIR, 'app.js'))) {
      res.status(503).type('text').send('GraphiQL is not built: run `npm run build`.');
      return;
    }
    res.type('html').send(GRAPHIQL_PAGE);
  });
  const metricsAllowed = metricsAuthorization(config.metricsToken);
  const detailsAllowed = readinessDetailsAuthorization(config.metricsToken);
  app.get('/metrics', async (req, res) => {
    if (!metricsAllowed(req.headers.authorization)) {
      res
        .status(401)
        .set('www-authenticate', 'Bearer realm="metrics"')
        .type('text')
        .send('send METRICS_TOKEN as Authorization: Bearer <token>');
      return;
    }
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  // Ready means "can serve": MySQL answers. Redis only speeds things up (feeds fall back to MySQL,
  // rate limits to memory, fan-out waits in the outbox), so a Redis that is down or hangs makes
  // the instance "degraded", still 200: failing readiness then would take every instance out of
  // the load balancer at once for an outage they all ride out.
  // A load balancer needs the status alone; each store's state, the replicas (user@host) and
  // the raw errors go only to a bearer of METRICS_TOKEN, with every URL's password hidden.
  app.get('/readyz', async (req, res) => {
    const check = (name: string, probe: Promise<unknown>) =>
      withTimeout(probe, READY_TIMEOUT_MS, name).then(
        () => 'ok',
        (error: unknown) => String(error),
      );
    const database = config.embedded ? 'sqlite' : 'mysql';
    const [dbCheck, redisCheck] = await Promise.all([
      check(config.embedded ? 'SQLite' : 'MySQL', db.select('SELECT 1')),
      redis ? check('Redis', redis.ping()) : undefined,
    ]);
    const results: Record<string, unknown> = { [database]: dbCheck };
    if (redis) {
      const breaker = breakerOf(redis)?.state ?? 'closed';
      results.redis = redisCheck === 'ok' && breaker === 'closed' ? 'ok' : 'degraded';
      if (results.redis !== 'ok') results.redisError = redisCheck === 'ok' ? `circuit breaker ${breaker}` : redisCheck!;
    }
    // Replicas only take reads off the primary: one lagging or down is skipped (its reads go to
    // the primary), so it is shown here but never makes the instance unready.
    const replicas = replicasOf(db);
    if (replicas) results.replicas = replicas.replicaStatuses();
    const ready = dbCheck === 'ok';
    const status = { status: ready ? 'ready' : 'not ready' };
    res.status(ready ? 200 : 503);
    if (!detailsAllowed(req.headers.authorization)) return void res.json(status);
    res.type('json').send(hidePasswords(JSON.stringify({ ...status, ...results })));
  });
  return app;
}

/** Whether an Authorization header may read /readyz's details: only `Bearer <METRICS_TOKEN>`, never without the token set. */
function readinessDetailsAuthorization(token: string | null): (header: string | undefined) => boolean {
  if (token === null) return () => false;
  return metricsAuthorization(token);
}

/**
 * Whether an Authorization header may read /metrics: anyone without METRICS_TOKEN, else only
 * `Bearer <METRICS_TOKEN>`. Both sides are hashed first so that timingSafeEqual compares equal
 * lengths, and the time taken says nothing about how much of a guess was right.
 */
function metricsAuthorization(token: string | null): (header: string | undefined) => boolean {
  if (token === null) return () => true;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  // The scheme is case-insensitive (RFC 9110); the token is not.
  return (header) => timingSafeEqual(digest(/^bearer +(.+)$/i.exec(header ?? '')?.[1] ?? ''), expected);
}
