/**
 * nickName limits after NFKC normalisation: the key column bounds the normalised form.
 */
import { errorCode, ok, signUp, startTestApp, TestApp } from '../../support/harness';

const SIGN_UP =
  'mutation($n: String!, $p: String!) { signUp(nickName: $n, password: $p) { token user { id nickName } } }';

describe('nickName limits after normalisation', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('nick_nfkc');
  });
  afterAll(() => app.close());

  it('refuse a short nickName whose NFKC form outgrows the key column, naming the limit', async () => {
    // U+FDFA is one character that NFKC expands to 18: 8 of them are 144 > 128.
    const nickName = '\uFDFA'.repeat(8);
    const response = await app.gql(SIGN_UP, { n: nickName, p: 'password-123' });
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors![0].extensions!.field).toBe('nickName');
    expect(response.errors![0].message).toMatch(/at most 128 characters once normalised.*got 144/);
    const [{ n }] = await app.query('SELECT COUNT(*) AS n FROM tb_user');
    expect(Number(n)).toBe(0);
    // Login with it is the ordinary wrong-credentials answer, not a server error.
    const login = await app.gql('mutation($n: String!) { login(nickName: $n, password: "password-123") { token } }', {
      n: nickName,
    });
    expect(errorCode(login)).toBe('UNAUTHENTICATED');
  });

  it('accept one whose key is exactly at the limit', async () => {
    // 7 x 18 + 2 = 128 characters after NFKC.
    const user = await signUp(app, `${'\uFDFA'.repeat(7)}ab`);
    ok(
      await app.gql('mutation($n: String!) { login(nickName: $n, password: "password-123") { token } }', {
        n: user.nickName,
      }),
    );
  });
});
