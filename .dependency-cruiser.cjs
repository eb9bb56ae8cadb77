/**
 * The layers of lib/, checked by `npm run lint:deps`. From the bottom up:
 * shared primitives at the top of lib/ (clock, errors, events, context) and
 * config/'s generic toolkit (durations, relaxed binding, schemas, Spring
 * documents); then one folder per policy; then what assembles and watches
 * them (the module options, registry, explorer, module, observability,
 * idempotency). A layer imports only layers below it.
 */
const POLICY_FOLDERS = '^lib/(retry|circuit-breaker|bulkhead|time-limiter|rate-limiter|fallback|load-shedding|hedge)/';

/**
 * What sits above the policies: wiring, the assembled module options, observability, idempotency and
 * the Nest exception filter (filter/resilience-problems.ts, the plain error-to-problem mapping, is shared).
 */
const ABOVE_POLICIES = [
  '^lib/resilience[.](module|module-definition|explorer|registry|options)[.]ts$',
  '^lib/(resolve-options|spring-config|standard-pipeline|method-fallbacks|deadline[.]interceptor)[.]ts$',
  '^lib/(observability|idempotency)/',
  '^lib/filter/resilience-exception[.]filter[.]ts$',
  '^lib/index[.]ts$',
];

/** Idempotency files that may know a store adapter: the adapters themselves and the Nest wiring. */
const IDEMPOTENCY_EDGE = [
  '^lib/idempotency/(postgres|redis)-idempotency-store[.]ts$',
  '^lib/idempotency/index[.]ts$',
  '^lib/idempotency/idempotency[.](interceptor|registry)[.]ts$',
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module cycle: one of the two modules belongs in a lower layer, or a shared type does.',
      from: { path: '^lib/' },
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      severity: 'error',
      scope: 'folder',
      comment: 'Folders of lib/ import each other in a cycle: move the shared part down a layer.',
      from: { path: '^lib/' },
      to: { circular: true },
    },
    {
      name: 'policies-import-nothing-above',
      severity: 'error',
      comment:
        'A policy knows nothing of the module, explorer, registry, observability, idempotency or the assembled module options.',
      from: { path: POLICY_FOLDERS },
      to: { path: ABOVE_POLICIES },
    },
    {
      name: 'config-imports-no-policy',
      severity: 'error',
      comment: 'config/ is the generic toolkit the policies use; the module options are assembled at the top of lib/.',
      from: { path: '^lib/config/' },
      to: { path: [POLICY_FOLDERS, ...ABOVE_POLICIES] },
    },
    {
      name: 'idempotency-core-imports-no-store-adapter',
      severity: 'error',
      comment:
        'The idempotency core works against IdempotencyStore; only the adapters and the Nest wiring know a backend.',
      from: { path: '^lib/idempotency/', pathNot: IDEMPOTENCY_EDGE },
      to: { path: '^lib/idempotency/(postgres|redis)-idempotency-store[.]ts$' },
    },
    {
      name: 'observability-hooks-through-events',
      severity: 'error',
      comment: 'Observability subscribes to registry and policy events; it does not reach into the explorer.',
      from: { path: '^lib/observability/' },
      to: { path: '^lib/resilience[.]explorer[.]ts$' },
    },
    {
      name: 'lib-imports-no-test-code',
      severity: 'error',
      comment: 'The published library never loads tests, benches, samples or scenarios.',
      from: { path: '^lib/' },
      to: { path: '^(test|bench|sample-app|scenarios|load)/' },
    },
    {
      name: 'no-orphans',
      severity: 'error',
      comment: 'A module of lib/ that nothing imports and that imports nothing is dead code, or missing from index.ts.',
      from: { orphan: true, path: '^lib/', pathNot: '^lib/index[.]ts$' },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '[.]spec[.]ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default', 'types'] },
  },
};
