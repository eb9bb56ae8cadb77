import { applyOverrides, ResolvedSection } from '../config/schema';
import type { Clock } from '../kernel/clock';
import type { ConfigChangedEvent } from '../kernel/config-change';
import { RetryBudget } from '../kernel/retry-budget';
import { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import {
  asBulkhead,
  asThreadPool,
  THREAD_POOL_BULKHEAD_SCHEMA,
} from '../policies/bulkhead/thread-pool-bulkhead.config';
import { CACHE_SCHEMA, CacheConfig } from '../policies/cache/cache.config';
import { CachePolicy } from '../policies/cache/cache.policy';
import type { CircuitBreakerConfig } from '../policies/circuit-breaker/circuit-breaker.config';
import type { CircuitBreakerFleet } from '../policies/circuit-breaker/circuit-breaker.fleet';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { HEDGE_SCHEMA, HedgeConfig } from '../policies/hedge/hedge.config';
import { HEDGE_BUDGET_WITHOUT_RETRY_BUDGET, SAFE_NOT_LIVE } from '../policies/hedge/hedge.messages';
import { HedgePolicy } from '../policies/hedge/hedge.policy';
import type { RateLimiterConfig } from '../policies/rate-limiter/rate-limiter.config';
import { RateLimiterPolicy } from '../policies/rate-limiter/rate-limiter.policy';
import type { RateLimiterStore } from '../policies/rate-limiter/rate-limiter-store';
import type { RetryConfig } from '../policies/retry/retry.config';
import { RetryPolicy } from '../policies/retry/retry.policy';
import { TimeLimiter } from '../policies/time-limiter/time-limiter.policy';
import type { InstanceCache, InstanceKind } from './instance-cache';
import type { KeyedInstances } from './keyed-instances';
import type { PolicyInstances, RegistryPolicy } from './policy-instances';
import { POLICY_SCHEMAS, PolicyConfigs, ResolvedOptions } from './resolve-options';
import { checkSharingKept, requireStore } from './shared-stores';

/** What the factory table reads of the registry it makes instances for. */
export interface KindSource {
  /** The options in force (the time limiters read `deadline` from them). */
  readonly options: ResolvedOptions;
  /** The clock every instance reads. */
  readonly clock: Clock;
  /** The random source of the jitter. */
  readonly random: () => number;
  /** Where shared rate limiters keep their permits. */
  readonly rateLimiterStore: RateLimiterStore | undefined;
  /** The fleet of the shared breakers; throws, naming `place`, without a `circuitBreakerStore`. */
  circuitBreakerFleet(place: string): CircuitBreakerFleet;
  /** Takes an evicted breaker out of its fleet, if it is in one. */
  leaveFleet(breaker: CircuitBreakerPolicy): void;
  /** The retry instance a hedge's `budget` names, held for good. */
  get(policy: 'retry', name: string, where: string): RetryPolicy;
  /** The keys of a retry instance, whose budgets the hedges of the same keys draw from. */
  keysOf(policy: 'retry', instance: RetryPolicy): KeyedInstances<RetryPolicy>;
}

/** How one kind of instance is made, from the registry and the instance's name, config, place (for errors) and key. */
type Make<C, I> = (registry: KindSource, name: string, config: C, place: string, key?: string) => I;

/** How each policy's instances run with a new config, keeping their state. */
const POLICY_RECONFIGURERS: {
  readonly [P in RegistryPolicy]: (
    registry: KindSource,
    instance: PolicyInstances[P],
    config: PolicyConfigs[P],
  ) => ConfigChangedEvent | undefined;
} = {
  retry: (_r, instance, config) => instance.reconfigure(config),
  circuitBreaker: (_r, instance, config) => instance.reconfigure(config),
  bulkhead: (_r, instance, config) => instance.reconfigure(config),
  timeLimiter: (_r, instance, config) => instance.reconfigure(config),
  rateLimiter: (r, instance, config) => instance.reconfigure(config, r.rateLimiterStore),
};

/** How each policy's instances are made. */
const POLICY_FACTORIES: { readonly [P in RegistryPolicy]: Make<PolicyConfigs[P], PolicyInstances[P]> } = {
  retry: (r, name, config, _place, key) => new RetryPolicy(name, config, r.clock, r.random, key),
  circuitBreaker: (r, name, config, place, key) => {
    const breaker = new CircuitBreakerPolicy(name, config, r.clock, r.random, key);
    // A shared name's keys are fleet-wide too, each apart: a key's breaker joins as it is made, and leaves when evicted.
    if (config.shared) r.circuitBreakerFleet(place).join(breaker, config.shared.quorum);
    return breaker;
  },
  bulkhead: (r, name, config, _place, key) => new BulkheadPolicy(name, config, r.clock, key),
  timeLimiter: (r, name, config, _place, key) =>
    new TimeLimiter(name, config, r.clock, r.options.deadline.attemptContext, key),
  rateLimiter: (r, name, config, place, key) => {
    if (config.shared) requireStore(r.rateLimiterStore, place);
    return new RateLimiterPolicy(name, config, r.clock, config.shared ? r.rateLimiterStore : undefined, key);
  },
};

/** When an instance holds state a restart would lose, so that it is never evicted. */
const HOLDS_STATE: { readonly [P in RegistryPolicy]: (instance: PolicyInstances[P]) => boolean } = {
  retry: () => false,
  circuitBreaker: (breaker) => breaker.holdsState,
  bulkhead: bulkheadHoldsState,
  timeLimiter: () => false,
  rateLimiter: (limiter) => limiter.metrics.numberOfWaitingThreads > 0,
};

/** A bulkhead with calls in flight or waiting. */
function bulkheadHoldsState(bulkhead: BulkheadPolicy): boolean {
  const m = bulkhead.metrics;
  return m.availableConcurrentCalls < m.maxAllowedConcurrentCalls || m.queueDepth > 0;
}

/**
 * The budget of retry instance `retry` that a hedge (of `key`) draws from,
 * which that retry refills: the hedge of a key draws from the same key of
 * that retry, as it is when the hedge is due (an evicted retry key is made
 * afresh). Throws, naming `place`, when the retry has no budget.
 */
function retryBudgetOf(
  r: KindSource,
  retry: string,
  place: string,
  key: string | undefined,
): RetryBudget | (() => RetryBudget) {
  const instance = r.get('retry', retry, place);
  const shared = instance.retryBudget;
  if (shared === undefined) throw new Error(HEDGE_BUDGET_WITHOUT_RETRY_BUDGET(place, retry));
  if (key === undefined) return shared;
  const retries = r.keysOf('retry', instance);
  // A budget a live change removed from the retry stays the one its hedges draw from, as for a hedge without key.
  let budget = retries.get(key).retryBudget ?? shared;
  return () => (budget = retries.get(key).retryBudget ?? budget);
}

/** A hedge draws from a budget of its own, or from a retry's (see {@link retryBudgetOf}). */
const makeHedge: Make<HedgeConfig, HedgePolicy> = (r, name, config, place, key) =>
  typeof config.budget === 'string'
    ? new HedgePolicy(name, config, r.clock, retryBudgetOf(r, config.budget, place, key), false, key)
    : new HedgePolicy(name, config, r.clock, new RetryBudget(config.budget), true, key);

/**
 * Checks that a hedge config's `budget`, when it names a retry instance,
 * names one with a budget under `retries` (the retry section a live change
 * moves to, which may give or take that budget); throws naming `place`.
 */
export function checkHedgeBudget(
  cache: InstanceCache<RetryConfig, RetryPolicy>,
  retries: ResolvedSection<RetryConfig>,
): (config: HedgeConfig, place: string) => void {
  return (config, place) => {
    if (typeof config.budget !== 'string') return;
    if (cache.configIn(retries, config.budget, place).budget === undefined)
      throw new Error(HEDGE_BUDGET_WITHOUT_RETRY_BUDGET(place, config.budget));
  };
}

/** Throws, naming `place`, when a running hedge's `safe` would change: methods and pipelines are checked against it when they are wired. */
function checkSafeKept(before: HedgeConfig, after: HedgeConfig, place: string): void {
  if (before.safe !== after.safe) throw new Error(SAFE_NOT_LIVE(place, before.safe, after.safe));
}

/** The kind of `policy`'s instances: its section of the options, its factory, its checks and how it follows a change. */
export function policyKind<P extends RegistryPolicy>(
  r: KindSource,
  policy: P,
  configs: ResolvedSection<PolicyConfigs[P]>,
): InstanceKind<PolicyConfigs[P], PolicyInstances[P]> {
  const make: Make<PolicyConfigs[P], PolicyInstances[P]> = POLICY_FACTORIES[policy];
  const reconfigure = POLICY_RECONFIGURERS[policy] as (
    registry: KindSource,
    instance: PolicyInstances[P],
    config: PolicyConfigs[P],
  ) => ConfigChangedEvent | undefined;
  return {
    section: policy,
    configs,
    schema: POLICY_SCHEMAS[policy],
    warnsCloseName: true,
    make: (name, config, place, key) => make(r, name, config, place, key),
    holdsState: HOLDS_STATE[policy],
    check: (config, place) => {
      if (policy === 'rateLimiter' && (config as RateLimiterConfig).shared) requireStore(r.rateLimiterStore, place);
      if (policy === 'circuitBreaker' && (config as CircuitBreakerConfig).shared) r.circuitBreakerFleet(place);
    },
    // A shared breaker joined its fleet when it was made; evicted, it leaves: it follows and reports no more.
    release: policy === 'circuitBreaker' ? (instance) => r.leaveFleet(instance as CircuitBreakerPolicy) : undefined,
    checkChange:
      policy === 'circuitBreaker'
        ? (checkSharingKept as (before: PolicyConfigs[P], after: PolicyConfigs[P], place: string) => void)
        : undefined,
    reconfigure: (instance, config) => reconfigure(r, instance, config),
  };
}

/** The thread-pool bulkheads (section `threadPoolBulkhead`): each runs as a bulkhead of `maxThreadPoolSize` calls at once. */
export function threadPoolBulkheadKind(
  r: KindSource,
  configs: ResolvedSection<PolicyConfigs['bulkhead']>,
): InstanceKind<PolicyConfigs['bulkhead'], BulkheadPolicy> {
  return {
    section: 'threadPoolBulkhead',
    configs,
    schema: POLICY_SCHEMAS.bulkhead,
    warnsCloseName: false,
    make: (name, config, place, key) => POLICY_FACTORIES.bulkhead(r, name, config, place, key),
    holdsState: bulkheadHoldsState,
    // A change is written in the thread pool's keys, as its section is.
    patch: (base, patch, place, warn) =>
      Object.freeze(asBulkhead(applyOverrides(THREAD_POOL_BULKHEAD_SCHEMA, asThreadPool(base), patch, place, warn))),
    reconfigure: (instance, config) => instance.reconfigure(config),
  };
}

/** The hedges (section `hedging`): a change keeps a hedge's latencies and its own budget's tokens. */
export function hedgeKind(
  r: KindSource,
  configs: ResolvedSection<HedgeConfig>,
): InstanceKind<HedgeConfig, HedgePolicy> {
  return {
    section: 'hedging',
    configs,
    schema: HEDGE_SCHEMA,
    warnsCloseName: false,
    make: (name, config, place, key) => makeHedge(r, name, config, place, key),
    holdsState: () => false,
    checkChange: checkSafeKept,
    reconfigure: (instance, config, place) =>
      instance.reconfigure(config, (retry) => retryBudgetOf(r, retry, place, instance.key)),
  };
}

/** The caches (section `cache`): a change keeps what each has stored; `warn` receives each cache's warnings. */
export function cacheKind(
  r: KindSource,
  configs: ResolvedSection<CacheConfig>,
  warn: (message: string) => void,
): InstanceKind<CacheConfig, CachePolicy> {
  return {
    section: 'cache',
    configs,
    schema: CACHE_SCHEMA,
    warnsCloseName: true,
    make: (name, config) => new CachePolicy(name, config, r.clock, warn),
    holdsState: () => false,
    reconfigure: (instance, config) => instance.reconfigure(config),
  };
}
