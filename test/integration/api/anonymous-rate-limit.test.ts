/**
 * RATE_LIMIT_ANONYMOUS_PER_IP: requests without a valid token are counted per client address;
 * over the limit the whole request is refused with HTTP 429, Retry-After and RATE_LIMITED.
 * Behind a trusted proxy (127.0.0.1 here) each test is its own client address (X-Forwarded-For).
 */
import { startTestApp, TestApp } from '../../support/harness';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('anonymous_rate', {
    env: {
      RATE_LIMITS: 'on',
      RATE_LIMIT_ANONYMOUS_PER_IP: '5/60',
      RATE_LIMIT_PUBLISH_PER_USER: '1/60',
      TRUSTED_PROXIES: '127.0.0.1',
    },
  });
});
afterAll(() => app.close());

const post = async (address: string, query: string, authorization?: string, variables?: Record<string, unknown>) => {
  const response = await fetch(app.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-forwarded-for': address,
      ...(authorization ? { authorization } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as any,
  };
};

it('refuses the sixth anonymous request from one address with 429, Retry-After and RATE_LIMITED, GET requests counted too', async () => {
  for (let i = 0; i < 4; i += 1) expect((await post('203.0.113.1', '{ __typename }')).status).toBe(200);
  const viaGet = await fetch(`${app.url}?query=${encodeURIComponent('{ __typename }')}`, {
    headers: { 'apollo-require-preflight': 'true', 'x-forwarded-for': '203.0.113.1' },
  });
  expect(viaGet.status).toBe(200);
  const refused = await post('203.0.113.1', '{ __typename }');
  expect(refused.status).toBe(429);
  expect(Number(refused.retryAfter)).toBeGreaterThan(0);
  expect(refused.body.data).toBeUndefined();
  expect(refused.body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', limit: 'anonymousPerIp' });
  expect(refused.body.errors[0].extensions.retryAfterSeconds).toBe(Number(refused.retryAfter));
  // Another address is counted on its own.
  expect((await post('203.0.113.2', '{ __typename }')).status).toBe(200);
});

it('counts a request whose token is not valid as anonymous', async () => {
  for (let i = 0; i < 5; i += 1) await post('203.0.113.3', '{ __typename }', 'Bearer not-a-token');
  expect((await post('203.0.113.3', '{ __typename }', 'Bearer not-a-token')).status).toBe(429);
});

it('does not count signed-in requests', async () => {
  const signUp = await post(
    '203.0.113.4',
    'mutation { signUp(nickName: "counted", password: "password-123") { token } }',
  );
  const token = signUp.body.data.signUp.token as string;
  for (let i = 0; i < 10; i += 1)
    expect((await post('203.0.113.4', '{ viewer { nickName } }', `Bearer ${token}`)).status).toBe(200);
  // The sign-up was the address's one anonymous request so far: four more pass.
  for (let i = 0; i < 4; i += 1) expect((await post('203.0.113.4', '{ __typename }')).status).toBe(200);
  expect((await post('203.0.113.4', '{ __typename }')).status).toBe(429);
});

it('answers 429 with Retry-After to a signed-in request that a per-user limit refused whole, and 200 while it is not over', async () => {
  const signUp = await post(
    '203.0.113.5',
    'mutation { signUp(nickName: "publisher", password: "password-123") { token } }',
  );
  const token = `Bearer ${signUp.body.data.signUp.token as string}`;
  const publish = 'mutation { publishBlogEdge(input: {title: "t", content: "c"}) { cursor } }';
  expect((await post('203.0.113.5', publish, token)).status).toBe(200);
  const refused = await post('203.0.113.5', publish, token);
  expect(refused.status).toBe(429);
  expect(refused.body.data).toBeNull();
  expect(refused.body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', limit: 'publishPerUser' });
  expect(Number(refused.retryAfter)).toBe(refused.body.errors[0].extensions.retryAfterSeconds);
  // A request refused for another reason (an id this API did not issue) keeps its 200.
  const mixed = await post('203.0.113.5', 'mutation { a: likeBlog(blogId: "bad") { id } }', token);
  expect(mixed.status).toBe(200);
});
