/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/lib', '<rootDir>/test', '<rootDir>/sample-app', '<rootDir>/scenarios'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  transform: { '^.+\\.ts$': 'ts-jest' },
  setupFiles: ['reflect-metadata'],
  moduleNameMapper: { '^resilience4nest$': '<rootDir>/lib/index.ts' },
  // Real PostgreSQL and Redis for the store suites; see test/support/global-setup.ts.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
};
