/**
 * Abuse and faults: query limits before execution, rate limits, CORS and CSRF, and the service
 * living through Redis and MySQL outages (a redis-server of the test's own, stopped; MySQL
 * behind a TCP proxy that the test cuts).
 */
import { gzipSync } from 'node:zlib';
import { getIntrospectionQuery } from 'graphql';
import { fromGlobalId } from '../../src/kernel/global-id';
import { errorCode, FEED_PAGE, follow, MYSQL_URL, ok, publish, scrollFeed, signUp, startTestApp, TestApp, testDatabase } from '../support/harness';
import { freePort, PrivateRedis, TcpProxy } from '../support/processes';

const FULL_PAGE = `{ followFeed(first: 100) { edges { cursor node {
  id title content images likeCount isLiked createdAt
  author { id nickName icon followerCount followingCount isFollowedByViewer } } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`;

describe('query limits', () => {
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    app = await startTestApp('limits');
    token = (await signUp(app, 'limited')).token;
  });
  afterAll(() => app.close());

  const rejected = async (query: string, limit: string) => {
    const response = await app.gql(query, {}, token);
    expect(response.status).toBe(400);
    expect(response.errors![0].extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit });
    expect(response.data).toBeUndefined();
  };

  it('let a full followFeed(first: 100) page with every field and the author through', async () => {
    const response = await app.gql(FULL_PAGE, {}, token);
    expect(response.status).toBe(200);
    expect(response.errors).toBeUndefined();
  });

  it('let the introspection query through (GraphiQL, code generators)', async () => {
    const response = await app.gql(getIntrospectionQuery());
    expect(response.errors).toBeUndefined();
    expect(response.data.__schema.queryType.name).toBe('Query');
  });

  it('reject a query nested too deep', async () => {
    const deep = `{ viewer { blogs { edges { node { author { blogs { edges { node { author { blogs { edges { cursor } } } } } } } } } } } }`;
    await rejected(deep, 'depth');
  });

  it('reject a connection of 100 inside a connection of 100', async () => {
    await rejected('{ followFeed(first: 100) { edges { node { author { blogs(first: 100) { edges { node { title content } } } } } } } }', 'cost');
  });

  it('reject too many aliases and too many root fields', async () => {
    const aliases = Array.from({ length: 31 }, (_, i) => `a${i}: nickName`).join(' ');
    await rejected(`{ viewer { ${aliases} } }`, 'aliases');
    const roots = Array.from({ length: 11 }, (_, i) => `v${i}: viewer { id }`).join(' ');
    await rejected(`{ ${roots} }`, 'rootFields');
  });

  it('refuse fragments that spread each other into millions of paths, measuring each fragment once', async () => {
    // Fi spreads F(i+1) twice: 2^levels paths. Expanding them all blocked the event loop for
    // 4.9 s at 24 levels and answered 500; each fragment is now measured once.
    const doubling = (levels: number) =>
      [
        'query Q { ...F0 }',
        ...Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`),
        `fragment F${levels} on Query { __typename viewer { id } }`,
      ].join('\n');
    for (const levels of [24, 24, 1000]) {
      await rejected(doubling(levels), 'nodes'); // the second 24 is answered from the verdict cache
    }
    // Under the node cap, the same shape passes.
    const small = await app.gql(doubling(5), {}, token);
    expect(small.status).toBe(200);
    expect(small.errors).toBeUndefined();
  });

  it('refuse batched operations and oversized bodies', async () => {
    const batch = await fetch(app.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ query: '{ viewer { id } }' }, { query: '{ viewer { id } }' }]),
    });
    expect(batch.status).toBe(400);
    const big = await app.gql('{ viewer { id } }', { pad: 'x'.repeat(150_000) });
    expect(big.status).toBe(413);
    // Streamed without a Content-Length: counted as it arrives, and refused the same way.
    const chunks = [JSON.stringify({ query: '{ viewer { id } }', variables: { pad: '' } }).slice(0, -3), 'x'.repeat(120_000), '"}}'];
    const streamed = await fetch(app.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
          controller.close();
        },
      }),
      duplex: 'half',
    });
    expect(streamed.status).toBe(413);
    expect(((await streamed.json()) as any).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    // ...and the server answers the next request normally.
    expect(ok(await app.gql('{ __typename }')).__typename).toBe('Query');
  });

  it('read gzip bodies, and refuse unknown encodings and corrupt ones', async () => {
    const post = (body: Uint8Array, encoding: string) =>
      fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body });
    const query = Buffer.from(JSON.stringify({ query: '{ __typename }' }));
    const zipped = await post(gzipSync(query), 'gzip');
    expect(await zipped.json()).toEqual({ data: { __typename: 'Query' } });
    const unknown = await post(query, 'compress');
    expect(unknown.status).toBe(415);
    expect(((await unknown.json()) as any).errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const corrupt = await post(query, 'gzip');
    expect(corrupt.status).toBe(400);
    expect(((await corrupt.json()) as any).errors[0].extensions.code).toBe('BAD_REQUEST');
    // A zip bomb is counted after decompression: 1 MB of spaces is a few kB compressed.
    const bomb = await post(gzipSync(Buffer.concat([query.subarray(0, -1), Buffer.alloc(1_000_000, ' '), Buffer.from('}')])), 'gzip');
    expect(bomb.status).toBe(413);
  });

  it('refuse a POST that is not JSON (CSRF prevention), naming why', async () => {
    const form = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{ viewer { id } }' });
    expect(form.status).toBe(400);
    expect(await form.text()).toMatch(/CSRF|preflight/i);
  });

  it('keep CSRF prevention on: a simple GET without a preflight-forcing header is refused', async () => {
    const response = await fetch(`${app.url}?query=${encodeURIComponent('{ viewer { id } }')}`);
    expect(response.status).toBe(400);
    // The same GET with the header a browser cannot send without a preflight is served.
    const allowed = await fetch(`${app.url}?query=${encodeURIComponent('{ __typename }')}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(await allowed.json()).toEqual({ data: { __typename: 'Query' } });
    expect(allowed.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('INTROSPECTION=off', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('introspection_off', { env: { INTROSPECTION: 'off' } });
  });
  afterAll(() => app.close());

  it('refuses introspection with GRAPHQL_VALIDATION_FAILED, and serves the rest', async () => {
    const response = await app.gql(getIntrospectionQuery());
    expect(response.status).toBe(400);
    expect(errorCode(response)).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(ok(await app.gql('{ viewer { id } }')).viewer).toBeNull();
  });
});

describe('rate limits', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('rate_limits', {
      env: {
        RATE_LIMITS: 'on',
        RATE_LIMIT_SIGNUP_PER_IP: '4/60',
        RATE_LIMIT_LOGIN_PER_NICKNAME: '3/60',
        RATE_LIMIT_PUBLISH_PER_USER: '2/60',
        RATE_LIMIT_LIKE_PER_USER: '3/60',
        CORS_ORIGINS: 'https://app.example',
      },
    });
  });
  afterAll(() => app.close());

  it('stop password guessing per nickName, with the seconds to wait', async () => {
    const victim = await signUp(app, 'victim');
    const guess = () => app.gql('mutation { login(nickName: "victim", password: "wrong-guess") { token } }');
    for (let i = 0; i < 3; i += 1) expect(errorCode(await guess())).toBe('UNAUTHENTICATED');
    const limited = await guess();
    expect(limited.errors![0].extensions).toMatchObject({ code: 'RATE_LIMITED', limit: 'loginPerNickName' });
    expect(limited.errors![0].extensions!.retryAfterSeconds).toBeGreaterThan(0);
    // The right password is refused too until the window passes: that is what stops guessing.
    expect(errorCode(await app.gql('mutation { login(nickName: "victim", password: "password-123") { token } }'))).toBe('RATE_LIMITED');
    expect(victim.token).toBeTruthy();
  });

  it('limit sign-ups per address, and publishing and liking per user, changing nothing when over', async () => {
    for (let i = 0; i < 3; i += 1) await signUp(app, `member${i}`);
    expect(errorCode(await app.gql('mutation { signUp(nickName: "one-too-many", password: "password-123") { token } }'))).toBe('RATE_LIMITED');
    const [{ n: users }] = await app.db.query("SELECT COUNT(*) AS n FROM tb_user WHERE nick_name = 'one-too-many'");
    expect(Number(users)).toBe(0);

    const author = await app.gql('mutation { login(nickName: "member0", password: "password-123") { token user { id } } }');
    const token = ok(author).login.token;
    const post = () => app.gql('mutation { publishBlog(input: { title: "t", content: "c" }) { id } }', {}, token);
    const first = ok(await post()).publishBlog.id;
    ok(await post());
    expect(errorCode(await post())).toBe('RATE_LIMITED');
    const [{ n: blogs }] = await app.db.query('SELECT COUNT(*) AS n FROM tb_blog');
    expect(Number(blogs)).toBe(2);
    const like = () => app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { likeCount } }', { b: first }, token);
    for (let i = 0; i < 3; i += 1) ok(await like());
    expect(errorCode(await like())).toBe('RATE_LIMITED');
  });

  it('allow browsers only from CORS_ORIGINS', async () => {
    const preflight = (origin: string) =>
      fetch(app.url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    expect((await preflight('https://app.example')).headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect((await preflight('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
    // The POST itself carries the same answer.
    const post = (origin: string) =>
      fetch(app.url, { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
    expect((await post('https://app.example')).headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect((await post('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('client addresses behind proxies', () => {
  // Sign-ups per client address: 2 a minute. The test's requests all come from 127.0.0.1.
  const limited = { RATE_LIMITS: 'on', RATE_LIMIT_SIGNUP_PER_IP: '2/60' };
  let untrusted: TestApp;
  let trusted: TestApp;
  beforeAll(async () => {
    untrusted = await startTestApp('proxies_untrusted', { env: { ...limited, TRUSTED_PROXIES: '10.9.9.9,2001:db8:9::/48' } });
    trusted = await startTestApp('proxies_trusted', { env: { ...limited, TRUSTED_PROXIES: '10.9.9.9,127.0.0.1/32,::1' } });
  });
  afterAll(async () => {
    await untrusted.close();
    await trusted.close();
  });

  let serial = 0;
  /** A sign-up sent with `forwardedFor` as X-Forwarded-For: its error code, or 'ok'. */
  const signUpVia = async (app: TestApp, forwardedFor: string): Promise<string> => {
    serial += 1;
    const response = await fetch(app.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
      body: JSON.stringify({ query: `mutation { signUp(nickName: "client${serial}", password: "password-123") { token } }` }),
    });
    const body = (await response.json()) as { errors?: Array<{ extensions: { code: string } }> };
    return body.errors ? body.errors[0].extensions.code : 'ok';
  };

  it('ignore X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    // Three made-up clients, one real peer: the third sign-up is over the peer's limit.
    expect(await signUpVia(untrusted, '198.51.100.1')).toBe('ok');
    expect(await signUpVia(untrusted, '198.51.100.2')).toBe('ok');
    expect(await signUpVia(untrusted, '198.51.100.3')).toBe('RATE_LIMITED');
  });

  it('count each client behind a trusted proxy, taking the right-most address that is not a trusted proxy', async () => {
    expect(await signUpVia(trusted, '203.0.113.5')).toBe('ok');
    expect(await signUpVia(trusted, '203.0.113.5')).toBe('ok');
    expect(await signUpVia(trusted, '203.0.113.5')).toBe('RATE_LIMITED');
    // Another client behind the same proxy has a limit of its own.
    expect(await signUpVia(trusted, '203.0.113.6')).toBe('ok');
    // What the client wrote left of the address the proxy appended changes nothing...
    expect(await signUpVia(trusted, '192.0.2.77, 203.0.113.5')).toBe('RATE_LIMITED');
    // ...and a trusted proxy's own hop is skipped: the client is the address before it.
    expect(await signUpVia(trusted, '203.0.113.5, 10.9.9.9')).toBe('RATE_LIMITED');
    expect(await signUpVia(trusted, '203.0.113.7, 10.9.9.9')).toBe('ok');
  });

  it('count IPv6 clients per /64', async () => {
    expect(await signUpVia(trusted, '2001:db8:1:2::a')).toBe('ok');
    expect(await signUpVia(trusted, '2001:db8:1:2:ffff:ffff:ffff:b')).toBe('ok');
    expect(await signUpVia(trusted, '2001:db8:1:2::c')).toBe('RATE_LIMITED'); // same /64
    expect(await signUpVia(trusted, '2001:db8:1:3::a')).toBe('ok'); // the next /64
    // An IPv4-mapped IPv6 address is its IPv4 client.
    expect(await signUpVia(trusted, '::ffff:203.0.113.6')).toBe('ok');
    expect(await signUpVia(trusted, '203.0.113.6')).toBe('RATE_LIMITED');
  });
});

describe('Redis down', () => {
  /** /readyz shows the details (Redis degraded) only to a bearer of METRICS_TOKEN. */
  const METRICS_TOKEN = 'redis-down-token-0123456789';
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort(), true);
    await redis.start();
    app = await startTestApp('redis_down', { env: { REDIS_URL: redis.url, RATE_LIMITS: 'on', FEED_MODEL: 'hybrid', METRICS_TOKEN } });
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it('serves feeds from MySQL, publishes, logs in, and reports degraded (still ready) until Redis is back', async () => {
    const author = await signUp(app, 'author');
    const reader = await signUp(app, 'reader');
    await follow(app, reader, author);
    const before = await publish(app, author, 'before');
    await app.services.fanout?.idle();
    await redis.stop();
    // Degraded, still ready: MySQL answers, and every request is served without Redis.
    const degraded = await fetch(app.url.replace('/graphql', '/readyz'), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(degraded.status).toBe(200);
    expect(await degraded.json()).toMatchObject({ status: 'ready', mysql: 'ok', redis: 'degraded' });
    // A load balancer sees only that the instance is ready.
    expect(await (await fetch(app.url.replace('/graphql', '/readyz'))).json()).toEqual({ status: 'ready' });
    expect((await fetch(app.url.replace('/graphql', '/healthz'))).status).toBe(200);
    const during = await publish(app, author, 'during');
    expect(await scrollFeed(app, reader, 1)).toEqual([during, before]);
    ok(await app.gql('mutation { login(nickName: "reader", password: "password-123") { token } }'));
    await redis.start();
    await app.services.fanout?.idle(60_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ready = await fetch(app.url.replace('/graphql', '/readyz'), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', mysql: 'ok', redis: 'ok' });
    expect(await scrollFeed(app, reader, 1)).toEqual([during, before]);
    expect(fromGlobalId(during).type).toBe('Blog');
  });
});

describe('MySQL unreachable while serving', () => {
  let proxy: TcpProxy;
  let app: TestApp;
  beforeAll(async () => {
    const mysql = new URL(MYSQL_URL);
    proxy = new TcpProxy(mysql.hostname, Number(mysql.port || 3306));
    await proxy.start();
    const behindProxy = new URL(MYSQL_URL);
    behindProxy.port = String(proxy.port);
    app = await startTestApp('mysql_down', { env: { DATABASE_URL: `${behindProxy.toString().replace(/\/$/, '')}/${testDatabase('mysql_down')}` } });
  });
  afterAll(async () => {
    await app.close();
    await proxy.stop();
  });

  it('answers SERVICE_UNAVAILABLE, stays up, and recovers by itself', async () => {
    const reader = await signUp(app, 'reader');
    proxy.block();
    const failed = await app.gql(FEED_PAGE, { first: 5 }, reader.token);
    expect(errorCode(failed)).toBe('SERVICE_UNAVAILABLE');
    expect(JSON.stringify(failed)).not.toContain('stacktrace');
    expect(errorCode(await app.gql('mutation { login(nickName: "reader", password: "password-123") { token } }'))).toBe('SERVICE_UNAVAILABLE');
    const notReady = await fetch(app.url.replace('/graphql', '/readyz'));
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ status: 'not ready' });
    proxy.unblock();
    ok(await app.gql(FEED_PAGE, { first: 5 }, reader.token));
    ok(await app.gql('mutation { login(nickName: "reader", password: "password-123") { token } }'));
    expect((await fetch(app.url.replace('/graphql', '/readyz'))).status).toBe(200);
  });
});
