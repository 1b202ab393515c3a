/**
 * The fan-out worker process loads the domain and the stores only: no Apollo, no Express, no
 * GraphQL resolver or API module. Checked on the real entry point (dist/src/worker.js) from the
 * modules it had loaded when it exited, beside the API server as the control that the check
 * sees those modules when they are there. And the other way round: every production
 * dependency is loaded by the service (what the image ships, it uses).
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  follow,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TEST_JWT_SECRET,
  TestApp,
  testDatabase,
} from '../../support/harness';
import { OtlpReceiver, startOtlpReceiver } from '../../support/otlp-receiver';
import { freePort, startNodeProcess, waitFor } from '../../support/processes';

const PRELOAD = join(__dirname, '..', '..', 'support', 'report-loaded-modules.cjs');

/** Loaded files that belong to the API layer or its libraries. */
function apiModules(loaded: string[]): string[] {
  return loaded.filter(
    (file) =>
      /node_modules\/(@apollo\/server|express|cors|graphql-ws|ws)\//.test(file) ||
      /dist\/src\/graphql\//.test(file) ||
      /\.resolver\.js$/.test(file),
  );
}

/** Runs `script` until `ready` appears in its output, stops it with SIGTERM, and returns the files it had loaded. */
async function loadedBy(
  script: string,
  env: Record<string, string>,
  ready: string,
  whileRunning: () => Promise<void> = async () => {},
): Promise<string[]> {
  const report = join(tmpdir(), `feed-loaded-${process.pid}-${script}.json`);
  const child = startNodeProcess(script, {
    ...env,
    NODE_OPTIONS: `--require ${PRELOAD}`,
    REPORT_LOADED_MODULES: report,
  });
  try {
    await waitFor(`${script} to start`, async () => child.output().includes(ready), 30_000);
    await whileRunning();
  } finally {
    // Its output with the exit code when it is not 0: what the process said before it died.
    const code = await child.kill('SIGTERM');
    expect({ code, output: code === 0 ? '' : child.output() }).toEqual({ code: 0, output: '' });
  }
  return JSON.parse(readFileSync(report, 'utf8')) as string[];
}

describe('the worker process', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('worker_process', { env: { FANOUT_WORKERS: '0', FEED_MODEL: 'push' } });
  });
  afterAll(() => app.close());

  it('fans out without loading Apollo, Express or any resolver', async () => {
    const loaded = await loadedBy('worker.js', app.env, 'fan-out worker running', async () => {
      // It does its job: a blog reaches a follower's inbox through this process.
      const [reader, author] = [await signUp(app, 'reader'), await signUp(app, 'author')];
      await follow(app, reader, author);
      const id = await publish(app, author, 'through the worker process');
      await app.services.fanout?.idle(30_000);
      expect(await scrollFeed(app, reader, 10)).toEqual([id]);
    });
    expect(loaded.some((file) => file.endsWith(join('dist', 'src', 'fanout', 'fanout.worker.js')))).toBe(true);
    expect(apiModules(loaded)).toEqual([]);
  });

  it('while the API server does load them (the check sees them when they are there)', async () => {
    const env = { ...app.env, PORT: String(await freePort()), NODE_ENV: 'production' };
    const loaded = await loadedBy('server.js', env, 'follow-feed listening');
    expect(apiModules(loaded)).toEqual(
      expect.arrayContaining([expect.stringMatching(/@apollo\/server/), expect.stringMatching(/\.resolver\.js$/)]),
    );
  });
});

/** The packages (node_modules/<name> or node_modules/@scope/<name>, outermost) that loaded files belong to. */
function packagesOf(loaded: string[]): Set<string> {
  return new Set(
    loaded
      .map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1])
      .filter((name): name is string => name !== undefined),
  );
}

describe('production dependencies', () => {
  let app: TestApp;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    app = await startTestApp('dependencies', { env: { FEED_MODEL: 'push' } });
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    await app.close();
    await receiver.close();
  });

  it('are each loaded by the service: on MySQL and Redis with tracing on, and in the embedded mode (npm ls --omit=dev holds nothing else)', async () => {
    const traced = {
      ...app.env,
      PORT: String(await freePort()),
      NODE_ENV: 'production',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    };
    const embeddedFile = join(tmpdir(), `${testDatabase('dependencies')}.sqlite`);
    rmSync(embeddedFile, { force: true });
    const embedded = {
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      EMBEDDED_DB_FILE: embeddedFile,
      JWT_SECRET: TEST_JWT_SECRET,
    };
    const loaded = new Set([
      ...packagesOf(await loadedBy('server.js', traced, 'follow-feed listening')),
      ...packagesOf(await loadedBy('server.js', embedded, 'follow-feed listening')),
    ]);
    rmSync(embeddedFile, { force: true });
    const production = Object.keys(
      (
        JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
          dependencies: Record<string, string>;
        }
      ).dependencies,
    );
    expect(production.filter((name) => !loaded.has(name))).toEqual([]);
    // The GraphiQL page's libraries are bundled at build time, never loaded.
    expect(
      [...loaded].filter((name) => /^(graphiql|react|react-dom|monaco-editor|monaco-graphql)$/.test(name)),
    ).toEqual([]);
  });
});
