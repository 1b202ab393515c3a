/** Sign-up and login: input rules, password hashing and token issue. */
import { badUserInput, unauthenticated } from '../kernel/errors';
import { charLength, checkText } from '../kernel/validation';
import { User } from '../user/user.types';
import { nickNameKey, UserService } from '../user/user.service';
import { PasswordHasher } from './auth.passwords';
import { TokenService } from './auth.tokens';

/** nickName length in characters: short enough for a UI label, long enough for real names. */
export const NICKNAME_MIN = 1;
export const NICKNAME_MAX = 32;
/** Password length: 8 is the NIST SP 800-63B minimum; the maximum bounds the hashing work. */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;
/**
 * nickName key length in characters, after NFKC and lower-casing (nickNameKey): the width of
 * the tb_user.nick_key column. NFKC can expand one character to as many as 18 ("ﷺ"), so a
 * nickName within NICKNAME_MAX can still have a key that the column cannot hold.
 */
export const NICKNAME_KEY_MAX = 128;

export interface AuthPayloadData {
  token: string;
  user: User;
}

// Control characters (C0, DEL, C1) make a nickName impossible to show or type.
// eslint-disable-next-line no-control-regex -- matching control characters is the point of this pattern
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

export function validateNickName(nickName: string): void {
  checkText('nickName', nickName, { min: NICKNAME_MIN, max: NICKNAME_MAX });
  if (nickName.trim() !== nickName) {
    throw badUserInput(`nickName must not start or end with white space (got "${nickName}")`, 'nickName');
  }
  if (CONTROL_CHARACTERS.test(nickName)) {
    throw badUserInput('nickName must not contain control characters', 'nickName');
  }
  const keyLength = charLength(nickNameKey(nickName));
  if (keyLength > NICKNAME_KEY_MAX) {
    throw badUserInput(`nickName must be at most ${NICKNAME_KEY_MAX} characters once normalised (NFKC, lower case) (got ${keyLength})`, 'nickName');
  }
}

export function validatePassword(password: string): void {
  checkText('password', password, { min: PASSWORD_MIN, max: PASSWORD_MAX });
}

export class AuthService {
  constructor(
    private readonly users: UserService,
    private readonly passwords: PasswordHasher,
    private readonly tokens: TokenService,
    /** Opens a new user's (empty, valid) inbox so that fan-out reaches it from the start. */
    private readonly openInbox: (userId: number) => Promise<void>,
  ) {}

  async signUp(nickName: string, password: string): Promise<AuthPayloadData> {
    validateNickName(nickName);
    validatePassword(password);
    const user = await this.users.create(nickName, await this.passwords.hash(password));
    await this.openInbox(user.dbId);
    return { token: this.tokens.issue(user.dbId), user };
  }

  async login(nickName: string, password: string): Promise<AuthPayloadData> {
    // The same message for an unknown nickName and a wrong password: a login form must not
    // reveal which nickNames exist.
    const wrong = () => unauthenticated('wrong nickName or password');
    if (charLength(password) > PASSWORD_MAX || charLength(nickName) > NICKNAME_MAX) throw wrong();
    const found = await this.users.findCredentials(nickName);
    if (!found) {
      await this.passwords.burn(password);
      throw wrong();
    }
    if (!(await this.passwords.verify(password, found.passwordHash))) throw wrong();
    return { token: this.tokens.issue(found.user.dbId), user: found.user };
  }
}
