/** The nickName key: what makes nickNames unique, finds them at login, and is searched; and the rules of a nickName. */
import { badUserInput } from '../kernel/errors';
import { charLength, checkText } from '../kernel/validation';

/**
 * The key that makes nickNames unique and finds them at login: NFKC-normalised (full-width
 * "Ａ" is "A") and lower-cased, so "Alice" and "alice" are one account, while different
 * characters ("René" and "Rene", two different emoji) stay different accounts.
 */
export function nickNameKey(nickName: string): string {
  return nickName.normalize('NFKC').toLowerCase();
}

/** nickName length in characters: short enough for a UI label, long enough for real names. */
export const NICKNAME_MIN = 1;
export const NICKNAME_MAX = 32;
/**
 * nickName key length in characters, after NFKC and lower-casing (nickNameKey): the width of
 * the tb_user.nick_key column. NFKC can expand one character to as many as 18 ("ﷺ"), so a
 * nickName within NICKNAME_MAX can still have a key that the column cannot hold.
 */
export const NICKNAME_KEY_MAX = 128;

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
    throw badUserInput(
      `nickName must be at most ${NICKNAME_KEY_MAX} characters once normalised (NFKC, lower case) (got ${keyLength})`,
      'nickName',
    );
  }
}
