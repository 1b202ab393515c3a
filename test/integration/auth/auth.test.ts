/**
 * Integration tests of sign-up, login and access tokens over the real app (MariaDB + Redis):
 * the input rules, the stored password form, every way a token can be wrong, and what error
 * responses reveal (no stack traces for errors the client caused, in any mode).
 *
 * Every bad input must get a GraphQL error with extensions.code, change nothing, and leave the
 * server serving: `expectServing()` runs a normal query after each group of bad inputs.
 */
import jwt from 'jsonwebtoken';
import { randomBytes, scryptSync } from 'node:crypto';
import {
  errorCode,
  GqlResponse,
  ok,
  signUp,
  startTestApp,
  TEST_JWT_SECRET,
  TestApp,
  TestUser,
} from '../../support/harness';

const SIGN_UP =
  'mutation($n: String!, $p: String!) { signUp(nickName: $n, password: $p) { token user { id nickName } } }';
const LOGIN = 'mutation($n: String!, $p: String!) { login(nickName: $n, password: $p) { token user { id nickName } } }';
const VIEWER = '{ viewer { id nickName } }';
const FEED = 'query($first: Int, $after: String) { followFeed(first: $first, after: $after) { edges { cursor } } }';
const PUBLISH = 'mutation($i: PublishBlogInput!) { publishBlog(input: $i) { id } }';
const LOGOUT = 'mutation { logout }';
const LOGOUT_EVERYWHERE = 'mutation { logoutEverywhere }';

let app: TestApp;
/** A user whose token must keep working after every bad input. */
let probe: TestUser;

beforeAll(async () => {
  app = await startTestApp('auth');
  probe = await signUp(app, 'probe');
});

afterAll(async () => {
  await app?.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers.

async function count(table: 'tb_user' | 'tb_blog', target: TestApp = app): Promise<number> {
  const [row] = await target.query(`SELECT COUNT(*) AS n FROM ${table}`);
  return Number(row.n);
}

/** A request with an arbitrary Authorization header (the harness only sends "Bearer <token>"). */
async function gqlWithAuthorization(
  authorization: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<GqlResponse> {
  const response = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, ...((await response.json()) as object) };
}

/** The response failed with exactly one error of this code (and this extensions.field, or none). */
function expectError(response: GqlResponse, code: string, field?: string): void {
  errorCode(response); // fails with the whole response when there is no error at all
  expect(response.errors!.map((e) => ({ code: e.extensions?.code, field: e.extensions?.field }))).toEqual([
    { code, field },
  ]);
}

/** A normal query still works: the server survived the bad input before it. */
async function expectServing(target: TestApp = app, user: TestUser = probe): Promise<void> {
  const data = ok(await target.gql(VIEWER, {}, user.token));
  expect(data.viewer).toEqual({ id: user.id, nickName: user.nickName });
}

/** The database id inside a global id ("User:42" in base64). */
function dbIdOf(globalId: string): string {
  const [type, id] = Buffer.from(globalId, 'base64').toString('utf8').split(':');
  expect(type).toBe('User');
  return id;
}

// ---------------------------------------------------------------------------------------------

describe('signUp and viewer', () => {
  it('signUp returns a token and the user; viewer with that token is the same user', async () => {
    const response = await app.gql(SIGN_UP, { n: 'alice', p: 'alice-password' });
    const { signUp: payload } = ok(response);
    expect(typeof payload.token).toBe('string');
    expect(payload.token.split('.')).toHaveLength(3);
    expect(payload.user.nickName).toBe('alice');
    expect(dbIdOf(payload.user.id)).toMatch(/^[1-9]\d*$/);

    const { viewer } = ok(await app.gql(VIEWER, {}, payload.token));
    expect(viewer).toEqual(payload.user);
  });

  it('viewer without a token is null', async () => {
    const response = await app.gql(VIEWER);
    expect(response.errors).toBeUndefined();
    expect(response.data).toEqual({ viewer: null });
  });

  it('stores the password as a scrypt hash, never the password itself', async () => {
    const password = 'hash-me-please-123';
    const user = await signUp(app, 'hashed', password);
    const rows = await app.query('SELECT password FROM tb_user WHERE id = ?', [dbIdOf(user.id)]);
    expect(rows).toHaveLength(1);
    const stored: string = rows[0].password;
    expect(stored.startsWith('scrypt$')).toBe(true);
    expect(stored).not.toContain(password);
    // Two users with the same password get different hashes (a random salt each).
    const twin = await signUp(app, 'hashed-twin', password);
    const [twinRow] = await app.query('SELECT password FROM tb_user WHERE id = ?', [dbIdOf(twin.id)]);
    expect(twinRow.password).not.toBe(stored);
  });

  it('accepts a nickName and passwords exactly at their limits', async () => {
    const nickName = '表'.repeat(32);
    const atMin = await signUp(app, nickName, 'p'.repeat(8));
    expect(atMin.nickName).toBe(nickName);
    ok(await app.gql(LOGIN, { n: nickName, p: 'p'.repeat(8) }));

    const longPassword = 'P'.repeat(256);
    const atMax = await signUp(app, 'max-password', longPassword);
    const { login } = ok(await app.gql(LOGIN, { n: 'max-password', p: longPassword }));
    expect(login.user.id).toBe(atMax.id);
  });
});

describe('login', () => {
  let bob: TestUser;
  const password = 'bob-correct-password';

  beforeAll(async () => {
    bob = await signUp(app, 'bob', password);
  });

  it('works with the right password, and its token works for viewer', async () => {
    const { login } = ok(await app.gql(LOGIN, { n: 'bob', p: password }));
    expect(login.user).toEqual({ id: bob.id, nickName: 'bob' });
    const { viewer } = ok(await app.gql(VIEWER, {}, login.token));
    expect(viewer).toEqual({ id: bob.id, nickName: 'bob' });
  });

  it('a wrong password and an unknown nickName are both UNAUTHENTICATED with the same message', async () => {
    const wrongPassword = await app.gql(LOGIN, { n: 'bob', p: 'not-the-password' });
    expectError(wrongPassword, 'UNAUTHENTICATED');
    expect(wrongPassword.data ?? null).toBeNull();

    const unknownUser = await app.gql(LOGIN, { n: 'nobody-has-this-name', p: password });
    expectError(unknownUser, 'UNAUTHENTICATED');
    expect(unknownUser.errors![0].message).toBe(wrongPassword.errors![0].message);

    // Too long to be a real nickName or password: still the same answer, not a validation error.
    const tooLong = await app.gql(LOGIN, { n: 'b'.repeat(33), p: 'x'.repeat(300) });
    expectError(tooLong, 'UNAUTHENTICATED');
    expect(tooLong.errors![0].message).toBe(wrongPassword.errors![0].message);

    await expectServing();
  });
});

describe('password hashes', () => {
  /** A scrypt hash in the stored form, made with the given parameters. */
  function scryptHash(password: string, n: number, r: number): string {
    const salt = randomBytes(16);
    const key = scryptSync(password, salt, 64, { N: n, r, p: 1, maxmem: 256 * n * r + 1024 * 1024 });
    return ['scrypt', n, r, 1, salt.toString('base64'), key.toString('base64')].join('$');
  }
  const storedHash = async (user: TestUser): Promise<string> =>
    (await app.query('SELECT password FROM tb_user WHERE id = ?', [dbIdOf(user.id)]))[0].password;

  it('are made with the configured cost (PASSWORD_HASH_COST), r = 8, p = 1', async () => {
    const user = await signUp(app, 'cost-check', 'cost-check-password');
    expect((await storedHash(user)).split('$').slice(0, 4)).toEqual([
      'scrypt',
      String(app.config.passwordHashCost),
      '8',
      '1',
    ]);
  });

  it.each([
    ['a lower N', 512, 8],
    ['a smaller block size r', 1024, 4],
  ])('made with weaker parameters (%s) are upgraded at the next login, which keeps working', async (_label, n, r) => {
    const password = 'upgrade-me-please';
    const user = await signUp(app, `weak-${n}-${r}`, password);
    const weak = scryptHash(password, n, r);
    await app.db.write('UPDATE tb_user SET password = ? WHERE id = ?', [weak, dbIdOf(user.id)]);
    // A wrong password changes nothing.
    expectError(await app.gql(LOGIN, { n: user.nickName, p: 'not-the-password' }), 'UNAUTHENTICATED');
    expect(await storedHash(user)).toBe(weak);

    const { login } = ok(await app.gql(LOGIN, { n: user.nickName, p: password }));
    expect(login.user.id).toBe(user.id);
    const upgraded = await storedHash(user);
    expect(upgraded.split('$').slice(0, 4)).toEqual(['scrypt', String(app.config.passwordHashCost), '8', '1']);
    expect(upgraded).not.toContain(password);
    // The new hash verifies the same password, and only it.
    ok(await app.gql(LOGIN, { n: user.nickName, p: password }));
    expect(await storedHash(user)).toBe(upgraded);
    expectError(await app.gql(LOGIN, { n: user.nickName, p: `${password}!` }), 'UNAUTHENTICATED');
  });
});

describe('sessions', () => {
  const sessionOf = async (nickName: string, password: string): Promise<string> =>
    ok(await app.gql(LOGIN, { n: nickName, p: password })).login.token;

  it('every login is a session of its own: two logins in the same second get different tokens', async () => {
    const user = await signUp(app, 'twice', 'twice-password');
    const [a, b] = await Promise.all([sessionOf('twice', 'twice-password'), sessionOf('twice', 'twice-password')]);
    expect(new Set([user.token, a, b]).size).toBe(3);
  });

  it("logout ends this token's session only: it is UNAUTHENTICATED from then on, the user's other sessions keep working", async () => {
    const user = await signUp(app, 'leaver', 'leaver-password');
    const other = await sessionOf('leaver', 'leaver-password');
    expect(ok(await app.gql(LOGOUT, {}, user.token))).toEqual({ logout: true });

    const ended = await app.gql(VIEWER, {}, user.token);
    expectError(ended, 'UNAUTHENTICATED');
    expect(ended.errors![0].message).toContain('logged out');
    expectError(await app.gql(PUBLISH, { i: { title: 'after logout', content: 'c' } }, user.token), 'UNAUTHENTICATED');
    expectError(await app.gql(LOGOUT, {}, user.token), 'UNAUTHENTICATED');
    expect(ok(await app.gql(VIEWER, {}, other)).viewer).toEqual({ id: user.id, nickName: 'leaver' });
    // A new login is a new session.
    expect(ok(await app.gql(VIEWER, {}, await sessionOf('leaver', 'leaver-password'))).viewer.id).toBe(user.id);
  });

  it('logoutEverywhere ends every session of the viewer, this one included; a later login works', async () => {
    const user = await signUp(app, 'everywhere', 'everywhere-password');
    const phone = await sessionOf('everywhere', 'everywhere-password');
    const laptop = await sessionOf('everywhere', 'everywhere-password');
    const bystander = await signUp(app, 'bystander');
    for (const token of [user.token, phone, laptop]) ok(await app.gql(VIEWER, {}, token));

    expect(ok(await app.gql(LOGOUT_EVERYWHERE, {}, laptop))).toEqual({ logoutEverywhere: true });
    for (const token of [user.token, phone, laptop]) {
      const ended = await app.gql(VIEWER, {}, token);
      expectError(ended, 'UNAUTHENTICATED');
      expect(ended.errors![0].message).toContain('logged out');
    }
    // Other users are not touched, and the user signs in again.
    expect(ok(await app.gql(VIEWER, {}, bystander.token)).viewer.id).toBe(bystander.id);
    const fresh = await sessionOf('everywhere', 'everywhere-password');
    expect(ok(await app.gql(VIEWER, {}, fresh)).viewer.id).toBe(user.id);
    // A token signed for the user's old sessions (the test signs it as the server did before) stays ended.
    const legacy = jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: dbIdOf(user.id), expiresIn: 3600 });
    expectError(await app.gql(VIEWER, {}, legacy), 'UNAUTHENTICATED');
  });

  it('logout and logoutEverywhere need a viewer', async () => {
    expectError(await app.gql(LOGOUT), 'UNAUTHENTICATED');
    expectError(await app.gql(LOGOUT_EVERYWHERE), 'UNAUTHENTICATED');
    expectError(await app.gql(LOGOUT, {}, 'not-a-token'), 'UNAUTHENTICATED');
    await expectServing();
  });
});

describe('signUp input rules', () => {
  it('a nickName already taken is BAD_USER_INPUT and inserts nothing', async () => {
    await signUp(app, 'carol');
    const before = await count('tb_user');
    const response = await app.gql(SIGN_UP, { n: 'carol', p: 'another-password' });
    expectError(response, 'BAD_USER_INPUT', 'nickName');
    expect(await count('tb_user')).toBe(before);
    // The first carol keeps her password.
    ok(await app.gql(LOGIN, { n: 'carol', p: 'password-123' }));
    await expectServing();
  });

  it.each([
    ['empty', ''],
    ['33 characters', 'n'.repeat(33)],
    ['33 multi-byte characters', '表'.repeat(33)],
    ['a leading space', ' leading'],
    ['a trailing space', 'trailing '],
    ['a leading tab', '\ttab'],
    ['a bell (C0 control) character', 'bell\u0007name'],
    ['a NUL character', 'nul\u0000name'],
    ['a DEL character', 'del\u007fname'],
    ['a C1 control character', 'c1\u0085name'],
  ])('a bad nickName (%s) is BAD_USER_INPUT on nickName and inserts nothing', async (_label, nickName) => {
    const before = await count('tb_user');
    const response = await app.gql(SIGN_UP, { n: nickName, p: 'valid-password' });
    expectError(response, 'BAD_USER_INPUT', 'nickName');
    expect(response.data ?? null).toBeNull();
    expect(await count('tb_user')).toBe(before);
    await expectServing();
  });

  it.each([
    ['7 characters', 'p'.repeat(7)],
    ['257 characters', 'p'.repeat(257)],
    ['empty', ''],
  ])('a bad password (%s) is BAD_USER_INPUT on password and inserts nothing', async (_label, password) => {
    const before = await count('tb_user');
    const response = await app.gql(SIGN_UP, { n: `pw-${password.length}`, p: password });
    expectError(response, 'BAD_USER_INPUT', 'password');
    expect(await count('tb_user')).toBe(before);
    const [row] = await app.query('SELECT COUNT(*) AS n FROM tb_user WHERE nick_name = ?', [`pw-${password.length}`]);
    expect(Number(row.n)).toBe(0);
    await expectServing();
  });

  it('SQL and script text in nickName and password is stored and returned verbatim, and login works', async () => {
    const cases = [
      { n: "x'; DROP TABLE tb_user; --", p: "' OR '1'='1'; --" },
      { n: '<script>alert(1)</script>', p: '<img src=x onerror=alert(1)>' },
      { n: 'back\\slash "quote" %_', p: 'pa\\ss"word%_\'' },
    ];
    for (const { n, p } of cases) {
      const { signUp: payload } = ok(await app.gql(SIGN_UP, { n, p }));
      expect(payload.user.nickName).toBe(n);

      const [row] = await app.query('SELECT nick_name FROM tb_user WHERE id = ?', [dbIdOf(payload.user.id)]);
      expect(row.nick_name).toBe(n);

      const { login } = ok(await app.gql(LOGIN, { n, p }));
      expect(login.user).toEqual({ id: payload.user.id, nickName: n });
      const { viewer } = ok(await app.gql(VIEWER, {}, login.token));
      expect(viewer.nickName).toBe(n);
      expectError(await app.gql(LOGIN, { n, p: `${p}x` }), 'UNAUTHENTICATED');
    }
    // The tables are still there and still hold everyone.
    const [row] = await app.query('SELECT COUNT(*) AS n FROM tb_user WHERE nick_name IN (?)', [cases.map((c) => c.n)]);
    expect(Number(row.n)).toBe(cases.length);
    await expectServing();
  });

  it('distinct emoji nickNames are distinct users, each logging in to its own account', async () => {
    // Every emoji is a different nickName: none is "already taken" by another, and a login
    // with one emoji must not find the account of another.
    const grin = ok(await app.gql(SIGN_UP, { n: '😀', p: 'emoji-password-1' })).signUp.user;
    expect(grin.nickName).toBe('😀');
    expectError(await app.gql(LOGIN, { n: '😁', p: 'emoji-password-1' }), 'UNAUTHENTICATED');

    const beam = ok(await app.gql(SIGN_UP, { n: '😁', p: 'emoji-password-2' })).signUp.user;
    expect(beam.nickName).toBe('😁');
    expect(beam.id).not.toBe(grin.id);
    expect(ok(await app.gql(LOGIN, { n: '😁', p: 'emoji-password-2' })).login.user).toEqual(beam);
    expect(ok(await app.gql(LOGIN, { n: '😀', p: 'emoji-password-1' })).login.user).toEqual(grin);
  });
});

describe('tokens where a viewer is needed', () => {
  let dana: TestUser;
  let danaDbId: string;

  beforeAll(async () => {
    dana = await signUp(app, 'dana');
    danaDbId = dbIdOf(dana.id);
  });

  it('a token this test signs like the server does is accepted (the control for the cases below)', async () => {
    const token = jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: danaDbId, expiresIn: 3600 });
    const { viewer } = ok(await app.gql(VIEWER, {}, token));
    expect(viewer).toEqual({ id: dana.id, nickName: 'dana' });
  });

  it('no Authorization header is UNAUTHENTICATED for followFeed and publishBlog', async () => {
    const before = await count('tb_blog');
    expectError(await app.gql(FEED, { first: 5 }), 'UNAUTHENTICATED');
    expectError(await app.gql(PUBLISH, { i: { title: 't', content: 'c' } }), 'UNAUTHENTICATED');
    expect(await count('tb_blog')).toBe(before);
    await expectServing();
  });

  const badTokens: Array<[string, () => string]> = [
    ['garbage', () => 'not-a-jwt-at-all'],
    ['three garbage segments', () => 'aaa.bbb.ccc'],
    [
      'signed with another secret',
      () =>
        jwt.sign({}, 'some-other-secret-of-enough-length', { algorithm: 'HS256', subject: danaDbId, expiresIn: 3600 }),
    ],
    [
      'expired a minute ago',
      () => jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: danaDbId, expiresIn: -60 }),
    ],
    [
      'expired beyond the tolerance (exp 30 s ago)',
      () =>
        jwt.sign({ sub: danaDbId, exp: Math.floor(Date.now() / 1000) - 30 }, TEST_JWT_SECRET, { algorithm: 'HS256' }),
    ],
    ['with alg "none"', () => jwt.sign({}, null, { algorithm: 'none', subject: danaDbId, expiresIn: 3600 })],
    [
      'signed with HS512 (not the pinned algorithm)',
      () => jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS512', subject: danaDbId, expiresIn: 3600 }),
    ],
    ['without exp', () => jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: danaDbId })],
    ['without a subject', () => jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', expiresIn: 3600 })],
    [
      'with a non-numeric subject',
      () => jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: 'dana', expiresIn: 3600 }),
    ],
    [
      'with a tampered payload',
      () => {
        const [header, , signature] = jwt
          .sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: danaDbId, expiresIn: 3600 })
          .split('.');
        const payload = Buffer.from(JSON.stringify({ sub: '1', exp: Math.floor(Date.now() / 1000) + 3600 })).toString(
          'base64url',
        );
        return [header, payload, signature].join('.');
      },
    ],
  ];

  it.each(badTokens)('a token %s is UNAUTHENTICATED and publishBlog changes nothing', async (_label, makeToken) => {
    const token = makeToken();
    const before = await count('tb_blog');
    expectError(await app.gql(FEED, { first: 5 }, token), 'UNAUTHENTICATED');
    expectError(await app.gql(PUBLISH, { i: { title: 'should not exist', content: 'c' } }, token), 'UNAUTHENTICATED');
    // A rejected token is an error even where a viewer is optional: it is not silently anonymous.
    expectError(await app.gql(VIEWER, {}, token), 'UNAUTHENTICATED');
    expect(await count('tb_blog')).toBe(before);
    await expectServing();
  });

  it.each([
    ['Basic xyz'],
    [`Basic ${Buffer.from('dana:password-123').toString('base64')}`],
    ['Bearer'],
    ['Bearer two tokens'],
    ['Token abc'],
  ])('an Authorization header "%s" is UNAUTHENTICATED and publishBlog changes nothing', async (authorization) => {
    const before = await count('tb_blog');
    expectError(await gqlWithAuthorization(authorization, FEED, { first: 5 }), 'UNAUTHENTICATED');
    expectError(
      await gqlWithAuthorization(authorization, PUBLISH, { i: { title: 'should not exist', content: 'c' } }),
      'UNAUTHENTICATED',
    );
    expect(await count('tb_blog')).toBe(before);
    const [row] = await app.query('SELECT COUNT(*) AS n FROM tb_blog WHERE title = ?', ['should not exist']);
    expect(Number(row.n)).toBe(0);
    await expectServing();
  });
});

describe('error responses', () => {
  it('client errors of the non-production app carry no stacktrace', async () => {
    const responses = [
      await app.gql(FEED, { first: 5 }),
      await app.gql(FEED, { first: 5, after: '%%%not-a-cursor' }, probe.token),
      await app.gql(LOGIN, { n: 'probe', p: 'wrong-password' }),
      await app.gql('{ viewer { nope } }'),
      await app.gql('{ viewer { id '),
    ];
    const codes = responses.map((response) => errorCode(response));
    expect(codes).toEqual([
      'UNAUTHENTICATED',
      'BAD_USER_INPUT',
      'UNAUTHENTICATED',
      'GRAPHQL_VALIDATION_FAILED',
      'GRAPHQL_PARSE_FAILED',
    ]);
    for (const response of responses) {
      for (const error of response.errors!) expect(error.extensions).not.toHaveProperty('stacktrace');
    }
    await expectServing();
  });

  it("Apollo's own errors have their codes, and the server answers right after", async () => {
    const syntax = await app.gql('{ viewer { id ');
    expectError(syntax, 'GRAPHQL_PARSE_FAILED');
    await expectServing();

    const unknownField = await app.gql('{ viewer { id doesNotExist } }', {}, probe.token);
    expectError(unknownField, 'GRAPHQL_VALIDATION_FAILED');
    await expectServing();

    const wrongVariableType = await app.gql(FEED, { first: 'ten' }, probe.token);
    expectError(wrongVariableType, 'BAD_USER_INPUT');
    await expectServing();

    const wrongInputType = await app.gql(SIGN_UP, { n: 42, p: ['array'] });
    expect(errorCode(wrongInputType)).toBe('BAD_USER_INPUT');
    await expectServing();
  });

  describe('in production mode', () => {
    let prod: TestApp;
    let prodUser: TestUser;

    beforeAll(async () => {
      prod = await startTestApp('auth_prod', { env: { NODE_ENV: 'production' } });
      prodUser = await signUp(prod, 'prod-user');
    });

    afterAll(async () => {
      await prod?.close();
    });

    it('error responses carry no stacktrace', async () => {
      expect(prod.config.nodeEnv).toBe('production');
      const responses = [
        await prod.gql(FEED, { first: 5, after: 'garbage!!' }, prodUser.token),
        await prod.gql(FEED, { first: 5 }),
        await prod.gql(FEED, { first: 5 }, 'not-a-token'),
        await prod.gql(SIGN_UP, { n: '', p: 'valid-password' }),
        await prod.gql('{ viewer { nope } }'),
        await prod.gql('{ viewer { id '),
        await prod.gql(FEED, { first: 'ten' }, prodUser.token),
      ];
      expect(responses.map((response) => errorCode(response))).toEqual([
        'BAD_USER_INPUT',
        'UNAUTHENTICATED',
        'UNAUTHENTICATED',
        'BAD_USER_INPUT',
        'GRAPHQL_VALIDATION_FAILED',
        'GRAPHQL_PARSE_FAILED',
        'BAD_USER_INPUT',
      ]);
      for (const response of responses) {
        for (const error of response.errors!) expect(error.extensions).not.toHaveProperty('stacktrace');
      }
      await expectServing(prod, prodUser);
    });
  });
});
