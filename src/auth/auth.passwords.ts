/**
 * Password hashing with scrypt (memory-hard, in Node's standard library).
 *
 * Stored form: scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>. The parameters travel with the
 * hash, so raising PASSWORD_HASH_COST later does not lock out existing users; a hash made with
 * weaker parameters than today's is reported by verify(), and login stores a new one.
 *
 * The defaults are OWASP's (Password Storage Cheat Sheet): N=2^17, r=8, p=1. A hash then needs
 * 128 MiB for a few hundred milliseconds, on libuv's thread pool (4 threads by default): that
 * cost is the point, and the login rate limits keep anyone from spending it at will.
 */
import { randomBytes, scrypt, ScryptOptions, timingSafeEqual } from 'node:crypto';

const KEY_LENGTH = 64;
const SALT_BYTES = 16;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;

function scryptAsync(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  // scrypt needs about 128 * N * r bytes; allow twice that over Node's 32 MiB default.
  const maxmem = 256 * (options.N ?? 16384) * (options.r ?? BLOCK_SIZE) + 1024 * 1024;
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, { ...options, maxmem }, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export class PasswordHasher {
  /** @param cost scrypt N, a power of two (PASSWORD_HASH_COST). */
  constructor(private readonly cost: number) {}

  async hash(password: string): Promise<string> {
    const salt = randomBytes(SALT_BYTES);
    const key = await scryptAsync(password, salt, { N: this.cost, r: BLOCK_SIZE, p: PARALLELISM });
    return ['scrypt', this.cost, BLOCK_SIZE, PARALLELISM, salt.toString('base64'), key.toString('base64')].join('$');
  }

  /**
   * Whether `password` matches the stored hash (compared in constant time; a malformed stored
   * hash matches nothing), and whether that hash was made with weaker parameters than this
   * hasher's (a lower N or r), so that it should be replaced.
   */
  async verify(password: string, stored: string): Promise<{ matches: boolean; outdated: boolean }> {
    const [scheme, n, r, p, salt, key] = stored.split('$');
    if (scheme !== 'scrypt' || !salt || !key) return { matches: false, outdated: false };
    const expected = Buffer.from(key, 'base64');
    const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), {
      N: Number(n),
      r: Number(r),
      p: Number(p),
    });
    const matches = actual.length === expected.length && timingSafeEqual(actual, expected);
    return { matches, outdated: Number(n) < this.cost || Number(r) < BLOCK_SIZE };
  }

  /**
   * Spends the time of one verification. Login calls it for an unknown nickName so that the
   * response time does not tell which nickNames exist.
   */
  async burn(password: string): Promise<void> {
    await scryptAsync(password, randomBytes(SALT_BYTES), { N: this.cost, r: BLOCK_SIZE, p: PARALLELISM });
  }
}
