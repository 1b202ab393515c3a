/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The replica tests run in their own pass (npm run test:replica): each file starts a MariaDB
  // primary and replica of its own.
  testPathIgnorePatterns:
    process.env.TEST_REPLICA === 'on'
      ? ['/node_modules/']
      : ['/node_modules/', '/test/integration/db/replica[^/]*\\.test\\.ts$'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  // Integration files each own a database and a Redis key prefix, so they may run in parallel;
  // two workers match this machine's two cores.
  maxWorkers: 2,
  testTimeout: 60_000,
  setupFiles: ['<rootDir>/test/support/setup-env.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};
