/**
 * The layers of lib/, checked by `npm run lint:deps`: one rule per folder,
 * naming the folders it may import (its own files aside). From the bottom up:
 *
 * - kernel: clock, scopes and cancellation, errors, events, outcome classification, the policy contract;
 * - config: the generic toolkit of options (durations, schemas, relaxed binding, exception lists and
 *   their matcher, which knows no Java name: a binding maps names to classes when options are read);
 * - spring/exceptions: the table of Java exception names and the classes standing for them, which the
 *   registry binds into every option's exception lists (a resilience4j block may be passed as options);
 * - decorators: the trampoline and the metadata every decorator records;
 * - engine: what a call through the policies means, for every kind of method, for code pipelines and
 *   for one policy's `execute`, written against the hooks it asks of each policy (engine/layers.ts);
 * - policies/<name>: one folder per policy, its state machine, config, events, decorator and messages;
 *   its `execute` runs the engine over it alone;
 * - the features the registry builds on: fault injection, transactions, load shedding;
 * - registry: the named instances and the pipelines made from them;
 * - idempotency, then outbox: features on top of the registry;
 * - stores: the PostgreSQL and Redis adapters of the store interfaces;
 * - observability: metrics, health, tracing and logs, listening to what is below;
 * - options: the module options, assembled from every section;
 * - spring: application.yml, its placeholders and its binding to the options;
 * - testing: the testing kit;
 * - nest: the module, its explorer and the exception filter, which wire all of it;
 * - index.ts, the public surface.
 */
const LAYERS = {
  kernel: [],
  config: ['kernel'],
  'spring/exceptions': ['kernel', 'config'],
  decorators: ['kernel', 'config'],
  engine: ['kernel', 'config', 'decorators'],
  policies: ['kernel', 'config', 'decorators', 'engine'],
  'features/fault-injection': ['kernel', 'config'],
  'features/transaction': ['kernel', 'config'],
  'features/load-shedding': ['kernel', 'config'],
  registry: ['kernel', 'config', 'policies', 'engine', 'features/fault-injection', 'spring/exceptions'],
  'features/idempotency': ['kernel', 'config', 'decorators', 'registry', 'features/transaction', 'spring/exceptions'],
  'features/outbox': ['kernel', 'config', 'policies', 'registry', 'features/transaction', 'features/idempotency'],
  stores: ['kernel', 'config', 'policies', 'features'],
  observability: ['kernel', 'config', 'policies', 'registry', 'features'],
  options: ['kernel', 'config', 'policies', 'registry', 'features', 'observability'],
  spring: ['kernel', 'config', 'registry', 'options'],
  testing: ['kernel', 'registry', 'observability'],
  nest: ['kernel', 'config', 'decorators', 'policies', 'engine', 'registry', 'features', 'observability', 'options'],
};

/** Folders that know nothing of Nest: the kernel, the policies and what composes them. */
const NEST_FREE = ['kernel', 'config', 'policies', 'engine', 'registry', 'stores', 'options', 'spring', 'testing'];

const folder = (name) => `^lib/${name}/`;

/** A folder's one rule: it imports nothing in lib/ but its own files and the folders its layer lists. */
const layerRule = ([name, allowed]) => ({
  name: `layer-${name.replace('/', '-')}`,
  severity: 'error',
  comment: `lib/${name}/ imports only ${allowed.length === 0 ? 'its own files' : allowed.map((a) => `${a}/`).join(', ')}.`,
  // A policy's folder is its own: policies do not import each other.
  from: { path: name === 'policies' ? '^lib/policies/([^/]+)/' : folder(name) },
  to: {
    path: '^lib/',
    pathNot: [name === 'policies' ? '^lib/policies/$1/' : folder(name), ...allowed.map(folder)],
  },
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...Object.entries(LAYERS).map(layerRule),
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
      name: 'nest-free-core',
      severity: 'error',
      comment:
        'The kernel, the policies, the engine, the registry, the stores and the Spring binding know nothing of Nest.',
      from: { path: `^lib/(${NEST_FREE.join('|')})/` },
      to: { path: '^node_modules/@nestjs/' },
    },
    {
      name: 'drivers-in-stores',
      severity: 'error',
      comment: 'Only the store adapters may load a database driver.',
      from: { path: '^lib/', pathNot: folder('stores') },
      to: { path: '^node_modules/(pg|ioredis)/' },
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
