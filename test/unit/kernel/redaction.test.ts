/** The one helper that hides passwords in URLs (src/kernel/redaction.ts), wherever text may hold one. */
import { hidePasswords } from '../../../src/kernel/redaction';

describe('hidePasswords', () => {
  it.each([
    ['mysql://reader:s3cret@replica-1:3306/feed', 'mysql://reader:***@replica-1:3306/feed'],
    ['redis://:s3cret@cache:6379/0', 'redis://:***@cache:6379/0'],
    ['rediss://default:s3cret@cache:6380', 'rediss://default:***@cache:6380'],
    // A password with an unencoded @ or / (not a valid URL, but what someone may set).
    ['mysql://u:p@ss/w@rd@db:3306/feed', 'mysql://u:***@db:3306/feed'],
    // Inside a sentence, a quoted value, a list.
    ['cannot open (mysql://u:pw@h/db): refused', 'cannot open (mysql://u:***@h/db): refused'],
    ['got "mysql://u:pw@h/db"', 'got "mysql://u:***@h/db"'],
    ['mysql://a:one@h1/db,mysql://b:two@h2/db', 'mysql://a:***@h1/db,mysql://b:***@h2/db'],
  ])('%s -> %s', (text, shown) => {
    expect(hidePasswords(text)).toBe(shown);
  });

  it('leaves text without a password as it is', () => {
    for (const text of [
      'mysql://root@127.0.0.1:3306/feed',
      'redis://127.0.0.1:6379/0',
      'a user@host mention',
      'no url here',
      'http://h/p?q=a:b@c',
    ]) {
      expect(hidePasswords(text)).toBe(text);
    }
  });
});
