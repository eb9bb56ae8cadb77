// @ts-check
/**
 * StrykerJS over the policies, the fused pipeline, fallback and the
 * idempotency core. `MUTATION_SCOPE=retry npm run mutation` mutates one
 * folder and names its report after it; see CONTRIBUTING.md ("Mutation testing").
 */

/** What each scope mutates. The idempotency core is the keys, the method layer, the run, reconciliation, held responses and the in-memory store; not the PostgreSQL/Redis adapters nor the Nest wiring. */
const SCOPES = {
  retry: ['lib/policies/retry/**/*.ts'],
  'circuit-breaker': ['lib/policies/circuit-breaker/**/*.ts'],
  bulkhead: ['lib/policies/bulkhead/**/*.ts'],
  'time-limiter': ['lib/policies/time-limiter/**/*.ts'],
  fallback: ['lib/policies/fallback/**/*.ts'],
  pipeline: ['lib/engine/standard-pipeline.ts'],
  idempotency: [
    'lib/features/idempotency/idempotency-key.ts',
    'lib/features/idempotency/idempotent-method.ts',
    'lib/features/idempotency/idempotent-run.ts',
    'lib/features/idempotency/idempotency.reconciliation.ts',
    'lib/features/idempotency/held-response.ts',
    'lib/features/idempotency/memory-idempotency-store.ts',
  ],
};
// Specs, decorators (metadata only) and message texts are not behaviour under test.
const EXCLUDED = ['!lib/**/*.spec.ts', '!lib/**/*.decorator.ts', '!lib/**/*.messages.ts'];

const scope = process.env.MUTATION_SCOPE;
if (scope !== undefined && !(scope in SCOPES)) {
  throw new Error(`MUTATION_SCOPE must be one of ${Object.keys(SCOPES).join(', ')}; got '${scope}'`);
}
const report = scope ?? 'mutation';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'jest',
  // Each mutant runs only the specs that import its file, directly or not.
  jest: { projectType: 'custom', configFile: 'jest.mutation.config.js', enableFindRelatedTests: true },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  // Static mutants (module-level initialisers such as the option schemas) are tested with a fresh module load
  // and every related spec. Ignoring them would leave the schemas untested, and a static mutant that a
  // skipped spec also "covers" would be run against that spec alone and reported as a false survivor.
  ignoreStatic: false,
  // A rerun tests only the mutants whose code or covering specs changed since the scope's last report.
  incremental: true,
  incrementalFile: `reports/mutation/${report}.incremental.json`,
  concurrency: 2,
  timeoutMS: 10000,
  mutate: [...(scope === undefined ? Object.values(SCOPES).flat() : SCOPES[scope]), ...EXCLUDED],
  ignorePatterns: ['dist', 'coverage', 'reports', '.pgdata', 'scenario-output', 'sample-app', 'bench', 'load', 'docs'],
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${report}.html` },
  jsonReporter: { fileName: `reports/mutation/${report}.json` },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  thresholds: { high: 90, low: 85, break: null },
};
