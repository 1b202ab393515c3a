/**
 * Query limits before execution (depth, cost, aliases, fragments, batches, body size and encoding), CSRF
 * prevention, and INTROSPECTION=off.
 */
import { gzipSync } from 'node:zlib';
import { getIntrospectionQuery } from 'graphql';
import { errorCode, ok, signUp, startTestApp, TestApp } from '../../support/harness';

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
    await rejected(
      '{ followFeed(first: 100) { edges { node { author { blogs(first: 100) { edges { node { title content } } } } } } } }',
      'cost',
    );
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
    const chunks = [
      JSON.stringify({ query: '{ viewer { id } }', variables: { pad: '' } }).slice(0, -3),
      'x'.repeat(120_000),
      '"}}',
    ];
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
      fetch(app.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        body,
      });
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
    const bomb = await post(
      gzipSync(Buffer.concat([query.subarray(0, -1), Buffer.alloc(1_000_000, ' '), Buffer.from('}')])),
      'gzip',
    );
    expect(bomb.status).toBe(413);
  });

  it('refuse a POST that is not JSON (CSRF prevention), naming why', async () => {
    const form = await fetch(app.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{ viewer { id } }',
    });
    expect(form.status).toBe(400);
    expect(await form.text()).toMatch(/CSRF|preflight/i);
  });

  it('keep CSRF prevention on: a simple GET without a preflight-forcing header is refused', async () => {
    const response = await fetch(`${app.url}?query=${encodeURIComponent('{ viewer { id } }')}`);
    expect(response.status).toBe(400);
    // The same GET with the header a browser cannot send without a preflight is served.
    const allowed = await fetch(`${app.url}?query=${encodeURIComponent('{ __typename }')}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
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
