// @ts-check
/**
 * StrykerJS over the policies, the fused pipeline, fallback and the
 * idempotency core. One folder at a time:
 *   npm run mutation -- --mutate 'lib/retry/**\/*.ts'
 * See CONTRIBUTING.md ("Mutation testing").
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
// MUTATION_REPORT names the report files, so per-folder runs do not overwrite each other.
const report = process.env.MUTATION_REPORT ?? 'mutation';

export default {
  packageManager: 'npm',
  testRunner: 'jest',
  jest: { projectType: 'custom', configFile: 'jest.mutation.config.js', enableFindRelatedTests: false },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  concurrency: 2,
  checkerConcurrency: 1,
  timeoutMS: 10000,
  mutate: [
    'lib/retry/**/*.ts',
    'lib/circuit-breaker/**/*.ts',
    'lib/bulkhead/**/*.ts',
    'lib/time-limiter/**/*.ts',
    'lib/fallback/**/*.ts',
    'lib/standard-pipeline.ts',
    // The idempotency core: keys and fingerprints, the method layer, held responses and the in-memory store.
    'lib/idempotency/idempotency-key.ts',
    'lib/idempotency/idempotent-method.ts',
    'lib/idempotency/held-response.ts',
    'lib/idempotency/memory-idempotency-store.ts',
    '!lib/**/*.spec.ts',
    '!lib/**/*.decorator.ts',
    '!lib/**/*.messages.ts',
  ],
  ignorePatterns: ['dist', 'coverage', 'reports', '.pgdata', 'scenario-output', 'sample-app', 'bench', 'load', 'docs'],
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${report}.html` },
  jsonReporter: { fileName: `reports/mutation/${report}.json` },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  thresholds: { high: 90, low: 85, break: null },
};
