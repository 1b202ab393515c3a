/**
 * What every entry point (`npm start`, `npm run worker`) does around its work: a bad setting
 * ends the process with one line naming it, and SIGTERM or SIGINT stop the work once, then exit.
 */
import { logger } from './app';
import { ConfigError } from './config';

/** Runs an entry point; a ConfigError prints as one line, anything else in full; both exit 1. */
export function runEntryPoint(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
    process.exit(1);
  });
}

/** On the first SIGTERM or SIGINT: logs `what`, awaits `stop`, exits 0 (a second signal is ignored). */
export function stopOnSignals(what: string, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: ${what}, then exiting`);
    await stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
