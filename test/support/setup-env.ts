/** Test processes log warnings and errors only (one JSON line per request would drown the output). */
process.env.LOG_LEVEL ??= 'warn';
