/**
 * Rate limits (logins, sign-ups, publishes, likes), CORS_ORIGINS, and how clients behind proxies are
 * counted (TRUSTED_PROXIES, IPv6 per /64).
 */
import { errorCode, ok, signUp, startTestApp, TestApp } from '../../support/harness';

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
    expect(errorCode(await app.gql('mutation { login(nickName: "victim", password: "password-123") { token } }'))).toBe(
      'RATE_LIMITED',
    );
    expect(victim.token).toBeTruthy();
  });

  it('limit sign-ups per address, and publishing and liking per user, changing nothing when over', async () => {
    for (let i = 0; i < 3; i += 1) await signUp(app, `member${i}`);
    expect(
      errorCode(await app.gql('mutation { signUp(nickName: "one-too-many", password: "password-123") { token } }')),
    ).toBe('RATE_LIMITED');
    const [{ n: users }] = await app.db.query("SELECT COUNT(*) AS n FROM tb_user WHERE nick_name = 'one-too-many'");
    expect(Number(users)).toBe(0);

    const author = await app.gql(
      'mutation { login(nickName: "member0", password: "password-123") { token user { id } } }',
    );
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
      fetch(app.url, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
    expect((await preflight('https://app.example')).headers.get('access-control-allow-origin')).toBe(
      'https://app.example',
    );
    expect((await preflight('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
    // The POST itself carries the same answer.
    const post = (origin: string) =>
      fetch(app.url, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
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
    untrusted = await startTestApp('proxies_untrusted', {
      env: { ...limited, TRUSTED_PROXIES: '10.9.9.9,2001:db8:9::/48' },
    });
    trusted = await startTestApp('proxies_trusted', {
      env: { ...limited, TRUSTED_PROXIES: '10.9.9.9,127.0.0.1/32,::1' },
    });
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
      body: JSON.stringify({
        query: `mutation { signUp(nickName: "client${serial}", password: "password-123") { token } }`,
      }),
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
