const { readFileSync } = require('node:fs');
const { join } = require('node:path');

// NestJS 12 ships ES modules only, which Jest's CommonJS runtime cannot require: Babel turns them into CommonJS first.
const nestIsEsm =
  JSON.parse(readFileSync(join(__dirname, 'node_modules/@nestjs/core/package.json'), 'utf8')).type === 'module';
const esmToCommonJs = [
  'babel-jest',
  {
    babelrc: false,
    configFile: false,
    plugins: [
      ['@babel/plugin-transform-modules-commonjs', { importInterop: 'node' }],
      join(__dirname, 'test/support/import-meta.babel-plugin.js'),
    ],
  },
];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/lib', '<rootDir>/test', '<rootDir>/sample-app', '<rootDir>/scenarios'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  // The smoke application has its own package.json, dependencies and test runner (Vitest).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/smoke-esm/'],
  modulePathIgnorePatterns: ['<rootDir>/test/smoke-esm/'],
  transform: { '^.+\\.ts$': 'ts-jest', ...(nestIsEsm ? { '/node_modules/@nestjs/.+\\.js$': esmToCommonJs } : {}) },
  transformIgnorePatterns: nestIsEsm ? ['/node_modules/(?!@nestjs/)'] : ['/node_modules/'],
  setupFiles: ['reflect-metadata'],
  moduleNameMapper: { '^resilience4nest$': '<rootDir>/lib/index.ts' },
  // Real PostgreSQL and Redis for the store suites; see test/support/global-setup.ts.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
};
