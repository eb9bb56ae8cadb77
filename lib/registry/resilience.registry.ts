import { Clock } from '../kernel/clock';
import { describe, instancePlace } from '../config/config.messages';
import { RegistryOptions } from './registry.options';
import { POLICY_SCHEMAS, PolicyConfigs, ResolvedOptions, resolveOptions } from './resolve-options';
import { EventStream } from '../kernel/events';
import { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { CircuitBreakerConfig } from '../policies/circuit-breaker/circuit-breaker.config';
import { CircuitBreakerStore, isCircuitBreakerStore } from '../policies/circuit-breaker/circuit-breaker-store';
import { CircuitBreakerFleet } from '../policies/circuit-breaker/circuit-breaker.fleet';
import {
  NOT_A_STORE as NOT_A_BREAKER_STORE,
  SHARED_WITHOUT_STORE as BREAKER_SHARED_WITHOUT_STORE,
  SHARED_NOT_LIVE,
} from '../policies/circuit-breaker/circuit-breaker.messages';
import { RateLimiterPolicy } from '../policies/rate-limiter/rate-limiter.policy';
import { isRateLimiterStore, RateLimiterStore } from '../policies/rate-limiter/rate-limiter-store';
import { NOT_A_STORE, SHARED_WITHOUT_STORE } from '../policies/rate-limiter/rate-limiter.messages';
import { RetryPolicy } from '../policies/retry/retry.policy';
import { TimeLimiter } from '../policies/time-limiter/time-limiter.policy';
import { ResiliencePipeline } from '../engine/resilience-pipeline';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { PipelineKeyOptions, PipelineOptions } from './pipeline.options';
import { buildPipeline } from './pipeline-builder';
import { InstanceCache, InstanceKind } from './instance-cache';
import { KeyedInstances } from './keyed-instances';
import type { LruEntry } from './instance-lru';
import { InstanceCreatedEvent, PolicyInstances, RegistryPolicy } from './policy-instances';
import { FaultInjector } from '../features/fault-injection/fault-injector';
import { HedgePolicy } from '../policies/hedge/hedge.policy';
import { HedgeConfig, HEDGE_SCHEMA } from '../policies/hedge/hedge.config';
import { HEDGE_BUDGET_WITHOUT_RETRY_BUDGET } from '../policies/hedge/hedge.messages';
import { RetryBudget } from '../kernel/retry-budget';
import { ConfigChangedEvent, ReconfigurablePolicy } from '../kernel/config-change';
import { applyOverrides, ResolvedSection } from '../config/schema';
import {
  asBulkhead,
  asThreadPool,
  THREAD_POOL_BULKHEAD_SCHEMA,
} from '../policies/bulkhead/thread-pool-bulkhead.config';
import { checkStartupOnly } from './startup-options';
import { BulkheadConfig } from '../policies/bulkhead/bulkhead.config';
import { RateLimiterConfig } from '../policies/rate-limiter/rate-limiter.config';

/** The policies whose instances follow a change of their options. */
const RECONFIGURABLE: readonly ReconfigurablePolicy[] = [
  'retry',
  'circuitBreaker',
  'bulkhead',
  'timeLimiter',
  'rateLimiter',
];
import { CachePolicy } from '../policies/cache/cache.policy';
import { CACHE_SCHEMA, CacheConfig } from '../policies/cache/cache.config';

/** How one kind of instance is made, from the registry and the instance's name, config, place (for errors) and key. */
type Make<C, I> = (registry: ResilienceRegistry, name: string, config: C, place: string, key?: string) => I;

/** How each policy's instances run with a new config, keeping their state. */
const POLICY_RECONFIGURERS: {
  readonly [P in RegistryPolicy]: (
    registry: ResilienceRegistry,
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

/** What the registry's getters take besides the name. */
export interface InstanceOptions {
  /**
   * The key whose own instance is wanted (a host, a tenant): made on first
   * use from the named instance's config, with state of its own, kept
   * within the section's `keys` bounds. Ask each time rather than holding
   * the instance: an idle key may be evicted, and is made afresh when asked for again.
   */
  readonly key?: string;
}

/** Announced whenever the registry evicts an instance: an idle or least recently used key, or undeclared name. */
export interface InstanceEvictedEvent<P extends RegistryPolicy = RegistryPolicy> {
  /** The policy the instance belongs to. */
  readonly policy: P;
  /** The instance's name. */
  readonly name: string;
  /** The key evicted, for an instance used per key; undefined for an undeclared name. */
  readonly key?: string;
  /** The instance evicted. */
  readonly instance: PolicyInstances[P];
}

/** The caller named by default in messages: asked through a getter, not held by a decorated method or pipeline. */
const GETTER = 'ResilienceRegistry';

/** A thread-pool bulkhead runs as a bulkhead of `maxThreadPoolSize` calls at once. */
const makeThreadPoolBulkhead: Make<PolicyConfigs['bulkhead'], BulkheadPolicy> = POLICY_FACTORIES.bulkhead;

/**
 * A hedge draws from a budget of its own, or from a retry's, which that
 * retry refills; the hedge of a key draws from the same key of that retry,
 * as it is when the hedge is due (an evicted retry key is made afresh).
 */
const makeHedge: Make<HedgeConfig, HedgePolicy> = (r, name, config, place, key) => {
  if (typeof config.budget !== 'string')
    return new HedgePolicy(name, config, r.clock, new RetryBudget(config.budget), true, key);
  const retry = r.get('retry', config.budget, place);
  const shared = retry.retryBudget;
  if (shared === undefined) throw new Error(HEDGE_BUDGET_WITHOUT_RETRY_BUDGET(place, config.budget));
  if (key === undefined) return new HedgePolicy(name, config, r.clock, shared, false);
  const retries = r.keysOf('retry', retry);
  // A budget a live change removed from the retry stays the one its hedges draw from, as for a hedge without key.
  let budget = retries.get(key).retryBudget ?? shared;
  return new HedgePolicy(name, config, r.clock, () => (budget = retries.get(key).retryBudget ?? budget), false, key);
};

/**
 * Holds every named policy instance of one application. Injectable in Nest
 * (`ResilienceRegistry`), and usable without Nest: `new ResilienceRegistry(options)`.
 * An instance not declared in the options is created from `configs.default`.
 * It validates the options and delegates: each kind of instance (each
 * policy, thread-pool bulkheads, hedges) to an instance cache with
 * its factory, pipelines to the pipeline builder.
 */
export class ResilienceRegistry {
  private resolved: ResolvedOptions;
  /** The faults injected per instance name (module option `faultInjection`; off unless enabled). */
  readonly faults: FaultInjector;
  /** Where shared rate limiters keep their permits (module option `rateLimiterStore`). */
  readonly rateLimiterStore: RateLimiterStore | undefined;
  /** Where fleet-wide circuit breakers share their transitions (module option `circuitBreakerStore`). */
  readonly circuitBreakerStore: CircuitBreakerStore | undefined;
  private fleet: CircuitBreakerFleet | undefined;
  private readonly instanceCaches: {
    readonly [P in RegistryPolicy]: InstanceCache<PolicyConfigs[P], PolicyInstances[P]>;
  };
  private readonly threadPoolBulkheads: InstanceCache<PolicyConfigs['bulkhead'], BulkheadPolicy>;
  private readonly hedging: InstanceCache<HedgeConfig, HedgePolicy>;
  private readonly derived: InstanceCreatedEvent[] = [];
  private readonly fallbackPolicies: FallbackPolicy[] = [];
  private readonly fallbackStream = new EventStream<FallbackPolicy>();
  private readonly hedgeList: HedgePolicy[] = [];
  private readonly caching: InstanceCache<CacheConfig, CachePolicy>;
  private readonly cacheList: CachePolicy[] = [];
  private readonly cacheStream = new EventStream<CachePolicy>();
  private readonly createdStream = new EventStream<InstanceCreatedEvent>();
  private readonly evictedStream = new EventStream<InstanceEvictedEvent>();
  private readonly hedgeEvictedStream = new EventStream<HedgePolicy>();
  private readonly warned = new Set<string>();

  /** Every instance created from now on (subscribe, then read {@link ResilienceRegistry.all} for the earlier ones), the instances of keys included. */
  readonly onInstanceCreated = this.createdStream.subscribe;

  /** Every instance evicted from now on: a key or an undeclared name, idle or least recently used past its bound. */
  readonly onInstanceEvicted = this.evictedStream.subscribe;

  /**
   * @param options - module options (a `ResilienceModuleOptions` object, whose
   *   other sections the registry leaves to the parts that read them);
   *   validated here, so a bad value throws
   * @param warn - receives each one-time warning (unsupported Resilience4j properties)
   */
  constructor(
    options: RegistryOptions = {},
    private readonly warn: (message: string) => void = () => undefined,
  ) {
    this.resolved = resolveOptions(options, (m) => this.warnOnce(m));
    this.rateLimiterStore = readRateLimiterStore(this.options.extras.rateLimiterStore);
    this.circuitBreakerStore = readCircuitBreakerStore(this.options.extras.circuitBreakerStore);
    this.faults = new FaultInjector(this.options.faultInjection, this.clock, this.random, process.env.NODE_ENV, (m) =>
      this.warnOnce(m),
    );
    const sections = this.options.sections;
    this.instanceCaches = {
      retry: this.policyCache('retry'),
      circuitBreaker: this.policyCache('circuitBreaker'),
      bulkhead: this.policyCache('bulkhead'),
      timeLimiter: this.policyCache('timeLimiter'),
      rateLimiter: this.policyCache('rateLimiter'),
    };
    this.threadPoolBulkheads = this.instanceCache(
      {
        section: 'threadPoolBulkhead',
        configs: this.options.threadPoolBulkhead,
        schema: POLICY_SCHEMAS.bulkhead,
        warnsCloseName: false,
        make: (name, config, place, key) => makeThreadPoolBulkhead(this, name, config, place, key),
        holdsState: bulkheadHoldsState,
        // A change is written in the thread pool's keys, as its section is.
        patch: (base, patch, place, warn) =>
          Object.freeze(
            asBulkhead(applyOverrides(THREAD_POOL_BULKHEAD_SCHEMA, asThreadPool(base), patch, place, warn)),
          ),
        reconfigure: (instance, config) => instance.reconfigure(config),
      },
      'bulkhead',
      this.options.maxUndeclaredInstances,
    );
    this.hedging = this.instanceCache(
      {
        section: 'hedging',
        configs: this.options.hedging,
        schema: HEDGE_SCHEMA,
        warnsCloseName: false,
        make: (name, config, place, key) => makeHedge(this, name, config, place, key),
        holdsState: () => false,
      },
      'hedging',
      Infinity,
      (_name, instance, key) => {
        if (key === undefined) this.hedgeList.push(instance);
      },
    );
    this.caching = this.instanceCache(
      {
        section: 'cache',
        configs: this.options.cache,
        schema: CACHE_SCHEMA,
        warnsCloseName: true,
        make: (name, config) => new CachePolicy(name, config, this.clock, (message) => this.warn(message)),
        holdsState: () => false,
      },
      'cache',
      Infinity,
      (_name, instance) => {
        this.cacheList.push(instance);
        if (this.cacheStream.active) this.cacheStream.emit(instance);
      },
    );
    this.checkStores(sections.rateLimiter, sections.circuitBreaker);
  }

  /**
   * Resolves once every fleet-wide breaker made so far listens to its
   * fleet and has read the fleet's state (a replica starting while its
   * fleet is OPEN is then OPEN). Calls never wait for it; it is for tests
   * and for code that must not serve before it knows.
   */
  async fleetJoined(): Promise<void> {
    await this.fleet?.joined();
  }

  /** @internal The fleet of this registry's shared breakers; throws, naming `place`, without a `circuitBreakerStore`. */
  circuitBreakerFleet(place: string): CircuitBreakerFleet {
    const store = this.circuitBreakerStore;
    if (store === undefined) throw new Error(BREAKER_SHARED_WITHOUT_STORE(place));
    return (this.fleet ??= new CircuitBreakerFleet(store, this.clock, (message) => this.warn(message)));
  }

  /**
   * The validated options: those given at startup, with the policy
   * sections in force (changed by {@link ResilienceRegistry.reconfigure}
   * and {@link ResilienceRegistry.applyOptions}).
   *
   * @internal
   */
  get options(): ResolvedOptions {
    return this.resolved;
  }

  /**
   * Changes the settings of instance `name` of `policy` while it runs:
   * `patch` holds the keys to change, written as in the options and checked
   * as at startup (a bad value throws the startup message and changes
   * nothing). Calls that start after it use the new settings; the instance
   * keeps its state (a breaker its state and window, a bulkhead its calls
   * in flight, a rate limiter its current period). A method's own instance
   * made from `name` with decorator overrides changes with it. An
   * undeclared name is declared with its `configs.default` patched (in
   * strict mode it throws). Each instance that changes publishes
   * `CONFIG_CHANGED`; returns those events.
   *
   * @example
   * ```ts
   * registry.reconfigure('circuitBreaker', 'payments', { failureRateThreshold: 30, waitDurationInOpenState: '30s' });
   * ```
   */
  reconfigure(policy: ReconfigurablePolicy, name: string, patch: object): ConfigChangedEvent[] {
    const cache = (policy === 'bulkhead' && this.onlyThreadPool(name)
      ? this.threadPoolBulkheads
      : this.instanceCaches[policy]) as unknown as InstanceCache<object, object>;
    const section = cache.patched(name, patch, 'ResilienceRegistry.reconfigure');
    const events = cache.commit(section, cache.plan(section));
    this.resolved =
      cache === (this.threadPoolBulkheads as unknown)
        ? { ...this.resolved, threadPoolBulkhead: section as ResolvedSection<BulkheadConfig> }
        : { ...this.resolved, sections: { ...this.resolved.sections, [policy]: section } };
    return events;
  }

  /**
   * Moves to the policy sections of `options` (a whole module options
   * object, e.g. a reloaded application.yml): every instance whose
   * settings differ between the options in force and these is
   * reconfigured as by {@link ResilienceRegistry.reconfigure}; the others
   * are left as they are. The options are checked as at startup, all of
   * them before anything changes: an invalid value throws the startup
   * message and changes nothing anywhere. `clock`, `random`, `order`,
   * `deadline`, `hedging` and `cache` are read at startup only: given
   * with another value than the one in force, they are refused naming
   * the option (left out, they keep theirs); other module sections
   * (metrics, logging…) are read at startup only. Returns the
   * `CONFIG_CHANGED` events, one per instance changed.
   */
  applyOptions(options: RegistryOptions): ConfigChangedEvent[] {
    const next = resolveOptions(options, (m) => this.warnOnce(m));
    checkStartupOnly(options, this.resolved, next);
    this.checkStores(next.sections.rateLimiter, next.sections.circuitBreaker);
    const moves: Array<() => ConfigChangedEvent[]> = [];
    const stage = <C extends object, I extends object>(
      cache: InstanceCache<C, I>,
      section: ResolvedSection<C>,
    ): void => {
      const changes = cache.plan(section);
      moves.push(() => cache.commit(section, changes));
    };
    for (const policy of RECONFIGURABLE)
      stage(
        this.instanceCaches[policy] as unknown as InstanceCache<object, object>,
        next.sections[policy] as ResolvedSection<object>,
      );
    stage(this.threadPoolBulkheads, next.threadPoolBulkhead);
    this.resolved = { ...this.resolved, sections: next.sections, threadPoolBulkhead: next.threadPoolBulkhead };
    return moves.flatMap((move) => move());
  }

  /** The clock every policy of this registry uses. */
  get clock(): Clock {
    return this.options.clock;
  }

  /** The random source used for jitter. */
  get random(): () => number {
    return this.options.random;
  }

  /** The retry instance `name` (with `{ key }`: that key's own instance of it). */
  retry(name: string, options?: InstanceOptions): RetryPolicy {
    return this.instance('retry', name, options);
  }

  /**
   * The circuit breaker instance `name`; with `{ key }`, that key's own
   * breaker, made from the instance's config.
   *
   * @example
   * ```ts
   * const breaker = registry.circuitBreaker('payments', { key: host });
   * ```
   */
  circuitBreaker(name: string, options?: InstanceOptions): CircuitBreakerPolicy {
    return this.instance('circuitBreaker', name, options);
  }

  /**
   * The bulkhead instance `name`: the semaphore bulkhead (Resilience4j's
   * default type), or the thread-pool bulkhead when only `threadPoolBulkhead`
   * declares the name. With `{ key }`, that key's own bulkhead.
   */
  bulkhead(name: string, options?: InstanceOptions): BulkheadPolicy {
    return this.instance('bulkhead', name, options);
  }

  /**
   * The thread-pool bulkhead `name` (`@Bulkhead(name, { type: 'THREADPOOL' })`),
   * run as a bulkhead of `maxThreadPoolSize` calls at once and `queueCapacity`
   * waiting; an undeclared name gets `threadPoolBulkhead.configs.default`.
   */
  threadPoolBulkhead(name: string, where = GETTER): BulkheadPolicy {
    return this.threadPoolBulkheads.get(name, where, where !== GETTER);
  }

  /** @internal A private thread-pool bulkhead for one decorated method: `name`'s config with `overrides` applied. */
  deriveThreadPoolBulkhead(name: string, overrides: object, place: string, where: string): BulkheadPolicy {
    return this.threadPoolBulkheads.derive(name, overrides, place, where, false);
  }

  /** The rate limiter instance `name` (with `{ key }`: that key's own limiter, e.g. a limit per tenant). */
  rateLimiter(name: string, options?: InstanceOptions): RateLimiterPolicy {
    return this.instance('rateLimiter', name, options);
  }

  /** The time limiter instance `name` (with `{ key }`: that key's own instance of it). */
  timeLimiter(name: string, options?: InstanceOptions): TimeLimiter {
    return this.instance('timeLimiter', name, options);
  }

  /**
   * The keys of the instance `name` kept now, each with its own instance
   * (idle keys evicted first). What a change of the name's settings must
   * reach: every key's instance is made from the name's config object.
   */
  keys<P extends RegistryPolicy>(policy: P, name: string): ReadonlyMap<string, PolicyInstances[P]> {
    const family = this.cacheOf(policy, name).existingKeysOf(this.get(policy, name));
    return new Map((family?.entries() ?? []).map((entry) => [entry.key, entry.instance]));
  }

  /** @internal The instance of every key kept now, of every instance of `policy` (thread-pool bulkheads included). */
  allKeys<P extends RegistryPolicy>(policy: P): readonly LruEntry<PolicyInstances[P]>[] {
    const cache = this.instanceCaches[policy] as InstanceCache<PolicyConfigs[P], PolicyInstances[P]>;
    const threadPool = policy === 'bulkhead' ? this.threadPoolBulkheads.allKeys() : [];
    return [...cache.allKeys(), ...(threadPool as unknown as LruEntry<PolicyInstances[P]>[])];
  }

  /**
   * @internal The keys of `instance` (a named or derived instance of
   * `policy` this registry made): what a keyed layer of a decorated method
   * or pipeline picks its instance from on each call.
   */
  keysOf<P extends RegistryPolicy>(policy: P, instance: PolicyInstances[P]): KeyedInstances<PolicyInstances[P]> {
    const cache = this.instanceCaches[policy] as InstanceCache<PolicyConfigs[P], PolicyInstances[P]>;
    const family =
      cache.keysOf(instance) ??
      (policy === 'bulkhead' ? this.threadPoolBulkheads.keysOf(instance as BulkheadPolicy) : undefined);
    return family as KeyedInstances<PolicyInstances[P]>;
  }

  /**
   * The hedge instance `name` (section `hedging`), created on first use from
   * its declaration or `configs.default`; in strict mode an undeclared name
   * throws. With `{ key }`, that key's own hedge: its own recent latencies
   * (so its own percentile delay) and its own budget, made from the
   * instance's config and kept within the section's `keys` bounds.
   *
   * @example
   * ```ts
   * registry.hedge('catalog', { key: 'eu' }).currentDelay; // the p95 of the eu calls
   * ```
   */
  hedge(name: string, options?: InstanceOptions): HedgePolicy {
    const named = this.hedging.get(name, GETTER);
    const key = options?.key;
    return key === undefined ? named : this.hedgeKeysOf(named).get(key);
  }

  /** @internal The hedge instance `name` for a decorated method or pipeline (`where`, for messages), held for good. */
  hedgeAt(name: string, where: string): HedgePolicy {
    return this.hedging.get(name, where, true);
  }

  /** @internal The keys of `hedge` (a named or derived hedge this registry made): what a keyed hedge layer picks its instance from. */
  hedgeKeysOf(hedge: HedgePolicy): KeyedInstances<HedgePolicy> {
    return this.hedging.keysOf(hedge) as KeyedInstances<HedgePolicy>;
  }

  /** @internal The hedge of every key kept now, of every hedge instance. */
  allHedgeKeys(): readonly LruEntry<HedgePolicy>[] {
    return this.hedging.allKeys();
  }

  /** @internal Each hedge of a key evicted from now on (its counts are kept by the metrics). */
  readonly onHedgeEvicted = this.hedgeEvictedStream.subscribe;

  /**
   * @internal A private hedge instance for one decorated method: the named
   * instance's config (or `configs.default` when `anonymous`) with `overrides` applied.
   */
  deriveHedge(name: string, overrides: object, place: string, where: string, anonymous = false): HedgePolicy {
    return this.hedging.derive(name, overrides, place, where, anonymous);
  }

  /** @internal True when the `hedging` section declares `name`. */
  declaresHedge(name: string): boolean {
    return this.hedging.declares(name);
  }

  /**
   * Every hedge instance created so far, the private ones of decorated
   * methods included; the hedge of a key is asked for with `registry.hedge(name, { key })`.
   */
  get hedges(): readonly HedgePolicy[] {
    return this.hedgeList;
  }

  /**
   * The cache instance `name` (section `cache`), created on first use from
   * its declaration or `configs.default`; in strict mode an undeclared name
   * throws. One instance is one key space: methods that name it share its answers.
   */
  cache(name: string, where = 'ResilienceRegistry'): CachePolicy {
    return this.caching.get(name, where);
  }

  /**
   * @internal A private cache instance for one decorated method or pipeline: the
   * named instance's config (or `configs.default` when `anonymous`) with `overrides` applied.
   */
  deriveCache(name: string, overrides: object, place: string, where: string, anonymous = false): CachePolicy {
    return this.caching.derive(name, overrides, place, where, anonymous);
  }

  /** @internal True when the `cache` section declares `name`. */
  declaresCache(name: string): boolean {
    return this.caching.declares(name);
  }

  /** Every cache instance created so far, the private ones of decorated methods and pipelines included. */
  get caches(): readonly CachePolicy[] {
    return this.cacheList;
  }

  /** @internal Each cache instance made from now on. */
  readonly onCacheCreated = this.cacheStream.subscribe;

  /** Every instance of `policy` created so far. */
  all<P extends RegistryPolicy>(policy: P): PolicyInstances[P][] {
    return (this.instanceCaches[policy] as InstanceCache<PolicyConfigs[P], PolicyInstances[P]>).all();
  }

  /**
   * The named instance of `policy`, created on first use. In strict mode an
   * undeclared name throws, naming `where` it was asked for. Asked for by a
   * decorated method or a pipeline (a `where` other than the default), an
   * undeclared name is held for good: it is never evicted.
   */
  get<P extends RegistryPolicy>(policy: P, name: string, where = GETTER): PolicyInstances[P] {
    if (policy === 'bulkhead' && this.onlyThreadPool(name))
      return this.threadPoolBulkhead(name, where) as PolicyInstances[P];
    return (this.instanceCaches[policy] as InstanceCache<PolicyConfigs[P], PolicyInstances[P]>).get(
      name,
      where,
      where !== GETTER,
    );
  }

  /**
   * @internal A private instance for one decorated method: the named instance's config
   * with `overrides` applied (validated like any config, errors naming `place`).
   * An `anonymous` instance (e.g. `@Timeout(250)`) starts from `configs.default`.
   */
  derive<P extends RegistryPolicy>(
    policy: P,
    name: string,
    overrides: object,
    place: string,
    where: string,
    anonymous = false,
  ): PolicyInstances[P] {
    if (policy === 'bulkhead' && !anonymous && this.onlyThreadPool(name))
      return this.deriveThreadPoolBulkhead(name, overrides, place, where) as PolicyInstances[P];
    return (this.instanceCaches[policy] as InstanceCache<PolicyConfigs[P], PolicyInstances[P]>).derive(
      name,
      overrides,
      place,
      where,
      anonymous,
    );
  }

  /**
   * A pipeline of several policies around any function or Observable,
   * composed as the decorators compose a method's (same order, semantics,
   * events, metrics and fast path). Given a name, it holds every policy
   * declared under that name (the instances a method decorated with all of
   * them would use); given options, each policy is an instance name or
   * inline options, plus typed fallbacks (options with no policy give a
   * pipeline that only runs the function).
   *
   * @example
   * ```ts
   * const stock = registry.pipeline('inventory');
   * await stock.execute((signal) => fetchStock(sku, signal));
   * // one breaker and limiter per host, the host read from execute's args
   * const perHost = registry.pipeline('payments', { key: (host: string) => host });
   * await perHost.execute((signal) => charge(host, signal), { args: [host] });
   * ```
   */
  pipeline(nameOrOptions: string | PipelineOptions, keyOptions?: PipelineKeyOptions): ResiliencePipeline {
    return buildPipeline(this, nameOrOptions, keyOptions);
  }

  /** @internal The fallback policies of the pipelines and decorated methods made so far. */
  get fallbacks(): readonly FallbackPolicy[] {
    return this.fallbackPolicies;
  }

  /** @internal Each fallback policy of a pipeline or decorated method made from now on. */
  readonly onFallbackCreated = this.fallbackStream.subscribe;

  /** @internal Records the fallback policy of a pipeline or decorated method, for observability and `recordEvents`. */
  trackFallback(policy: FallbackPolicy): void {
    this.fallbackPolicies.push(policy);
    if (this.fallbackStream.active) this.fallbackStream.emit(policy);
  }

  /** The private instances made from decorator overrides. */
  get derivedInstances(): readonly InstanceCreatedEvent[] {
    return this.derived;
  }

  /** Releases timers held by the instances (on application shutdown). */
  dispose(): void {
    this.fleet?.dispose().catch(() => undefined);
    for (const limiter of this.all('timeLimiter')) limiter.dispose();
    for (const entry of this.derived) if (entry.instance instanceof TimeLimiter) entry.instance.dispose();
  }

  /** Logs `message` once for this registry. */
  warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.warn(message);
  }

  /** The instance `name` of `policy`, or of its `key` when one is given. */
  private instance<P extends RegistryPolicy>(policy: P, name: string, options?: InstanceOptions): PolicyInstances[P] {
    const named = this.get(policy, name);
    const key = options?.key;
    return key === undefined ? named : this.keysOf(policy, named).get(key);
  }

  /** The cache that makes the instance `name` of `policy`. */
  private cacheOf<P extends RegistryPolicy>(
    policy: P,
    name: string,
  ): InstanceCache<PolicyConfigs[P], PolicyInstances[P]> {
    if (policy === 'bulkhead' && this.onlyThreadPool(name))
      return this.threadPoolBulkheads as unknown as InstanceCache<PolicyConfigs[P], PolicyInstances[P]>;
    return this.instanceCaches[policy];
  }

  /** The cache of `policy`'s instances: its section of the options, its factory, its bound on undeclared names. */
  private policyCache<P extends RegistryPolicy>(policy: P): InstanceCache<PolicyConfigs[P], PolicyInstances[P]> {
    const make: Make<PolicyConfigs[P], PolicyInstances[P]> = POLICY_FACTORIES[policy];
    const reconfigure = POLICY_RECONFIGURERS[policy] as (
      registry: ResilienceRegistry,
      instance: PolicyInstances[P],
      config: PolicyConfigs[P],
    ) => ConfigChangedEvent | undefined;
    return this.instanceCache(
      {
        section: policy,
        configs: this.options.sections[policy],
        schema: POLICY_SCHEMAS[policy],
        warnsCloseName: true,
        make: (name, config, place, key) => make(this, name, config, place, key),
        holdsState: HOLDS_STATE[policy],
        check: (config, place) => {
          if (policy === 'rateLimiter' && (config as RateLimiterConfig).shared)
            requireStore(this.rateLimiterStore, place);
          if (policy === 'circuitBreaker' && (config as CircuitBreakerConfig).shared) this.circuitBreakerFleet(place);
        },
        checkChange:
          policy === 'circuitBreaker'
            ? (checkSharingKept as (before: PolicyConfigs[P], after: PolicyConfigs[P], place: string) => void)
            : undefined,
        reconfigure: (instance, config) => reconfigure(this, instance, config),
      },
      policy,
      this.options.maxUndeclaredInstances,
    );
  }

  /** Throws, naming the instance, when a shared rate limiter or circuit breaker has no store to share through. */
  private checkStores(
    limiters: ResolvedSection<RateLimiterConfig>,
    breakers: ResolvedSection<CircuitBreakerConfig>,
  ): void {
    if (limiters.defaultConfig.shared)
      requireStore(this.rateLimiterStore, instancePlace('rateLimiter', 'config', 'default'));
    for (const [name, config] of limiters.instances)
      if (config.shared) requireStore(this.rateLimiterStore, instancePlace('rateLimiter', 'instance', name));
    if (breakers.defaultConfig.shared) this.circuitBreakerFleet(instancePlace('circuitBreaker', 'config', 'default'));
    for (const [name, config] of breakers.instances)
      if (config.shared) this.circuitBreakerFleet(instancePlace('circuitBreaker', 'instance', name));
  }

  private instanceCache<C extends object, I extends object>(
    kind: InstanceKind<C, I>,
    policy: RegistryPolicy | 'hedging' | 'cache',
    maxUndeclared: number,
    made?: (name: string, instance: I, key?: string) => void,
  ): InstanceCache<C, I> {
    return new InstanceCache(kind, {
      strict: this.options.strict,
      maxUndeclared,
      policy,
      clock: this.clock,
      warnOnce: (message) => this.warnOnce(message),
      made: (name, instance, derived, key) => {
        made?.(name, instance as I, key);
        if (policy !== 'hedging' && policy !== 'cache') this.announce(policy, name, instance, derived, key);
      },
      evicted: (name, instance, key) => {
        if (policy === 'circuitBreaker') this.fleet?.leave(instance as CircuitBreakerPolicy);
        if (policy === 'hedging') {
          if (this.hedgeEvictedStream.active) this.hedgeEvictedStream.emit(instance as HedgePolicy);
        } else if (policy !== 'cache' && this.evictedStream.active)
          this.evictedStream.emit({ policy, name, key, instance } as InstanceEvictedEvent);
      },
    });
  }

  /** Publishes an instance made for `policy`, and keeps it when it is a method's own. */
  private announce(policy: RegistryPolicy, name: string, instance: unknown, derived: boolean, key?: string): void {
    const event = { policy, name, instance, derived, key } as InstanceCreatedEvent;
    if (derived) this.derived.push(event);
    if (this.createdStream.active) this.createdStream.emit(event);
  }

  /** True when `name` is a thread-pool bulkhead and no semaphore bulkhead: `@Bulkhead(name)` then uses it, as it did before both could share a name. */
  private onlyThreadPool(name: string): boolean {
    return this.threadPoolBulkheads.declares(name) && !this.instanceCaches.bulkhead.declares(name);
  }
}

function readRateLimiterStore(value: unknown): RateLimiterStore | undefined {
  if (value === undefined) return undefined;
  if (!isRateLimiterStore(value)) throw new Error(NOT_A_STORE(describe(value)));
  return value;
}

function readCircuitBreakerStore(value: unknown): CircuitBreakerStore | undefined {
  if (value === undefined) return undefined;
  if (!isCircuitBreakerStore(value)) throw new Error(NOT_A_BREAKER_STORE(describe(value)));
  return value;
}

function requireStore(store: RateLimiterStore | undefined, place: string): void {
  if (store === undefined) throw new Error(SHARED_WITHOUT_STORE(place));
}

/** How `shared` is shown in a refused change: `false`, or `{ quorum: n }`. */
function sharingText(shared: CircuitBreakerConfig['shared']): string {
  return shared === false ? 'false' : `{ quorum: ${shared.quorum} }`;
}

/**
 * Refuses a live change of a breaker's `shared`: a breaker joins its
 * fleet, with its quorum, when it is made, and leaving mid-run would
 * drop a probe lease or a fleet-wide OPEN the others count on.
 */
function checkSharingKept(before: CircuitBreakerConfig, after: CircuitBreakerConfig, place: string): void {
  const was = sharingText(before.shared);
  const is = sharingText(after.shared);
  if (was !== is) throw new Error(SHARED_NOT_LIVE(place, was, is));
}
