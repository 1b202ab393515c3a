/** The Hardening II settings: their defaults, and a bad value stops start-up naming the variable. */
import { loadConfig } from '../../src/config';

const base = { DATABASE_URL: 'mysql://root@127.0.0.1:3306/feed' };

describe('configuration of timeouts, pools, retries and retention', () => {
  it('has the documented defaults', () => {
    const config = loadConfig(base);
    expect({
      redisCommandTimeoutMs: config.redisCommandTimeoutMs,
      databasePoolSize: config.databasePoolSize,
      databaseStatementTimeoutMs: config.databaseStatementTimeoutMs,
      fanoutJobAttempts: config.fanoutJobAttempts,
      fanoutJobBackoffMs: config.fanoutJobBackoffMs,
      fanoutRetentionDays: config.fanoutRetentionDays,
    }).toEqual({
      redisCommandTimeoutMs: 300,
      databasePoolSize: 10,
      databaseStatementTimeoutMs: 10_000,
      fanoutJobAttempts: 10,
      fanoutJobBackoffMs: 500,
      fanoutRetentionDays: 7,
    });
    expect(loadConfig({ ...base, DATABASE_STATEMENT_TIMEOUT_MS: '0' }).databaseStatementTimeoutMs).toBe(0);
  });

  it.each([
    ['REDIS_COMMAND_TIMEOUT_MS', '0', 'REDIS_COMMAND_TIMEOUT_MS must be between 10 and 60000 (got 0)'],
    ['DATABASE_POOL_SIZE', '0', 'DATABASE_POOL_SIZE must be between 1 and 1000 (got 0)'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '1.5', 'DATABASE_STATEMENT_TIMEOUT_MS must be a whole number (got "1.5")'],
    ['FANOUT_JOB_ATTEMPTS', '101', 'FANOUT_JOB_ATTEMPTS must be between 1 and 100 (got 101)'],
    ['FANOUT_JOB_BACKOFF_MS', 'soon', 'FANOUT_JOB_BACKOFF_MS must be a whole number (got "soon")'],
    ['FANOUT_RETENTION_DAYS', '0', 'FANOUT_RETENTION_DAYS must be between 1 and 3650 (got 0)'],
  ])('refuses a bad %s naming it', (name, value, message) => {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(message);
  });
});
