import { BULKHEAD_SCHEMA, BulkheadConfig } from '../bulkhead/bulkhead.config';
import { CIRCUIT_BREAKER_SCHEMA, CircuitBreakerConfig } from '../circuit-breaker/circuit-breaker.config';
import { Clock, systemClock } from '../clock';
import { DEFAULT_DEADLINE_HEADER } from '../context';
import { RETRY_SCHEMA, RetryConfig } from '../retry/retry.config';
import { TIME_LIMITER_SCHEMA, TimeLimiterConfig } from '../time-limiter/time-limiter.config';
import { INVALID_VALUE, NOT_AN_OBJECT, UNKNOWN_KEY, UNKNOWN_SECTION, UNSUPPORTED_PROPERTY } from './config.messages';
import { parseDuration } from './duration';
import { DEFAULT_ORDER, PolicyKind, ResilienceModuleOptions } from './module-options';
import { camelKey, PolicySchema, resolveSection, ResolvedSection } from './schema';

/** The policies configured as named instances. */
export interface PolicyConfigs {
  retry: RetryConfig;
  circuitBreaker: CircuitBreakerConfig;
  bulkhead: BulkheadConfig;
  timeLimiter: TimeLimiterConfig;
}

/** A policy that has named instances. */
export type InstancePolicy = keyof PolicyConfigs;

/** Schemas of the instance policies, by section name. */
export const POLICY_SCHEMAS: { readonly [P in InstancePolicy]: PolicySchema<PolicyConfigs[P]> } = {
  retry: RETRY_SCHEMA,
  circuitBreaker: CIRCUIT_BREAKER_SCHEMA,
  bulkhead: BULKHEAD_SCHEMA,
  timeLimiter: TIME_LIMITER_SCHEMA,
};

/** Module options after parsing and validation. */
export interface ResolvedOptions {
  readonly strict: boolean;
  readonly maxUndeclaredInstances: number;
  readonly clock: Clock;
  readonly random: () => number;
  readonly order: readonly PolicyKind[];
  readonly deadline: { readonly header: string; readonly defaultBudget?: number; readonly maxBudget?: number };
  readonly sections: { readonly [P in InstancePolicy]: ResolvedSection<PolicyConfigs[P]> };
  /** Sections owned by other parts of the module (idempotency, metrics), passed through as given. */
  readonly extras: Readonly<Record<string, unknown>>;
}

const SECTION_ALIASES: Record<string, InstancePolicy> = {
  retry: 'retry',
  circuitBreaker: 'circuitBreaker',
  circuitbreaker: 'circuitBreaker',
  bulkhead: 'bulkhead',
  timeLimiter: 'timeLimiter',
  timelimiter: 'timeLimiter',
};
const UNIMPLEMENTED_SECTIONS = ['rateLimiter', 'ratelimiter', 'threadPoolBulkhead', 'threadpoolbulkhead'];
const PLAIN_KEYS = ['strict', 'maxUndeclaredInstances', 'clock', 'random', 'order', 'deadline'];

/** Undeclared instances allowed per policy when `maxUndeclaredInstances` is not given. */
export const DEFAULT_MAX_UNDECLARED_INSTANCES = 100;

/** Sections read by other parts of the module, which validate them. */
const EXTRA_SECTIONS = ['idempotency', 'metrics', 'health', 'logging'];

/**
 * Parses and validates module options. Throws one error naming the policy,
 * instance, key and bad value; warns once per Resilience4j property that is
 * accepted but not implemented.
 */
export function resolveOptions(options: ResilienceModuleOptions | undefined, warn: (message: string) => void): ResolvedOptions {
  const raw: unknown = options ?? {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(NOT_AN_OBJECT('module options', raw));
  const sectionsRaw: Partial<Record<InstancePolicy, unknown>> = {};
  const plain: Record<string, unknown> = {};
  const extras: Record<string, unknown> = {};
  for (const [rawKey, value] of Object.entries(raw)) {
    const key = camelKey(rawKey);
    const policy = SECTION_ALIASES[key];
    if (policy !== undefined) {
      if (sectionsRaw[policy] !== undefined) throw new Error(INVALID_VALUE('module options', rawKey, `given once (also given as another spelling of '${policy}')`, value));
      sectionsRaw[policy] = value;
    } else if (PLAIN_KEYS.includes(key)) plain[key] = value;
    else if (EXTRA_SECTIONS.includes(key)) extras[key] = value;
    else if (UNIMPLEMENTED_SECTIONS.includes(key)) warn(UNSUPPORTED_PROPERTY('module options', rawKey));
    else throw new Error(UNKNOWN_SECTION(rawKey, [...Object.keys(POLICY_SCHEMAS), ...PLAIN_KEYS, ...EXTRA_SECTIONS]));
  }
  return {
    strict: readBoolean(plain.strict, 'strict'),
    maxUndeclaredInstances: readPositiveInteger(plain.maxUndeclaredInstances, 'maxUndeclaredInstances', DEFAULT_MAX_UNDECLARED_INSTANCES),
    clock: readClock(plain.clock),
    random: readRandom(plain.random),
    order: readOrder(plain.order),
    deadline: readDeadline(plain.deadline),
    sections: {
      retry: resolveSection(RETRY_SCHEMA, sectionsRaw.retry, warn),
      circuitBreaker: resolveSection(CIRCUIT_BREAKER_SCHEMA, sectionsRaw.circuitBreaker, warn),
      bulkhead: resolveSection(BULKHEAD_SCHEMA, sectionsRaw.bulkhead, warn),
      timeLimiter: resolveSection(TIME_LIMITER_SCHEMA, sectionsRaw.timeLimiter, warn),
    },
    extras,
  };
}

function readBoolean(value: unknown, key: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new Error(INVALID_VALUE('module options', key, 'true or false', value));
  return value;
}

function readPositiveInteger(value: unknown, key: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw new Error(INVALID_VALUE('module options', key, 'an integer >= 1', value));
  return value;
}

function readClock(value: unknown): Clock {
  if (value === undefined) return systemClock;
  const clock = value as Partial<Clock>;
  if (typeof clock !== 'object' || typeof clock.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
    throw new Error(INVALID_VALUE('module options', 'clock', 'an object with now(), setTimeout() and clearTimeout()', value));
  }
  return value as Clock;
}

function readRandom(value: unknown): () => number {
  if (value === undefined) return Math.random;
  if (typeof value !== 'function') throw new Error(INVALID_VALUE('module options', 'random', 'a function returning a number in [0, 1)', value));
  return value as () => number;
}

function readOrder(value: unknown): readonly PolicyKind[] {
  if (value === undefined) return DEFAULT_ORDER;
  const expected = `a list naming each of ${DEFAULT_ORDER.map((k) => `'${k}'`).join(', ')} exactly once`;
  if (!Array.isArray(value) || value.length !== DEFAULT_ORDER.length) throw new Error(INVALID_VALUE('module options', 'order', expected, value));
  const order = value.map((v) => (typeof v === 'string' ? camelKey(v) : v));
  const known = new Set<unknown>(DEFAULT_ORDER);
  if (new Set(order).size !== order.length || order.some((k) => !known.has(k))) throw new Error(INVALID_VALUE('module options', 'order', expected, value));
  return order as PolicyKind[];
}

function readDeadline(value: unknown): ResolvedOptions['deadline'] {
  if (value === undefined || value === null) return { header: DEFAULT_DEADLINE_HEADER };
  if (typeof value !== 'object' || Array.isArray(value)) throw new Error(NOT_AN_OBJECT('deadline options', value));
  let header = DEFAULT_DEADLINE_HEADER;
  let defaultBudget: number | undefined;
  let maxBudget: number | undefined;
  for (const [rawKey, v] of Object.entries(value)) {
    const key = camelKey(rawKey);
    if (key === 'header') {
      if (typeof v !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(v)) throw new Error(INVALID_VALUE('deadline options', rawKey, 'an HTTP header name', v));
      header = v.toLowerCase();
    } else if (key === 'defaultBudget' || key === 'maxBudget') {
      const ms = parseDuration(v);
      if (ms === undefined || ms === 0) throw new Error(INVALID_VALUE('deadline options', rawKey, 'a positive duration', v));
      if (key === 'defaultBudget') defaultBudget = ms;
      else maxBudget = ms;
    } else throw new Error(UNKNOWN_KEY('deadline options', rawKey, ['header', 'defaultBudget', 'maxBudget']));
  }
  return { header, defaultBudget, maxBudget };
}
