import { readFaultInjectionOptions } from '../../lib/features/fault-injection/fault-injection.options';
import { Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  CircuitBreakerStore,
  DEFAULT_MAX_DEADLINE_BUDGET_MS,
  MemoryIdempotencyStore,
  parseDuration,
  RateLimiterStore,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  systemClock,
  VirtualClock,
} from '../../lib';
import { checkIdempotentOptions, resolveIdempotencyOptions } from '../../lib/features/idempotency/idempotency.options';
import { readLoadSheddingOptions } from '../../lib/features/load-shedding/load-shedding.options';
import {
  readEndpointsOptions,
  readHealthOptions,
  readLoggingOptions,
  readMetricsOptions,
} from '../../lib/observability/observability.options';
import { readTracingOptions } from '../../lib/observability/tracing/tracing.options';
import { checkMarkdownSnippets } from '../support/markdown-snippets';

const DOC = 'docs/configuration.md';
const text = readFileSync(join(__dirname, '..', '..', DOC), 'utf8');

/** A key no validator knows and none is close to, so its error lists the known keys. */
const PROBE = 'zzzzzzzzzzzzprobe';
const noWarnings = (): void => undefined;

type Settings = Record<string, unknown>;

/** One section of the reference: the validator that reads it, and its resolved defaults. */
interface Section {
  /** The `## ` heading of the section in docs/configuration.md. */
  readonly heading: string;
  /** Validates settings of the section as the module does; throws on a bad or unknown key. */
  readonly validate: (settings: Settings) => unknown;
  /** The resolved settings when nothing (or only what is required) is given. */
  readonly defaults: () => Settings;
  /** Documented key → field of the resolved settings, where the names differ (beyond a `Ms` suffix). */
  readonly aliases?: Readonly<Record<string, string>>;
}

const POLICY_SECTIONS = ['retry', 'circuitBreaker', 'bulkhead', 'threadPoolBulkhead', 'timeLimiter', 'rateLimiter'];

/** A store for the `shared: true` example, which needs one; never called. */
const unusedStore: RateLimiterStore = { acquire: () => Promise.reject(new Error('not called')) };

/** A store for the `shared: { quorum }` example of a circuit breaker, which needs one; it never answers. */
const unusedBreakerStore: CircuitBreakerStore = {
  reportOpen: () => Promise.reject(new Error('not called')),
  publish: () => Promise.reject(new Error('not called')),
  claimProbe: () => Promise.reject(new Error('not called')),
  releaseProbe: () => Promise.reject(new Error('not called')),
  read: () => new Promise(() => undefined),
  listen: () => new Promise(() => undefined),
};

/** The module options as `forRoot` reads them (`ResilienceRegistry` validates them when built). */
const resolveOptions = (options: ResilienceModuleOptions | undefined) =>
  new ResilienceRegistry(options, noWarnings).options;

const policySection = (policy: string): Section => ({
  heading: policy,
  validate: (settings) =>
    resolveOptions({
      [policy]: { instances: { probe: settings } },
      rateLimiterStore: unusedStore,
      circuitBreakerStore: unusedBreakerStore,
    }),
  defaults: () => {
    const resolved = resolveOptions({
      [policy]: { instances: { probe: {} } },
      threadPoolBulkhead: { instances: { pool: {} } },
    });
    if (policy !== 'threadPoolBulkhead')
      return resolved.sections[policy as keyof typeof resolved.sections].defaultConfig as unknown as Settings;
    // A thread-pool bulkhead resolves to the bulkhead it runs as.
    const pool = resolved.threadPoolBulkhead.instances.get('pool')!;
    return {
      maxThreadPoolSize: pool.maxConcurrentCalls,
      queueCapacity: pool.queueCapacity,
      writableStackTraceEnabled: pool.writableStackTraceEnabled,
    };
  },
});

const SECTIONS: readonly Section[] = [
  {
    heading: 'Top level',
    validate: (settings) => resolveOptions(settings),
    defaults: () => {
      const resolved = resolveOptions(undefined);
      return { ...resolved, ...resolved.extras };
    },
  },
  ...POLICY_SECTIONS.map(policySection),
  {
    heading: 'tracing',
    validate: (settings) => readTracingOptions(settings),
    defaults: () => readTracingOptions(undefined) as unknown as Settings,
  },
  {
    heading: 'hedging',
    validate: (settings) => new ResilienceRegistry({ hedging: { instances: { probe: settings } } }, noWarnings),
    defaults: () =>
      new ResilienceRegistry({ hedging: { instances: { probe: {} } } }, noWarnings).hedge('probe')
        .config as unknown as Settings,
  },
  {
    heading: 'cache',
    validate: (settings) => new ResilienceRegistry({ cache: { instances: { probe: settings } } }, noWarnings),
    defaults: () =>
      new ResilienceRegistry({ cache: { instances: { probe: {} } } }, noWarnings).cache('probe')
        .config as unknown as Settings,
  },
  {
    heading: 'idempotency',
    validate: (settings) => closeStore(resolveIdempotencyOptions(settings, systemClock)),
    defaults: () => closeStore(resolveIdempotencyOptions(undefined, systemClock)) as unknown as Settings,
    aliases: { header: 'headerLabel' },
  },
  {
    heading: '@Idempotent options',
    validate: (settings) => checkIdempotentOptions(settings, '@Idempotent on Reference.method'),
    defaults: () => checkIdempotentOptions(undefined, '@Idempotent on Reference.method') as unknown as Settings,
  },
  {
    heading: 'metrics',
    validate: (settings) => readMetricsOptions(settings),
    defaults: () => readMetricsOptions(undefined) as unknown as Settings,
  },
  {
    heading: 'health',
    validate: (settings) => readHealthOptions(settings),
    defaults: () => readHealthOptions({ fallbackShare: { threshold: 50 } }) as unknown as Settings,
  },
  {
    heading: 'logging',
    validate: (settings) => readLoggingOptions(settings),
    defaults: () => readLoggingOptions(undefined) as unknown as Settings,
  },
  {
    heading: 'faultInjection',
    validate: (settings) => readFaultInjectionOptions(settings),
    defaults: () => readFaultInjectionOptions({}) as unknown as Settings,
  },
  {
    heading: 'loadShedding',
    validate: (settings) => readLoadSheddingOptions(settings),
    defaults: () =>
      readLoadSheddingOptions({ adaptive: {}, eventLoopDelay: { threshold: 100 } }) as unknown as Settings,
    aliases: { priorities: 'shares' },
  },
  {
    heading: 'ResilienceEndpointsModule',
    validate: (settings) => readEndpointsOptions(settings),
    defaults: () =>
      readEndpointsOptions({ metrics: {}, status: { guards: [EXAMPLE_SCOPE.OperatorGuard] } }) as unknown as Settings,
    aliases: { writable: 'writableGuards' },
  },
];

/** Defaults that are not a literal: each documented cell is checked against the code by its own rule. */
const SPECIAL_DEFAULTS: Readonly<Record<string, (resolved: unknown, cell: string) => boolean>> = {
  'Top level.clock': (resolved) => resolved === systemClock,
  'Top level.random': (resolved) => resolved === Math.random,
  // Resolved as absent; the deadline interceptor applies the constant.
  'Top level.deadline.maxBudget': (resolved, cell) =>
    resolved === undefined && parseDuration(codeOf(cell)) === DEFAULT_MAX_DEADLINE_BUDGET_MS,
  'threadPoolBulkhead.maxThreadPoolSize': (resolved) => resolved === availableParallelism(),
  'idempotency.store': (resolved) => resolved instanceof MemoryIdempotencyStore,
  'metrics.enabled': (resolved) => resolved === 'auto',
  'tracing.enabled': (resolved) => resolved === 'auto',
  'faultInjection.instances': (resolved) => resolved instanceof Map && resolved.size === 0,
};

/** Names an example cell may use. */
const EXAMPLE_SCOPE: Readonly<Record<string, unknown>> = {
  VirtualClock,
  OperatorGuard: class OperatorGuard {
    canActivate(): boolean {
      return true;
    }
  },
};

function closeStore<T extends { store: unknown }>(resolved: T): T {
  (resolved.store as { close?: () => void }).close?.();
  return resolved;
}

interface Row {
  readonly key: string;
  readonly meaning: string;
  readonly defaultCell: string;
  readonly resilience4j: string;
  readonly example: string;
}

/** The option rows of the table(s) under `## heading`, by key. */
function rowsOf(heading: string): Map<string, Row> {
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`${DOC} has no section '## ${heading}'`);
  const end = text.indexOf('\n## ', start + 1);
  const body = text.slice(start, end < 0 ? undefined : end);
  const rows = new Map<string, Row>();
  for (const line of body.split('\n')) {
    const match = /^\| `([^`]+)` \|/.exec(line);
    if (match === null) continue;
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    expect(cells).toHaveLength(5);
    const [, meaning, defaultCell, resilience4j, example] = cells;
    rows.set(match[1], { key: match[1], meaning, defaultCell, resilience4j, example });
  }
  return rows;
}

/** What a validator's error for an unknown key lists as known, or undefined when it threw for another reason. */
function knownKeys(validate: () => unknown): string[] | undefined {
  try {
    validate();
  } catch (error) {
    const message = (error as Error).message;
    if (!message.includes(`${PROBE}'`)) return undefined;
    const known = /\(known keys: ([^)]*)\)/.exec(message);
    if (known === null) throw new Error(`no list of known keys in: ${message}`, { cause: error });
    return known[1].split(', ');
  }
  return undefined;
}

function nest(path: string, value: unknown): Settings {
  const parts = path.split('.');
  return parts.reduceRight<unknown>((inner, part) => ({ [part]: inner }), value) as Settings;
}

/** Every key the section's validator accepts, nested ones as `parent.child`, derived by probing it. */
function acceptedKeys(section: Section, prefix = '', depth = 0): string[] {
  const probe = prefix === '' ? { [PROBE]: 1 } : nest(prefix, { [PROBE]: 1 });
  const known = knownKeys(() => section.validate(probe));
  if (known === undefined) throw new Error(`${section.heading}: probing '${prefix}' listed no keys`);
  // Sections named at the top level are documented under their own headings.
  const ownSection = (key: string): boolean => prefix === '' && SECTIONS.some((s) => s.heading === key);
  return known
    .filter((key) => key !== 'baseConfig' && !(section.heading === 'Top level' && ownSection(key)))
    .flatMap((key) => {
      const path = prefix === '' ? key : `${prefix}.${key}`;
      const nested = depth < 2 && knownKeys(() => section.validate(nest(path, { [PROBE]: 1 }))) !== undefined;
      return nested ? acceptedKeys(section, path, depth + 1) : [path];
    });
}

function resolvedAt(section: Section, resolved: Settings, path: string): unknown {
  let value: unknown = resolved;
  for (const part of path.split('.')) {
    // A value that is not an object (a breaker's `shared: false`) has no nested key.
    if (value === null || typeof value !== 'object') return undefined;
    const record = value as Settings;
    const alias = section.aliases?.[part];
    value = alias !== undefined ? record[alias] : part in record ? record[part] : record[`${part}Ms`];
  }
  return value;
}

function codeOf(cell: string): string {
  const match = /^`([^`]+)`$/.exec(cell);
  return match === null ? '' : match[1];
}

/** A literal default cell as the resolved value it stands for: a duration in ms, JSON, or the text. */
function literal(code: string): unknown {
  if (/^\d+(\.\d+)?\s*[a-z]+$/i.test(code) && parseDuration(code) !== undefined) return parseDuration(code);
  try {
    return JSON.parse(code);
  } catch {
    return code;
  }
}

function sameValue(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'number' && typeof actual === 'number')
    return Math.abs(expected - actual) <= 1e-9 * Math.max(1, Math.abs(actual));
  return isDeepStrictEqual(expected, Array.isArray(actual) ? [...actual] : actual);
}

/** The example cell's value, or undefined when it uses a name the examples' scope does not have (e.g. a client). */
function exampleValue(cell: string): { value: unknown } | undefined {
  const code = codeOf(cell);
  if (code === '') throw new Error(`example cell is not one code span: ${cell}`);
  try {
    const names = Object.keys(EXAMPLE_SCOPE);
    // The example is code written in the doc: evaluating it is what this check is for.
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    const make = new Function(...names, `return (${code});`) as (...scope: unknown[]) => unknown;
    return { value: make(...names.map((n) => EXAMPLE_SCOPE[n])) };
  } catch (error) {
    if (error instanceof ReferenceError) return undefined;
    throw error;
  }
}

/** Settings with `value` at `key`; a nested key gets its siblings' examples, since some objects need all their keys. */
function settingsWith(rows: ReadonlyMap<string, Row>, key: string, value: unknown): Settings {
  const parent = key.includes('.') ? key.slice(0, key.indexOf('.')) : undefined;
  if (parent === undefined) return { [key]: value };
  const settings: Settings = {};
  for (const row of rows.values()) {
    if (!row.key.startsWith(`${parent}.`)) continue;
    const given = row.key === key ? { value } : exampleValue(row.example);
    if (given === undefined) continue;
    const parts = row.key.split('.');
    let at = settings;
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Settings;
    at[parts[parts.length - 1]] = given.value;
  }
  return settings;
}

describe(`${DOC}: the configuration reference`, () => {
  describe.each(SECTIONS.map((s) => [s.heading, s] as const))('## %s', (_, section) => {
    const rows = rowsOf(section.heading);

    it('has a row for every key the validator accepts, and none for a key it refuses', () => {
      expect([...rows.keys()].sort()).toEqual(acceptedKeys(section).sort());
    });

    it('prints the defaults the code resolves', () => {
      const resolved = section.defaults();
      const wrong: string[] = [];
      for (const row of rows.values()) {
        const id = `${section.heading}.${row.key}`;
        const value = resolvedAt(section, resolved, row.key);
        const special = SPECIAL_DEFAULTS[id];
        const code = codeOf(row.defaultCell);
        let ok: boolean;
        if (special !== undefined) ok = special(value, row.defaultCell);
        else if (row.defaultCell === 'required') {
          const parent = row.key.includes('.') ? row.key.slice(0, row.key.lastIndexOf('.')) : undefined;
          // Given without it, its parent is refused with a message naming it.
          try {
            section.validate(parent === undefined ? {} : nest(parent, {}));
            ok = false;
          } catch (error) {
            ok = (error as Error).message.includes(`'${row.key.split('.').pop()!}'`);
          }
        } else if (row.defaultCell === 'none')
          ok =
            value === undefined || value === Number.POSITIVE_INFINITY || (Array.isArray(value) && value.length === 0);
        else if (code !== '') ok = sameValue(literal(code), value);
        // A default in words (e.g. "the module's `ttl`") is computed elsewhere: the resolved settings leave it unset.
        else ok = value === undefined;
        if (!ok) wrong.push(`${row.key}: documented ${row.defaultCell}, resolved ${String(value)}`);
      }
      expect(wrong).toEqual([]);
    });

    it('has examples the validator accepts', () => {
      const refused: string[] = [];
      for (const row of rows.values()) {
        const example = exampleValue(row.example);
        if (example === undefined) continue;
        try {
          section.validate(settingsWith(rows, row.key, example.value));
        } catch (error) {
          refused.push(`${row.key}: ${(error as Error).message}`);
        }
      }
      expect(refused).toEqual([]);
    });

    it('says "positive" of every duration that refuses 0, and of no other duration', () => {
      const accepts = (key: string, value: unknown): boolean => {
        try {
          section.validate(settingsWith(rows, key, value));
          return true;
        } catch {
          return false;
        }
      };
      const wrong = [...rows.values()]
        .filter((row) => accepts(row.key, '1h') && !accepts(row.key, 'soon'))
        .filter((row) => /\bpositive\b/.test(row.meaning) === accepts(row.key, 0))
        .map((row) => `${row.key}: ${accepts(row.key, 0) ? 'accepts' : 'refuses'} 0`);
      expect(wrong).toEqual([]);
    });

    if (POLICY_SECTIONS.includes(section.heading)) {
      it("names the option's Resilience4j property, or says it is ours", () => {
        const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
        const wrong = [...rows.values()]
          .filter((row) => !row.resilience4j.startsWith('ours') && row.resilience4j !== `\`${kebab(row.key)}\``)
          .map((row) => `${row.key}: ${row.resilience4j}`);
        expect(wrong).toEqual([]);
      });
    }
  });

  it('explains baseConfig, durations, decorator overrides and fromSpringConfig', () => {
    for (const heading of [
      'How options are written',
      'Named configs and instances',
      'Decorator overrides',
      'Spring Boot files: `fromSpringConfig`',
    ])
      expect(text).toContain(`\n## ${heading}\n`);
    expect(text).toContain('`baseConfig`');
  });

  it('has TypeScript snippets that compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets(DOC);
    expect(blocks).toBeGreaterThanOrEqual(4);
    expect(diagnostics).toEqual([]);
  });

  it('has TypeScript snippets that boot: each module, and each provider under ResilienceModule.forRoot()', async () => {
    // Blocks reading a file of the reader's (an application.yml) only compile here.
    const blocks = [...text.matchAll(/```ts[^\n]*\n([\s\S]*?)```/g)]
      .map((m) => m[1])
      .filter((b) => !b.includes('readFileSync('));
    const dir = mkdtempSync(join(__dirname, '..', '..', 'docs', 'examples', '.configuration-run-'));
    let booted = 0;
    try {
      for (const [i, code] of blocks.entries()) {
        const file = join(dir, `snippet-${i}.ts`);
        writeFileSync(file, code);
        const exported = Object.values((await import(file)) as Record<string, unknown>) as Type[];
        for (const cls of exported) {
          const isModule = Reflect.getMetadata('imports', cls) !== undefined;
          const isProvider = Reflect.getMetadata('__injectable__', cls) === true;
          if (!isModule && !isProvider) continue;
          const moduleRef = await Test.createTestingModule(
            isModule ? { imports: [cls] } : { imports: [ResilienceModule.forRoot()], providers: [cls] },
          ).compile();
          await moduleRef.init(); // builds every decorated method's pipeline, overrides included
          await moduleRef.close();
          booted++;
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(booted).toBe(blocks.length);
  });
});
