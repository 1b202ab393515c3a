/** Configuration: the settings' defaults, parsed once in config.ts, a bad value named with what it got. */
import { ConfigError, loadConfig, loadMigrationConfig } from '../../../src/kernel/config';
import { addressLimitKey, canonicalAddress } from '../../../src/graphql/client-address';

const refused = (env: Record<string, string>, message: string) => {
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(message);
};

describe('configuration', () => {
  it('has no trusted proxies, introspection on, no metrics token and a 10 s shutdown by default, in production too', () => {
    const config = loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-of-at-least-32-bytes' });
    expect(config.trustedProxies).toEqual([]);
    expect(config.introspection).toBe(true);
    expect(config.metricsToken).toBeNull();
    expect(config.shutdownTimeoutMs).toBe(10_000);
  });

  it('reads TRUSTED_PROXIES as IPv4 and IPv6 addresses and CIDR ranges, naming a bad entry', () => {
    expect(loadConfig({ TRUSTED_PROXIES: ' 10.0.0.1, 10.1.0.0/16,fd00::/8 ,::1' }).trustedProxies).toEqual([
      '10.0.0.1',
      '10.1.0.0/16',
      'fd00::/8',
      '::1',
    ]);
    refused({ TRUSTED_PROXIES: '10.0.0.1,10.0.0.0/33' }, 'TRUSTED_PROXIES has a bad entry "10.0.0.0/33"');
    refused({ TRUSTED_PROXIES: '1.2.3' }, 'TRUSTED_PROXIES has a bad entry "1.2.3"');
    refused(
      { TRUSTED_PROXIES: 'proxy.example' },
      'TRUSTED_PROXIES must be comma-separated IP addresses or CIDR ranges',
    );
    refused({ TRUSTED_PROXIES: 'fd00::/129' }, 'TRUSTED_PROXIES has a bad entry "fd00::/129"');
  });

  it('reads PERSISTED_DOCUMENTS (off by default) and wants a manifest exactly when it is allow or only', () => {
    expect(loadConfig({}).persistedDocuments).toEqual({ mode: 'off', manifestFile: null });
    expect(
      loadConfig({ PERSISTED_DOCUMENTS: 'only', PERSISTED_DOCUMENTS_MANIFEST: 'm.json' }).persistedDocuments,
    ).toEqual({
      mode: 'only',
      manifestFile: 'm.json',
    });
    refused({ PERSISTED_DOCUMENTS: 'on' }, 'PERSISTED_DOCUMENTS must be off, allow or only (got "on")');
    refused({ PERSISTED_DOCUMENTS: 'allow' }, 'PERSISTED_DOCUMENTS=allow needs PERSISTED_DOCUMENTS_MANIFEST');
    refused(
      { PERSISTED_DOCUMENTS_MANIFEST: 'm.json' },
      'PERSISTED_DOCUMENTS_MANIFEST is set (got "m.json") but PERSISTED_DOCUMENTS is off',
    );
  });

  it('reads LOG_LEVEL (info by default, any case), naming a level pino does not know', () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({ LOG_LEVEL: 'WARN' }).logLevel).toBe('warn');
    expect(loadConfig({ LOG_LEVEL: 'silent' }).logLevel).toBe('silent');
    refused(
      { LOG_LEVEL: 'verbose' },
      'LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent (got "verbose")',
    );
  });

  it('reads INTROSPECTION, METRICS_TOKEN and SHUTDOWN_TIMEOUT_MS', () => {
    expect(loadConfig({ INTROSPECTION: 'off' }).introspection).toBe(false);
    refused({ INTROSPECTION: 'no' }, 'INTROSPECTION must be on or off (got "no")');
    expect(loadConfig({ METRICS_TOKEN: 'scrape-token-0123456789' }).metricsToken).toBe('scrape-token-0123456789');
    refused({ METRICS_TOKEN: 'short' }, 'METRICS_TOKEN must be at least 16 characters (got 5)');
    expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: '2500' }).shutdownTimeoutMs).toBe(2500);
    refused({ SHUTDOWN_TIMEOUT_MS: '10s' }, 'SHUTDOWN_TIMEOUT_MS must be a whole number (got "10s")');
    refused({ SHUTDOWN_TIMEOUT_MS: '0' }, 'SHUTDOWN_TIMEOUT_MS must be between 100 and 600000 (got 0)');
  });
});

describe('client address keys', () => {
  it('count IPv4 clients per address and IPv6 clients per /64', () => {
    expect(addressLimitKey('203.0.113.5')).toBe('203.0.113.5');
    expect(addressLimitKey('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('2001:db8:1:3::a')).toBe('2001:db8:1:3::/64');
    expect(addressLimitKey('::ffff:203.0.113.5')).toBe('203.0.113.5');
    expect(addressLimitKey('unknown')).toBe('unknown');
  });

  it('write IPv4-mapped IPv6 peers as IPv4', () => {
    expect(canonicalAddress('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(canonicalAddress('::1')).toBe('::1');
    expect(canonicalAddress('2001:0db8::0001')).toBe('2001:db8::1');
  });
});

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

describe('configuration of the feed', () => {
  it('refuses braces in REDIS_KEY_PREFIX, which would put every key into one cluster slot', () => {
    expect(() => loadConfig({ REDIS_KEY_PREFIX: 'app{1}:' })).toThrow(
      'REDIS_KEY_PREFIX must not contain { or } (got "app{1}:")',
    );
    expect(loadConfig({ REDIS_KEY_PREFIX: 'app:' }).redisKeyPrefix).toBe('app:');
  });

  it('reads WATERMARK_SETTLE_MS', () => {
    expect(loadConfig({}).watermarkSettleMs).toBe(1000);
    expect(loadConfig({ WATERMARK_SETTLE_MS: '0' }).watermarkSettleMs).toBe(0);
    expect(() => loadConfig({ WATERMARK_SETTLE_MS: '-1' })).toThrow('WATERMARK_SETTLE_MS');
  });
});

describe('configuration of read replicas', () => {
  it('has no replicas and a 1 s lag limit by default', () => {
    const config = loadConfig(base);
    expect(config.databaseReplicaUrls).toEqual([]);
    expect(config.replicaMaxLagMs).toBe(1000);
  });

  it('reads DATABASE_REPLICA_URLS as comma-separated mysql:// URLs and REPLICA_MAX_LAG_MS, naming a bad value', () => {
    expect(
      loadConfig({ ...base, DATABASE_REPLICA_URLS: ' mysql://r1:3306/feed, mysql://u:p@r2:3307/feed ,' })
        .databaseReplicaUrls,
    ).toEqual(['mysql://r1:3306/feed', 'mysql://u:p@r2:3307/feed']);
    refused(
      { ...base, DATABASE_REPLICA_URLS: 'redis://r1:6379' },
      'DATABASE_REPLICA_URLS must be comma-separated mysql:// URLs (got "redis://r1:6379")',
    );
    refused(
      { ...base, DATABASE_REPLICA_URLS: 'not a url' },
      'DATABASE_REPLICA_URLS must be comma-separated mysql:// URLs (got "not a url")',
    );
    expect(loadConfig({ ...base, REPLICA_MAX_LAG_MS: '250' }).replicaMaxLagMs).toBe(250);
    refused({ ...base, REPLICA_MAX_LAG_MS: '1s' }, 'REPLICA_MAX_LAG_MS must be a whole number (got "1s")');
    refused({ ...base, REPLICA_MAX_LAG_MS: '50' }, 'REPLICA_MAX_LAG_MS must be between 100 and 3600000 (got 50)');
  });
});

describe('configuration of accounts, sessions and follows', () => {
  it('has the documented defaults: OWASP scrypt cost, follow cap and rate, login limits, session re-check', () => {
    const config = loadConfig(base);
    expect({
      passwordHashCost: config.passwordHashCost,
      maxFollowing: config.maxFollowing,
      followPerUser: config.rateLimits.followPerUser,
      loginPerNickNameIp: config.rateLimits.loginPerNickNameIp,
      loginPerNickName: config.rateLimits.loginPerNickName,
      sessionRecheckSeconds: config.sessionRecheckSeconds,
    }).toEqual({
      passwordHashCost: 131_072,
      maxFollowing: 5000,
      followPerUser: { points: 200, seconds: 3600 },
      loginPerNickNameIp: { points: 10, seconds: 900 },
      loginPerNickName: { points: 20, seconds: 3600 },
      sessionRecheckSeconds: 30,
    });
  });

  it.each([
    ['MAX_FOLLOWING', '0', 'MAX_FOLLOWING must be between 1 and 1000000 (got 0)'],
    [
      'RATE_LIMIT_FOLLOW_PER_USER',
      '200',
      'RATE_LIMIT_FOLLOW_PER_USER must be <points>/<seconds>, e.g. 10/900 (got "200")',
    ],
    ['RATE_LIMIT_LOGIN_PER_NICKNAME_IP', 'ten', 'RATE_LIMIT_LOGIN_PER_NICKNAME_IP must be <points>/<seconds>'],
    ['SESSION_RECHECK_SECONDS', '0', 'SESSION_RECHECK_SECONDS must be between 1 and 3600 (got 0)'],
    ['PASSWORD_HASH_COST', '100000', 'PASSWORD_HASH_COST must be a power of two (got 100000)'],
  ])('refuses a bad %s naming it', (name, value, message) => {
    refused({ ...base, [name]: value }, message);
  });
});

describe('configuration errors never echo a password', () => {
  const messageOf = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error(`loadConfig(${JSON.stringify(env)}) did not throw`);
  };

  it.each([
    ['DATABASE_URL', 'postgres://feed:hunter2-secret@db.internal:5432/feed'],
    ['DATABASE_URL', 'mysql://feed:hunter2-secret@db internal:3306/feed'],
    ['REDIS_URL', 'http://:hunter2-secret@cache.internal:6379/0'],
    ['DATABASE_REPLICA_URLS', 'mysql://r1:3306/feed,redis://reader:hunter2-secret@r2:6379'],
    ['DATABASE_REPLICA_URLS', 'mysql://reader:hunter2-secret@r 2:3306/feed'],
  ])('%s=%s: the message names the variable and the URL, without the password', (name, value) => {
    const message = messageOf({ [name]: value });
    expect(message).toContain(name);
    expect(message).not.toContain('hunter2');
    expect(message).toContain('***@');
  });
});

describe('configuration of the HTTP bounds', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.responseMaxBytes).toBe(10 * 1024 * 1024);
    expect(config.httpHeadersTimeoutMs).toBe(10_000);
    expect(config.httpRequestTimeoutMs).toBe(30_000);
    expect(config.rateLimits.anonymousPerIp).toEqual({ points: 300, seconds: 60 });
  });

  it('reads RESPONSE_MAX_BYTES, HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS and RATE_LIMIT_ANONYMOUS_PER_IP, naming a bad value', () => {
    const config = loadConfig({
      RESPONSE_MAX_BYTES: '200000',
      HTTP_HEADERS_TIMEOUT_MS: '2000',
      HTTP_REQUEST_TIMEOUT_MS: '5000',
      RATE_LIMIT_ANONYMOUS_PER_IP: '20/10',
    });
    expect(config.responseMaxBytes).toBe(200_000);
    expect(config.httpHeadersTimeoutMs).toBe(2000);
    expect(config.httpRequestTimeoutMs).toBe(5000);
    expect(config.rateLimits.anonymousPerIp).toEqual({ points: 20, seconds: 10 });
    refused({ RESPONSE_MAX_BYTES: '10MB' }, 'RESPONSE_MAX_BYTES must be a whole number (got "10MB")');
    refused({ RESPONSE_MAX_BYTES: '100' }, 'RESPONSE_MAX_BYTES must be between 65536 and 1073741824 (got 100)');
    refused({ HTTP_HEADERS_TIMEOUT_MS: '10' }, 'HTTP_HEADERS_TIMEOUT_MS must be between 100 and 600000 (got 10)');
    refused(
      { HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' },
      'HTTP_HEADERS_TIMEOUT_MS (20000) must not be above HTTP_REQUEST_TIMEOUT_MS (10000)',
    );
    refused(
      { RATE_LIMIT_ANONYMOUS_PER_IP: '20' },
      'RATE_LIMIT_ANONYMOUS_PER_IP must be <points>/<seconds>, e.g. 10/900 (got "20")',
    );
  });
});

describe('configuration of operations (migrations, the worker port, tracing)', () => {
  const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-of-thirty-two-bytes-or-more' };

  it('migrates on start outside production and in the embedded mode, not in production on MySQL', () => {
    expect(loadConfig({}).operations.migrateOnStart).toBe(true);
    expect(loadConfig({ DATABASE_URL: 'mysql://root@db:3306/feed' }).operations.migrateOnStart).toBe(true);
    expect(loadConfig(production).operations.migrateOnStart).toBe(true);
    expect(loadConfig({ ...production, DATABASE_URL: 'mysql://app@db:3306/feed' }).operations.migrateOnStart).toBe(
      false,
    );
    expect(
      loadConfig({ ...production, DATABASE_URL: 'mysql://app@db:3306/feed', MIGRATE_ON_START: 'on' }).operations
        .migrateOnStart,
    ).toBe(true);
    expect(loadConfig({ MIGRATE_ON_START: 'off' }).operations.migrateOnStart).toBe(false);
    refused({ MIGRATE_ON_START: 'yes' }, 'MIGRATE_ON_START must be on or off (got "yes")');
  });

  it('reads WORKER_PORT (4001 by default)', () => {
    expect(loadConfig({}).operations.workerPort).toBe(4001);
    expect(loadConfig({ WORKER_PORT: '0' }).operations.workerPort).toBe(0);
    refused({ WORKER_PORT: '70000' }, 'WORKER_PORT must be between 0 and 65535 (got 70000)');
  });

  it('traces nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is an http(s) URL', () => {
    expect(loadConfig({}).operations).toMatchObject({ otlpEndpoint: null, serviceName: null });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/', OTEL_SERVICE_NAME: 'feed-eu' }).operations,
    ).toMatchObject({
      otlpEndpoint: 'http://collector:4318',
      serviceName: 'feed-eu',
    });
    refused(
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      'OTEL_EXPORTER_OTLP_ENDPOINT must start with http:// or https:// (got "collector:4318")',
    );
    refused(
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://' },
      'OTEL_EXPORTER_OTLP_ENDPOINT is not a valid URL (got "http://")',
    );
  });

  it('npm run migrate needs no JWT_SECRET, even in production', () => {
    expect(loadMigrationConfig({ NODE_ENV: 'production', DATABASE_URL: 'mysql://ddl@db:3306/feed' })).toEqual({
      nodeEnv: 'production',
      logLevel: 'info',
      embedded: false,
      embeddedDbFile: 'data/feed.sqlite',
      databaseUrl: 'mysql://ddl@db:3306/feed',
    });
  });
});
