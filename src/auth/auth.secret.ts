/**
 * The token-signing secret of a process started without JWT_SECRET outside production: random,
 * made once, kept in a file (JWT_SECRET_FILE, data/jwt-secret by default) that only its owner
 * may read, and read again at every start, so tokens survive a restart and nobody can sign
 * tokens with a secret printed in the code. The entry point (server.ts) calls this; config.ts
 * stays the one reader of the environment and judges the file's secret by JWT_SECRET's rules.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, MIN_JWT_SECRET_BYTES, secretProblem } from '../kernel/config';

/** 256 bits: HS256's key size (RFC 7518, 3.2). */
const SECRET_BYTES = MIN_JWT_SECRET_BYTES;

/** Only the owner reads or writes the file; its folder is the owner's too when it is made here. */
const FILE_MODE = 0o600;
const FOLDER_MODE = 0o700;

export interface SecretFile {
  secret: string;
  /** Whether this call made the file (the first start). */
  created: boolean;
}

/**
 * The secret kept in `file`, made now if the file does not exist. It is written whole to a file
 * of this process's own, then linked into place, which fails when the file exists: two
 * processes starting together agree on one secret (the loser reads the winner's), and no
 * process ever reads a half-written file.
 */
export function readOrCreateSecretFile(file: string): SecretFile {
  const existing = readSecret(file);
  if (existing !== null) return { secret: existing, created: false };
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: FOLDER_MODE });
    writeFileSync(draft, `${secret}\n`, { mode: FILE_MODE, flag: 'wx' });
    linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return { secret: readSecret(file) ?? '', created: false };
    throw asConfigError(file, error);
  } finally {
    rmSync(draft, { force: true });
  }
  return { secret, created: true };
}

/** The file's secret, or null when there is no file; a secret that breaks JWT_SECRET's rules is a ConfigError. */
function readSecret(file: string): string | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw asConfigError(file, error);
  }
  const secret = text.trim();
  const problem = secretProblem(secret);
  if (problem?.kind === 'short')
    throw new ConfigError(
      `JWT_SECRET_FILE (${file}) must hold at least ${MIN_JWT_SECRET_BYTES} bytes (got ${problem.bytes})`,
    );
  if (problem?.kind === 'placeholder')
    throw new ConfigError(
      `JWT_SECRET_FILE (${file}) holds a known placeholder, not a secret: delete the file to have one generated`,
    );
  return secret;
}

function asConfigError(file: string, error: unknown): ConfigError {
  return new ConfigError(`cannot use JWT_SECRET_FILE (${file}): ${(error as Error).message}`);
}
