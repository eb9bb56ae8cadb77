import { Clock } from '../kernel/clock';
import { RegistryOptions } from './registry.options';
import { ResolvedOptions, resolveOptions } from './resolve-options';
import { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { CircuitBreakerStore } from '../policies/circuit-breaker/circuit-breaker-store';
import { CircuitBreakerFleet } from '../policies/circuit-breaker/circuit-breaker.fleet';
import { RateLimiterPolicy } from '../policies/rate-limiter/rate-limiter.policy';
import { RateLimiterStore } from '../policies/rate-limiter/rate-limiter-store';
import { RetryPolicy } from '../policies/retry/retry.policy';
import { TimeLimiter } from '../policies/time-limiter/time-limiter.policy';
import { ResiliencePipeline } from '../engine/resilience-pipeline';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { PipelineKeyOptions, PipelineOptions } from './pipeline.options';
import { buildPipeline } from './pipeline-builder';
import { KeyedInstances } from './keyed-instances';
import type { LruEntry } from './instance-lru';
import { InstanceCreatedEvent, PolicyInstances, RegistryPolicy } from './policy-instances';
import { FaultInjector } from '../features/fault-injection/fault-injector';
import { HedgePolicy } from '../policies/hedge/hedge.policy';
import { ConfigChangedEvent, ReconfigurablePolicy } from '../kernel/config-change';
import { CachePolicy } from '../policies/cache/cache.policy';
import { InstanceFeed } from './instance-feed';
import { InstanceTable } from './instance-table';
import { LiveOptions } from './live-options';
import { PerKeyInstances } from './per-key-instances';
import { SharedStores } from './shared-stores';

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

/** The caller named by default in messages: asked through a getter, not held by a decorated method or pipeline. */
const GETTER = 'ResilienceRegistry';

/**
 * Holds every named policy instance of one application. Injectable in Nest
 * (`ResilienceRegistry`), and usable without Nest: `new ResilienceRegistry(options)`.
 * An instance not declared in the options is created from `configs.default`.
 * It validates the options and delegates: each kind of instance (each
 * policy, thread-pool bulkheads, hedges, caches) to an instance cache made
 * from its entry of the factory table (`instance-table.ts`,
 * `instance-kinds.ts`), the instances of keys to `per-key-instances.ts`,
 * live changes to `live-options.ts`, shared stores and the breakers' fleet
 * to `shared-stores.ts`, what it announces to `instance-feed.ts`, and
 * pipelines to the pipeline builder.
 */
export class ResilienceRegistry {
  /** The faults injected per instance name (module option `faultInjection`; off unless enabled). */
  readonly faults: FaultInjector;
  /** Where shared rate limiters keep their permits (module option `rateLimiterStore`). */
  readonly rateLimiterStore: RateLimiterStore | undefined;
  /** Where fleet-wide circuit breakers share their transitions (module option `circuitBreakerStore`). */
  readonly circuitBreakerStore: CircuitBreakerStore | undefined;
  private readonly stores: SharedStores;
  private readonly table: InstanceTable;
  private readonly keyed: PerKeyInstances;
  private readonly live: LiveOptions;
  private readonly feed = new InstanceFeed();
  private readonly warned = new Set<string>();

  /** Every instance created from now on (subscribe, then read {@link ResilienceRegistry.all} for the earlier ones), the instances of keys included. */
  readonly onInstanceCreated = this.feed.onInstanceCreated;

  /** Every instance evicted from now on: a key or an undeclared name, idle or least recently used past its bound. */
  readonly onInstanceEvicted = this.feed.onInstanceEvicted;

  /** @internal Each hedge made from now on: named, a decorated method's or pipeline's own, or of one key. */
  readonly onHedgeCreated = this.feed.onHedgeCreated;

  /** @internal Each hedge evicted from now on: of a key, or an undeclared name (its counts are kept by the metrics). */
  readonly onHedgeEvicted = this.feed.onHedgeEvicted;

  /** @internal Each cache instance made from now on. */
  readonly onCacheCreated = this.feed.onCacheCreated;

  /** @internal Each fallback policy of a pipeline or decorated method made from now on. */
  readonly onFallbackCreated = this.feed.onFallbackCreated;

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
    const resolved = resolveOptions(options, (m) => this.warnOnce(m));
    this.stores = new SharedStores(resolved.extras, resolved.clock, this.warn);
    this.rateLimiterStore = this.stores.rateLimiterStore;
    this.circuitBreakerStore = this.stores.circuitBreakerStore;
    this.faults = new FaultInjector(
      resolved.faultInjection,
      resolved.clock,
      resolved.random,
      process.env.NODE_ENV,
      (m) => this.warnOnce(m),
    );
    this.table = new InstanceTable(this, resolved, this.feed, this.warn);
    this.keyed = new PerKeyInstances(this.table);
    this.live = new LiveOptions(resolved, this.table, this.stores, (m) => this.warnOnce(m));
    this.stores.check(resolved.sections.rateLimiter, resolved.sections.circuitBreaker);
  }

  /**
   * Resolves once every fleet-wide breaker made so far listens to its
   * fleet and has read the fleet's state (a replica starting while its
   * fleet is OPEN is then OPEN). Calls never wait for it; it is for tests
   * and for code that must not serve before it knows.
   */
  async fleetJoined(): Promise<void> {
    await this.stores.joined();
  }

  /** @internal The fleet of this registry's shared breakers; throws, naming `place`, without a `circuitBreakerStore`. */
  circuitBreakerFleet(place: string): CircuitBreakerFleet {
    return this.stores.circuitBreakerFleet(place);
  }

  /** @internal Takes an evicted breaker out of its fleet, if it is in one. */
  leaveFleet(breaker: CircuitBreakerPolicy): void {
    this.stores.leaveFleet(breaker);
  }

  /**
   * The validated options: those given at startup, with the policy
   * sections in force (changed by {@link ResilienceRegistry.reconfigure}
   * and {@link ResilienceRegistry.applyOptions}).
   *
   * @internal
   */
  get options(): ResolvedOptions {
    return this.live.options;
  }

  /**
   * Changes the settings of instance `name` of `policy` while it runs:
   * `patch` holds the keys to change, written as in the options and checked
   * as at startup (a bad value throws the startup message and changes
   * nothing). Calls that start after it use the new settings; the instance
   * keeps its state (a breaker its state and window, a bulkhead its calls
   * in flight, a rate limiter its current period, a hedge the latencies it
   * knows and its own budget's tokens, a cache what it stored). A method's own instance made from
   * `name` with decorator overrides changes with it, as do its keys. An
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
    return this.live.reconfigure(policy, name, patch);
  }

  /**
   * Moves to the policy sections of `options` (a whole module options
   * object, e.g. a reloaded application.yml): every instance whose
   * settings differ between the options in force and these is
   * reconfigured as by {@link ResilienceRegistry.reconfigure}; the others
   * are left as they are. The options are checked as at startup, all of
   * them before anything changes: an invalid value throws the startup
   * message and changes nothing anywhere. `hedging` and `cache` are live
   * too, and keep their value when left out (a Spring file has no such
   * sections). `clock`, `random`, `order` and `deadline` are read at
   * startup only: given with another value than the one in force, they are
   * refused naming the option (left out, they keep theirs); other module
   * sections (metrics, logging…) are read at startup only. Returns the
   * `CONFIG_CHANGED` events, one per instance changed.
   */
  applyOptions(options: RegistryOptions): ConfigChangedEvent[] {
    return this.live.apply(options);
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
    return this.table.threadPoolBulkheads.get(name, where, where !== GETTER);
  }

  /** @internal A private thread-pool bulkhead for one decorated method: `name`'s config with `overrides` applied. */
  deriveThreadPoolBulkhead(name: string, overrides: object, place: string, where: string): BulkheadPolicy {
    return this.table.threadPoolBulkheads.derive(name, overrides, place, where, false);
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
    return this.keyed.kept(policy, name, this.get(policy, name));
  }

  /** @internal The instance of every key kept now, of every instance of `policy` (thread-pool bulkheads included). */
  allKeys<P extends RegistryPolicy>(policy: P): readonly LruEntry<PolicyInstances[P]>[] {
    return this.keyed.all(policy);
  }

  /**
   * @internal The keys of `instance` (a named or derived instance of
   * `policy` this registry made): what a keyed layer of a decorated method
   * or pipeline picks its instance from on each call.
   */
  keysOf<P extends RegistryPolicy>(policy: P, instance: PolicyInstances[P]): KeyedInstances<PolicyInstances[P]> {
    return this.keyed.keysOf(policy, instance);
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
    return this.keyed.hedge(this.table.hedging.get(name, GETTER), options?.key);
  }

  /** @internal The hedge instance `name` for a decorated method or pipeline (`where`, for messages), held for good. */
  hedgeAt(name: string, where: string): HedgePolicy {
    return this.table.hedging.get(name, where, true);
  }

  /** @internal The keys of `hedge` (a named or derived hedge this registry made): what a keyed hedge layer picks its instance from. */
  hedgeKeysOf(hedge: HedgePolicy): KeyedInstances<HedgePolicy> {
    return this.keyed.hedgeKeysOf(hedge);
  }

  /** @internal The hedge of every key kept now, of every hedge instance. */
  allHedgeKeys(): readonly LruEntry<HedgePolicy>[] {
    return this.keyed.allHedges();
  }

  /**
   * @internal A private hedge instance for one decorated method: the named
   * instance's config (or `configs.default` when `anonymous`) with `overrides` applied.
   */
  deriveHedge(name: string, overrides: object, place: string, where: string, anonymous = false): HedgePolicy {
    return this.table.hedging.derive(name, overrides, place, where, anonymous);
  }

  /**
   * @internal True for a hedge or cache private to one decorated method or
   * pipeline (made by {@link ResilienceRegistry.deriveHedge} or {@link ResilienceRegistry.deriveCache}).
   */
  isDerived(instance: HedgePolicy | CachePolicy): boolean {
    return this.feed.derivedOwn.has(instance);
  }

  /** @internal True when the `hedging` section declares `name`. */
  declaresHedge(name: string): boolean {
    return this.table.hedging.declares(name);
  }

  /**
   * Every hedge instance created so far, the private ones of decorated
   * methods included; the hedge of a key is asked for with `registry.hedge(name, { key })`.
   */
  get hedges(): readonly HedgePolicy[] {
    return this.feed.hedges;
  }

  /**
   * The cache instance `name` (section `cache`), created on first use from
   * its declaration or `configs.default`; in strict mode an undeclared name
   * throws. One instance is one key space: methods that name it share its answers.
   */
  cache(name: string, where = 'ResilienceRegistry'): CachePolicy {
    return this.table.caching.get(name, where);
  }

  /**
   * @internal A private cache instance for one decorated method or pipeline: the
   * named instance's config (or `configs.default` when `anonymous`) with `overrides` applied.
   */
  deriveCache(name: string, overrides: object, place: string, where: string, anonymous = false): CachePolicy {
    return this.table.caching.derive(name, overrides, place, where, anonymous);
  }

  /** @internal True when the `cache` section declares `name`. */
  declaresCache(name: string): boolean {
    return this.table.caching.declares(name);
  }

  /** Every cache instance created so far, the private ones of decorated methods and pipelines included. */
  get caches(): readonly CachePolicy[] {
    return this.feed.caches;
  }

  /** Every instance of `policy` created so far. */
  all<P extends RegistryPolicy>(policy: P): PolicyInstances[P][] {
    return this.table.of(policy).all();
  }

  /**
   * The named instance of `policy`, created on first use. In strict mode an
   * undeclared name throws, naming `where` it was asked for. Asked for by a
   * decorated method or a pipeline (a `where` other than the default), an
   * undeclared name is held for good: it is never evicted.
   */
  get<P extends RegistryPolicy>(policy: P, name: string, where = GETTER): PolicyInstances[P] {
    return this.table.cacheOf(policy, name).get(name, where, where !== GETTER);
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
    const cache = anonymous ? this.table.of(policy) : this.table.cacheOf(policy, name);
    return cache.derive(name, overrides, place, where, anonymous);
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
    return this.feed.fallbacks;
  }

  /** @internal Records the fallback policy of a pipeline or decorated method, for observability and `recordEvents`. */
  trackFallback(policy: FallbackPolicy): void {
    this.feed.trackFallback(policy);
  }

  /** The private instances made from decorator overrides. */
  get derivedInstances(): readonly InstanceCreatedEvent[] {
    return this.feed.derived;
  }

  /** Releases timers held by the instances (on application shutdown). */
  dispose(): void {
    this.stores.dispose();
    for (const limiter of this.all('timeLimiter')) limiter.dispose();
    for (const entry of this.feed.derived) if (entry.instance instanceof TimeLimiter) entry.instance.dispose();
  }

  /** Logs `message` once for this registry. */
  warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.warn(message);
  }

  /** The instance `name` of `policy`, or of its `key` when one is given. */
  private instance<P extends RegistryPolicy>(policy: P, name: string, options?: InstanceOptions): PolicyInstances[P] {
    return this.keyed.instance(policy, this.get(policy, name), options?.key);
  }
}
