/**
 * What every entry point (`npm start`, `npm run worker`) does around its work: a bad setting
 * ends the process with one line naming it, and SIGTERM or SIGINT stop the work once, within
 * SHUTDOWN_TIMEOUT_MS, then exit.
 */
import { logger } from './observability';
import { ConfigError } from './config';
import { hidePasswords } from './redaction';

/**
 * Runs an entry point; both kinds of failure exit 1. Anything but a ConfigError is logged in full
 * (pino's err: message and stack). A ConfigError is one plain line on stderr, not a JSON log line:
 * it is read by whoever just started the process with a wrong setting, and docs/operations.md quotes it.
 */
export function runEntryPoint(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    if (error instanceof ConfigError) process.stderr.write(`configuration error: ${error.message}\n`);
    else logger.fatal({ err: withoutPasswords(error) }, 'startup failed');
    process.exit(1);
  });
}

/** An error as a log line may show it: its message and stack with every URL's password hidden. */
function withoutPasswords(error: unknown): { type?: string; message: string; stack?: string } {
  if (!(error instanceof Error)) return { message: hidePasswords(String(error)) };
  return {
    type: error.name,
    message: hidePasswords(error.message),
    stack: error.stack === undefined ? undefined : hidePasswords(error.stack),
  };
}

/**
 * On the first SIGTERM or SIGINT: logs `what`, awaits `stop` for at most `timeoutMs`
 * (SHUTDOWN_TIMEOUT_MS), and exits: 0 when `stop` finished, 1 when it failed or was cut short.
 * A drain can hang on what it waits for (a Redis that stopped answering, a client that keeps
 * its connection open), and an orchestrator that waits on the process then kills it without a
 * word; exiting by ourselves leaves a log line that says why. A second signal is ignored: the
 * deadline is already running.
 */
export function stopOnSignals(what: string, stop: () => Promise<void>, timeoutMs: number): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: ${what} (for at most SHUTDOWN_TIMEOUT_MS=${timeoutMs} ms), then exiting`);
    const deadline = setTimeout(() => {
      logger.error(
        `shutdown not finished after SHUTDOWN_TIMEOUT_MS=${timeoutMs} ms: exiting with 1, cutting short whatever still waits`,
      );
      process.exit(1);
    }, timeoutMs);
    stop().then(
      () => {
        clearTimeout(deadline);
        logger.info('shutdown finished');
        process.exit(0);
      },
      (error: unknown) => {
        clearTimeout(deadline);
        logger.error({ msg: 'shutdown failed', err: withoutPasswords(error).message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
