/** The nickName key: what makes nickNames unique, finds them at login, and is searched. */

/**
 * The key that makes nickNames unique and finds them at login: NFKC-normalised (full-width
 * "Ａ" is "A") and lower-cased, so "Alice" and "alice" are one account, while different
 * characters ("René" and "Rene", two different emoji) stay different accounts.
 */
export function nickNameKey(nickName: string): string {
  return nickName.normalize('NFKC').toLowerCase();
}
