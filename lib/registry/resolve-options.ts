import { BULKHEAD_SCHEMA, BulkheadConfig } from '../policies/bulkhead/bulkhead.config';
import {
  asBulkhead,
  THREAD_POOL_BULKHEAD_SCHEMA,
  ThreadPoolBulkheadConfig,
} from '../policies/bulkhead/thread-pool-bulkhead.config';
import { CIRCUIT_BREAKER_SCHEMA, CircuitBreakerConfig } from '../policies/circuit-breaker/circuit-breaker.config';
import { Clock, systemClock } from '../kernel/clock';
import { orderFromAspectOrders } from '../config/aspect-order';
import { checkDocument } from '../config/document-limits';
import {
  ASPECT_ORDER_DIFFERS,
  DUPLICATE_PROPERTY,
  IGNORED_SECTION,
  IGNORED_UNKNOWN_SECTION,
  INVALID_VALUE,
  NOT_AN_OBJECT,
  THREAD_POOL_BULKHEAD_MAPPED,
  UNKNOWN_SECTION,
  WHOLE_DOCUMENT_HINT,
} from '../config/config.messages';
import {
  booleanOption,
  durationOption,
  enumOption,
  GivenOptions,
  headerNameOption,
  integerOption,
  invalidOption,
} from '../config/option-readers';
import { canonicalKey, findKey, setOwn, unflatten } from '../config/relaxed-binding';
import { isPlainObject } from '../config/plain-object';
import { IGNORED_SECTIONS } from '../config/resilience4j-properties';
import { RESILIENCE4J_DEFAULTS } from '../config/resilience4j-defaults';
import { NATIVE_BINDING, PolicySchema, resolveSection, ResolvedSection, SectionBinding } from '../config/schema';
import { JAVA_ERROR_NAMES } from '../spring/exceptions/java-exceptions';
import { DEFAULT_DEADLINE_HEADER } from '../kernel/context';
import { RATE_LIMITER_SCHEMA, RateLimiterConfig } from '../policies/rate-limiter/rate-limiter.config';
import { DEFAULT_ORDER, PolicyKind } from '../kernel/resilience.constants';
import { RegistryOptions } from './registry.options';
import { RETRY_SCHEMA, RetryConfig } from '../policies/retry/retry.config';
import { HEDGE_SCHEMA, HedgeConfig } from '../policies/hedge/hedge.config';
import { CACHE_SCHEMA, CacheConfig } from '../policies/cache/cache.config';
import { readFaultInjectionOptions, ResolvedFaultInjection } from '../features/fault-injection/fault-injection.options';
import { TIME_LIMITER_SCHEMA, TimeLimiterConfig } from '../policies/time-limiter/time-limiter.config';

/** The policies configured as named instances. */
export interface PolicyConfigs {
  retry: RetryConfig;
  circuitBreaker: CircuitBreakerConfig;
  bulkhead: BulkheadConfig;
  timeLimiter: TimeLimiterConfig;
  rateLimiter: RateLimiterConfig;
}

/** A policy that has named instances. */
export type InstancePolicy = keyof PolicyConfigs;

/** Schemas of the instance policies, by section name. */
export const POLICY_SCHEMAS: { readonly [P in InstancePolicy]: PolicySchema<PolicyConfigs[P]> } = {
  retry: RETRY_SCHEMA,
  circuitBreaker: CIRCUIT_BREAKER_SCHEMA,
  bulkhead: BULKHEAD_SCHEMA,
  timeLimiter: TIME_LIMITER_SCHEMA,
  rateLimiter: RATE_LIMITER_SCHEMA,
};

/** Module options after parsing and validation. */
export interface ResolvedOptions {
  readonly strict: boolean;
  readonly maxUndeclaredInstances: number;
  readonly clock: Clock;
  readonly random: () => number;
  readonly order: readonly PolicyKind[];
  readonly deadline: {
    /** Whether the options have a `deadline` key: only then is the inbound scope installed and the header read. */
    readonly inbound: boolean;
    readonly header: string;
    readonly defaultBudget?: number;
    readonly maxBudget?: number;
    readonly attemptContext: 'auto' | 'always';
  };
  readonly sections: { readonly [P in InstancePolicy]: ResolvedSection<PolicyConfigs[P]> };
  /** The thread-pool bulkheads, as the bulkheads they run as (`@Bulkhead(name, { type: 'THREADPOOL' })`). */
  readonly threadPoolBulkhead: ResolvedSection<BulkheadConfig>;
  /** The hedge instances and configs (section `hedging`). */
  readonly hedging: ResolvedSection<HedgeConfig>;
  /** The cache instances and configs (section `cache`). */
  readonly cache: ResolvedSection<CacheConfig>;
  /** The faults configured, and whether fault injection is on (section `faultInjection`). */
  readonly faultInjection: ResolvedFaultInjection;
  /** How the options were bound: `native` (forRoot's own options) or `spring` (an application.yml, see fromSpringConfig). */
  readonly binding: 'native' | 'spring';
  /** What an unknown key does: fail (`error`) or warn and be ignored (`warn`). */
  readonly unknownKeys: 'error' | 'warn';
  /** Sections owned by other parts of the module (idempotency, metrics), passed through as given. */
  readonly extras: Readonly<Record<string, unknown>>;
}

const POLICY_NAMES = Object.keys(POLICY_SCHEMAS) as InstancePolicy[];
const MODULE_OPTIONS = 'module options';
const atLeastOne = integerOption(1);
const PLAIN_KEYS = [
  'strict',
  'maxUndeclaredInstances',
  'clock',
  'random',
  'order',
  'deadline',
  'binding',
  'unknownKeys',
];
const readBinding = enumOption(['native', 'spring'] as const);
const readUnknownKeys = enumOption(['error', 'warn'] as const);

/** Undeclared instances allowed per policy when `maxUndeclaredInstances` is not given. */
export const DEFAULT_MAX_UNDECLARED_INSTANCES = 100;

/** Sections read by other parts of the module, which validate them. */
const EXTRA_SECTIONS = [
  'idempotency',
  'metrics',
  'health',
  'logging',
  'loadShedding',
  'rateLimiterStore',
  'circuitBreakerStore',
  'tracing',
  'outbox',
  'reload',
];

/** Sections of this module's own, read here with the same unknown-key rule as the policy sections. */
const MODULE_SECTIONS = ['hedging', 'cache', 'faultInjection'];

/**
 * Parses and validates module options. Throws one error naming the policy,
 * instance, key and bad value; warns once per Resilience4j property that is
 * accepted without effect. Accepts every shape Spring's relaxed binding
 * accepts: dotted keys at any depth, any case style, a `resilience4j` root.
 */
export function resolveOptions(options: RegistryOptions | undefined, warn: (message: string) => void): ResolvedOptions {
  const given: unknown = options ?? {};
  if (given === null || typeof given !== 'object' || Array.isArray(given))
    throw new Error(NOT_AN_OBJECT('module options', given));
  checkDocument(given, MODULE_OPTIONS);
  const raw = hoistResilience4j(unflatten(given) as Record<string, unknown>);
  const sectionsRaw: Partial<Record<InstancePolicy, unknown>> = {};
  const plain: Record<string, unknown> = {};
  const extras: Record<string, unknown> = {};
  const moduleSections: Record<string, unknown> = {};
  let threadPoolRaw: unknown;
  const unknownSections: string[] = [];
  for (const [rawKey, value] of Object.entries(raw)) {
    const policy = findKey(rawKey, POLICY_NAMES);
    const key = findKey(rawKey, [...PLAIN_KEYS, ...EXTRA_SECTIONS]);
    const own = findKey(rawKey, MODULE_SECTIONS);
    if (own !== undefined) {
      if (moduleSections[own] !== undefined)
        throw new Error(
          INVALID_VALUE('module options', rawKey, `given once (also given as another spelling of '${own}')`, value),
        );
      moduleSections[own] = value;
    } else if (policy !== undefined) {
      if (sectionsRaw[policy] !== undefined)
        throw new Error(
          INVALID_VALUE('module options', rawKey, `given once (also given as another spelling of '${policy}')`, value),
        );
      sectionsRaw[policy] = value;
    } else if (key !== undefined && PLAIN_KEYS.includes(key)) plain[key] = value;
    else if (key !== undefined) extras[key] = value;
    else if (findKey(rawKey, ['threadPoolBulkhead']) !== undefined) {
      if (threadPoolRaw !== undefined)
        throw new Error(
          INVALID_VALUE(
            'module options',
            rawKey,
            "given once (also given as another spelling of 'threadPoolBulkhead')",
            value,
          ),
        );
      threadPoolRaw = value;
    } else unknownSections.push(rawKey);
  }
  const binding = plain.binding === undefined ? 'native' : readBinding(plain.binding, MODULE_OPTIONS, 'binding');
  const unknownKeys =
    plain.unknownKeys === undefined
      ? binding === 'spring'
        ? 'warn'
        : 'error'
      : readUnknownKeys(plain.unknownKeys, MODULE_OPTIONS, 'unknownKeys');
  // Java exception names are bound in code-written options too: the contract lets a resilience4j block be passed as they are.
  const sectionBinding: SectionBinding =
    binding === 'spring'
      ? { unknownKeys, spring: true, errorNames: JAVA_ERROR_NAMES }
      : { ...NATIVE_BINDING, unknownKeys, errorNames: JAVA_ERROR_NAMES };
  for (const rawKey of unknownSections) checkUnknownSection(rawKey, unknownKeys, warn);
  const sections = {} as { [P in InstancePolicy]: ResolvedSection<PolicyConfigs[P]> };
  for (const policy of POLICY_NAMES) {
    (sections as Record<InstancePolicy, unknown>)[policy] = resolveSection(
      POLICY_SCHEMAS[policy] as PolicySchema<object>,
      sectionsRaw[policy],
      warn,
      binding === 'spring' ? { ...sectionBinding, defaults: RESILIENCE4J_DEFAULTS[policy] } : sectionBinding,
    );
  }
  const threadPoolBulkhead = threadPoolBulkheads(
    resolveSection(THREAD_POOL_BULKHEAD_SCHEMA, threadPoolRaw, warn, sectionBinding),
    warn,
  );
  const hedging = resolveSection(HEDGE_SCHEMA, moduleSections.hedging, warn, sectionBinding);
  const cache = resolveSection(CACHE_SCHEMA, moduleSections.cache, warn, sectionBinding);
  const faultInjection = readFaultInjectionOptions(moduleSections.faultInjection, { rule: unknownKeys, warn });
  const order = readOrder(plain.order);
  const spring = orderFromAspectOrders(sectionsRaw, order);
  if (spring !== undefined) warn(ASPECT_ORDER_DIFFERS(spring, order));
  return {
    strict: plain.strict === undefined ? false : booleanOption(plain.strict, MODULE_OPTIONS, 'strict'),
    maxUndeclaredInstances:
      plain.maxUndeclaredInstances === undefined
        ? DEFAULT_MAX_UNDECLARED_INSTANCES
        : atLeastOne(plain.maxUndeclaredInstances, MODULE_OPTIONS, 'maxUndeclaredInstances'),
    clock: readClock(plain.clock),
    random: readRandom(plain.random),
    order,
    deadline: readDeadline(plain.deadline),
    sections,
    threadPoolBulkhead,
    hedging,
    cache,
    faultInjection,
    binding,
    unknownKeys,
    extras,
  };
}

/** A top-level key that is no section: a Resilience4j section with no equivalent (a warning), else an error or, as Spring's binder does, a warning. */
function checkUnknownSection(rawKey: string, unknownKeys: 'error' | 'warn', warn: (message: string) => void): void {
  const ignored = findKey(rawKey, Object.keys(IGNORED_SECTIONS));
  if (ignored !== undefined) return warn(IGNORED_SECTION(rawKey, IGNORED_SECTIONS[ignored]));
  const known = [...POLICY_NAMES, 'threadPoolBulkhead', ...PLAIN_KEYS, ...MODULE_SECTIONS, ...EXTRA_SECTIONS];
  const wholeDocument = findKey(rawKey, SPRING_ROOTS) !== undefined;
  if (unknownKeys === 'error' || wholeDocument)
    throw new Error(UNKNOWN_SECTION(rawKey, known) + (wholeDocument ? WHOLE_DOCUMENT_HINT : ''));
  warn(IGNORED_UNKNOWN_SECTION(rawKey, known));
}

/**
 * The sections of Spring-shaped options under this module's names
 * (`circuitbreaker` → `circuitBreaker`, `thread-pool-bulkhead` →
 * `threadPoolBulkhead`); keys inside them stay as written, so messages quote
 * them as the file does.
 */
export function withSectionNames(raw: Record<string, unknown>): Record<string, unknown> {
  const names = [...POLICY_NAMES, 'threadPoolBulkhead', ...PLAIN_KEYS, ...MODULE_SECTIONS, ...EXTRA_SECTIONS];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const name = findKey(key, names) ?? key;
    if (Object.hasOwn(out, name))
      throw new Error(
        INVALID_VALUE('module options', key, `given once (also given as another spelling of '${name}')`, value),
      );
    setOwn(out, name, value);
  }
  return out;
}

/** Top-level keys of a Spring document that are not Resilience4j's: passed to forRoot, they mean a whole document was given. */
const SPRING_ROOTS = ['spring', 'server', 'management', 'info', 'eureka', 'feign'];

/** `{ resilience4j: { retry } }` (what `resilience4j.retry:` unflattens to) is read as `{ retry }`. */
function hoistResilience4j(raw: Record<string, unknown>): Record<string, unknown> {
  const rootKey = Object.keys(raw).find((k) => canonicalKey(k) === 'resilience4j');
  if (rootKey === undefined) return raw;
  const inner = raw[rootKey];
  if (!isPlainObject(inner)) throw new Error(NOT_AN_OBJECT('module options (resilience4j)', inner));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) if (key !== rootKey) setOwn(out, key, value);
  for (const [key, value] of Object.entries(inner)) {
    if (Object.hasOwn(out, key)) throw new Error(DUPLICATE_PROPERTY(key));
    setOwn(out, key, value);
  }
  return out;
}

/** The bulkheads that thread-pool bulkheads run as: `maxThreadPoolSize` calls at once, `queueCapacity` waiting. */
function threadPoolBulkheads(
  threadPool: ResolvedSection<ThreadPoolBulkheadConfig>,
  warn: (message: string) => void,
): ResolvedSection<BulkheadConfig> {
  const instances = new Map<string, BulkheadConfig>();
  for (const [name, config] of threadPool.instances) instances.set(name, Object.freeze(asBulkhead(config)));
  if (threadPool.instances.size > 0) warn(THREAD_POOL_BULKHEAD_MAPPED([...threadPool.instances.keys()]));
  return { defaultConfig: Object.freeze(asBulkhead(threadPool.defaultConfig)), instances, keys: threadPool.keys };
}

function readClock(value: unknown): Clock {
  if (value === undefined) return systemClock;
  const clock = value as Partial<Clock>;
  if (
    typeof clock !== 'object' ||
    typeof clock.now !== 'function' ||
    typeof clock.setTimeout !== 'function' ||
    typeof clock.clearTimeout !== 'function'
  ) {
    invalidOption(MODULE_OPTIONS, 'clock', 'an object with now(), setTimeout() and clearTimeout()', value);
  }
  return value as Clock;
}

function readRandom(value: unknown): () => number {
  if (value === undefined) return Math.random;
  if (typeof value !== 'function')
    invalidOption(MODULE_OPTIONS, 'random', 'a function returning a number in [0, 1)', value);
  return value as () => number;
}

function readOrder(value: unknown): readonly PolicyKind[] {
  if (value === undefined) return DEFAULT_ORDER;
  const expected = `a list naming each of ${DEFAULT_ORDER.map((k) => `'${k}'`).join(', ')} exactly once`;
  if (!Array.isArray(value) || value.length !== DEFAULT_ORDER.length)
    invalidOption(MODULE_OPTIONS, 'order', expected, value);
  const order = (value as unknown[]).map((v) => (typeof v === 'string' ? (findKey(v, DEFAULT_ORDER) ?? v) : v));
  const known = new Set<unknown>(DEFAULT_ORDER);
  if (new Set(order).size !== order.length || order.some((k) => !known.has(k)))
    invalidOption(MODULE_OPTIONS, 'order', expected, value);
  return order as PolicyKind[];
}

const budget = durationOption({ positive: true, expected: 'a positive duration' });
const attemptContextOption = enumOption(['auto', 'always'] as const);

function readDeadline(value: unknown): ResolvedOptions['deadline'] {
  if (value === undefined || value === null)
    return { inbound: false, header: DEFAULT_DEADLINE_HEADER, attemptContext: 'auto' };
  const given = new GivenOptions(value, 'deadline options', ['header', 'defaultBudget', 'maxBudget', 'attemptContext']);
  return {
    inbound: true,
    header: given.read('header', headerNameOption)?.toLowerCase() ?? DEFAULT_DEADLINE_HEADER,
    defaultBudget: given.read('defaultBudget', budget),
    maxBudget: given.read('maxBudget', budget),
    attemptContext: given.read('attemptContext', attemptContextOption) ?? 'auto',
  };
}
