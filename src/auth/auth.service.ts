/** Sign-up, login and logout: input rules, password hashing, token issue and ending sessions. */
import { unauthenticated } from '../kernel/errors';
import { charLength, checkText } from '../kernel/validation';
import { User } from '../user/user.types';
import { UserService } from '../user/user.service';
import { NICKNAME_MAX, validateNickName } from '../user/user.key';
import type { Credentials } from '../user/user.store';
import { PasswordHasher } from './auth.passwords';
import type { Sessions } from './auth.sessions';
import type { AuthStore } from './auth.store';
import { CLOCK_TOLERANCE_SECONDS, TokenService, ViewerToken } from './auth.tokens';

export { NICKNAME_KEY_MAX, NICKNAME_MAX, NICKNAME_MIN, validateNickName } from '../user/user.key';

/** Password length: 8 is the NIST SP 800-63B minimum; the maximum bounds the hashing work. */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;
export interface AuthPayloadData {
  token: string;
  user: User;
}

export function validatePassword(password: string): void {
  checkText('password', password, { min: PASSWORD_MIN, max: PASSWORD_MAX });
}

export interface AuthServiceDeps {
  users: UserService;
  passwords: PasswordHasher;
  tokens: TokenService;
  store: AuthStore;
  /** Told when sessions end (a logout), so that every API process refuses their tokens. */
  sessions: Pick<Sessions, 'ended'>;
  /** Opens a new user's (empty, valid) inbox so that fan-out reaches it from the start. */
  openInbox: (userId: number) => Promise<void>;
  warn: (message: string, error?: unknown) => void;
  now: () => Date;
}

export class AuthService {
  private readonly users: UserService;
  private readonly passwords: PasswordHasher;
  private readonly tokens: TokenService;
  private readonly store: AuthStore;
  private readonly sessions: Pick<Sessions, 'ended'>;
  private readonly openInbox: (userId: number) => Promise<void>;
  private readonly warn: (message: string, error?: unknown) => void;
  private readonly now: () => Date;

  constructor(deps: AuthServiceDeps) {
    this.users = deps.users;
    this.passwords = deps.passwords;
    this.tokens = deps.tokens;
    this.store = deps.store;
    this.sessions = deps.sessions;
    this.openInbox = deps.openInbox;
    this.warn = deps.warn;
    this.now = deps.now;
  }

  async signUp(nickName: string, password: string): Promise<AuthPayloadData> {
    validateNickName(nickName);
    validatePassword(password);
    const user = await this.users.create(nickName, await this.passwords.hash(password));
    await this.openInbox(user.dbId);
    // A new user's token version is the column's default.
    return { token: this.tokens.issue(user.dbId, 0), user };
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
    const { matches, outdated } = await this.passwords.verify(password, found.passwordHash);
    if (!matches) throw wrong();
    if (outdated) await this.upgradeHash(found, password);
    return { token: this.tokens.issue(found.user.dbId, found.tokenVersion), user: found.user };
  }

  /** Ends the session of this token in every API process: the token is refused from then on. */
  async logout(viewer: ViewerToken): Promise<void> {
    // Kept until the token could no longer pass verification anyway.
    const until = new Date(viewer.expiresAt + CLOCK_TOLERANCE_SECONDS * 1000);
    await this.store.revoke(viewer.sessionId, viewer.userId, until, this.now());
    await this.sessions.ended(viewer.userId);
  }

  /** Ends every session of the user, in every API process: every token issued so far is refused. */
  async logoutEverywhere(userId: number): Promise<void> {
    await this.store.endAllSessions(userId);
    await this.sessions.ended(userId);
  }

  /**
   * Replaces a hash made with weaker parameters than today's by one made with today's, now that
   * the password is known. A failure costs nothing but the upgrade (tried again next login).
   */
  private async upgradeHash(found: Credentials, password: string): Promise<void> {
    try {
      await this.store.replacePasswordHash(found.user.dbId, found.passwordHash, await this.passwords.hash(password));
    } catch (error) {
      this.warn(
        `upgrading the password hash of user ${found.user.dbId} failed; it is tried again at their next login`,
        error,
      );
    }
  }
}
