/**
 * No forgeable default: JWT_SECRET placeholders and short secrets are refused in every mode but
 * tests, a process without JWT_SECRET outside production keeps a random secret of its own in
 * JWT_SECRET_FILE, HOST listens on loopback unless production, and docker-compose.yml carries no
 * secret.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOrCreateSecretFile } from '../../../src/auth/auth.secret';
import { ConfigError, loadConfig } from '../../../src/kernel/config';

/** 48 random-looking characters: a secret that passes. */
const GOOD_SECRET = 'q3Jx9V2mLr8TzK4wNc7Yb1Hs6Gd0Fa5Ep-uRoWiXtZyQvMn';

const refused = (env: Record<string, string>, message: string) => {
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(message);
};

describe('JWT_SECRET', () => {
  it.each([
    ['the old docker-compose.yml placeholder', 'change-me-to-a-long-random-secret'],
    ['the old development default', 'dev-only-insecure-secret-change-me'],
    ['"secret"', 'secret'],
    ['a change-me variant', 'CHANGE-ME-change-me-change-me-change-me-0000'],
    ["jwt.io's example", 'your-256-bit-secret'],
  ])('refuses %s in production and development', (_label, secret) => {
    for (const nodeEnv of ['production', 'development', '']) {
      refused({ NODE_ENV: nodeEnv, JWT_SECRET: secret }, 'JWT_SECRET');
    }
    expect(() => loadConfig({ NODE_ENV: 'production', JWT_SECRET: secret })).toThrow(/placeholder|at least 32 bytes/);
  });

  it('refuses a secret shorter than 32 bytes outside tests, counting UTF-8 bytes', () => {
    refused(
      { NODE_ENV: 'production', JWT_SECRET: GOOD_SECRET.slice(0, 31) },
      'JWT_SECRET must be at least 32 bytes (got 31)',
    );
    refused({ JWT_SECRET: 'Zq8#kP2!vL9@wR4$' }, 'JWT_SECRET must be at least 32 bytes (got 16)');
    // Eleven three-byte characters: 33 bytes, accepted.
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: '鍵'.repeat(11) }).jwtSecret).toBe('鍵'.repeat(11));
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: GOOD_SECRET }).jwtSecret).toBe(GOOD_SECRET);
  });

  it('accepts anything but an empty secret under NODE_ENV=test', () => {
    expect(loadConfig({ NODE_ENV: 'test', JWT_SECRET: 'secret' }).jwtSecret).toBe('secret');
    expect(loadConfig({ NODE_ENV: 'test', JWT_SECRET: 'test-secret-for-integration-tests' }).jwtSecret).toBe(
      'test-secret-for-integration-tests',
    );
  });

  it('is required in production; elsewhere, without it, the process keeps a generated one in JWT_SECRET_FILE', () => {
    refused({ NODE_ENV: 'production' }, 'JWT_SECRET is required when NODE_ENV=production');
    const development = loadConfig({});
    expect(development.jwtSecret).toBeNull();
    expect(development.jwtSecretFile).toBe('data/jwt-secret');
    expect(loadConfig({ JWT_SECRET_FILE: '/var/lib/feed/jwt' }).jwtSecretFile).toBe('/var/lib/feed/jwt');
  });
});

describe('the generated secret file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feed-secret-'));

  it('is created once, with 32 random bytes (base64url), readable by its owner only, and reused after', () => {
    const file = join(dir, 'nested', 'jwt-secret');
    const first = readOrCreateSecretFile(file);
    expect(first.created).toBe(true);
    expect(Buffer.from(first.secret, 'base64url')).toHaveLength(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toBe(first.secret);
    const again = readOrCreateSecretFile(file);
    expect(again).toEqual({ secret: first.secret, created: false });
    expect(readOrCreateSecretFile(join(dir, 'another')).secret).not.toBe(first.secret);
  });

  it('refuses a file that holds a placeholder or a short secret, naming JWT_SECRET_FILE', () => {
    const short = join(dir, 'short');
    writeFileSync(short, 'too-short\n', { mode: 0o600 });
    expect(() => readOrCreateSecretFile(short)).toThrow(ConfigError);
    expect(() => readOrCreateSecretFile(short)).toThrow(
      `JWT_SECRET_FILE (${short}) must hold at least 32 bytes (got 9)`,
    );
    const placeholder = join(dir, 'placeholder');
    writeFileSync(placeholder, 'change-me-to-a-long-random-secret\n', { mode: 0o600 });
    expect(() => readOrCreateSecretFile(placeholder)).toThrow('placeholder');
  });
});

describe('HOST', () => {
  it('is loopback by default outside production, every interface in production (the Dockerfile sets it)', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ NODE_ENV: 'test' }).host).toBe('127.0.0.1');
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: GOOD_SECRET }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(readFileSync(join(__dirname, '..', '..', '..', 'Dockerfile'), 'utf8')).toMatch(/^ENV .*HOST=0\.0\.0\.0/m);
  });
});

describe('docker-compose.yml', () => {
  it('takes JWT_SECRET from the environment or the uncommitted .env, and refuses to start without it', () => {
    const compose = readFileSync(join(__dirname, '..', '..', '..', 'docker-compose.yml'), 'utf8');
    const values = [...compose.matchAll(/^\s*JWT_SECRET:\s*(.*)$/gm)].map((match) => match[1].trim());
    expect(values.length).toBeGreaterThan(0);
    for (const value of values) expect(value).toMatch(/^"?\$\{JWT_SECRET:\?[^}]+\}"?$/);
    expect(readFileSync(join(__dirname, '..', '..', '..', '.gitignore'), 'utf8')).toMatch(/^\.env$/m);
    expect(readFileSync(join(__dirname, '..', '..', '..', '.dockerignore'), 'utf8')).toMatch(/^\.env$/m);
  });
});
