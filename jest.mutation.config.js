/**
 * Jest for mutation testing: the unit and in-process specs that exercise the
 * mutated folders, without the PostgreSQL/Redis global setup (the store suites
 * run against the in-memory store only and skip the server-backed targets).
 * @type {import('jest').Config}
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  roots: ['<rootDir>/lib', '<rootDir>/test'],
  testMatch: [
    '<rootDir>/lib/**/*.spec.ts',
    '<rootDir>/test/scenarios/**/*.spec.ts',
    // The Resilience4j conformance suites exercise the policies directly.
    '<rootDir>/test/conformance/*.spec.ts',
    // The policies' option schemas (retry.config.ts and its siblings) are checked here.
    '<rootDir>/test/config/options.spec.ts',
    '<rootDir>/test/config/spring-config.spec.ts',
    '<rootDir>/test/idempotency/idempotent.spec.ts',
    '<rootDir>/test/idempotency/keyed-call.spec.ts',
    '<rootDir>/test/idempotency/store.contract.spec.ts',
    // The HTTP path of the idempotency core (interceptor, held responses), on the in-memory store.
    '<rootDir>/test/idempotency/*.e2e-spec.ts',
  ],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/lib/observability/', '<rootDir>/lib/load-shedding/'],
  globalSetup: undefined,
  globalTeardown: undefined,
  // Type errors are the TypeScript checker's job; ts-jest only transpiles here.
  transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true }] },
};
