import { Clock } from '../kernel/clock';
import { TooManyInstancesError } from '../kernel/errors';
import {
  closeName,
  describe,
  instancePlace,
  UNDECLARED_INSTANCE_CLOSE,
  UNKNOWN_INSTANCE,
} from '../config/config.messages';
import { RegistryOptions } from './registry.options';
import { POLICY_SCHEMAS, PolicyConfigs, ResolvedOptions, resolveOptions } from './resolve-options';
import { applyOverrides, resolveSection, ResolvedSection } from '../config/schema';
import { EventStream } from '../kernel/events';
import { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { RateLimiterPolicy } from '../policies/rate-limiter/rate-limiter.policy';
import { isRateLimiterStore, RateLimiterStore } from '../policies/rate-limiter/rate-limiter-store';
import { NOT_A_STORE, SHARED_WITHOUT_STORE } from '../policies/rate-limiter/rate-limiter.messages';
import { RetryPolicy } from '../policies/retry/retry.policy';
import { TimeLimiter } from '../policies/time-limiter/time-limiter.policy';
import { FallbackHandlerSpec, FallbackPolicy } from '../policies/fallback/fallback.policy';
import { ErrorClass } from '../config/error-matcher';
import { ComposedLayer, innermostFirst } from '../engine/layer-composition';
import { PipelineFallback, PipelineOptions } from './pipeline.options';
import { ResiliencePipeline } from '../engine/resilience-pipeline';
import { FaultInjector } from '../features/fault-injection/fault-injector';
import { readFaultInjectionOptions } from '../features/fault-injection/fault-injection.options';
import {
  PIPELINE_BAD_ARGUMENT,
  PIPELINE_BAD_FALLBACK,
  PIPELINE_BAD_LAYER,
  PIPELINE_HEDGE_NOT_SAFE,
  PIPELINE_NAMES_NOTHING,
  PIPELINE_UNKNOWN_KEY,
} from './pipeline.messages';
import { HedgePolicy } from '../policies/hedge/hedge.policy';
import { HedgeConfig, HEDGE_SCHEMA } from '../policies/hedge/hedge.config';
import { HEDGE_BUDGET_WITHOUT_RETRY_BUDGET } from '../policies/hedge/hedge.messages';
import { RetryBudget } from '../kernel/retry-budget';

/** The instance classes, by policy. */
export interface PolicyInstances {
  /** A retry instance. */
  retry: RetryPolicy;
  /** A circuit breaker instance. */
  circuitBreaker: CircuitBreakerPolicy;
  /** A bulkhead instance (thread-pool bulkheads included). */
  bulkhead: BulkheadPolicy;
  /** A time limiter instance. */
  timeLimiter: TimeLimiter;
  /** A rate limiter instance. */
  rateLimiter: RateLimiterPolicy;
}

/** A policy whose instances the registry creates. */
export type RegistryPolicy = keyof PolicyInstances;

/** Announced whenever the registry creates an instance (at bootstrap or later). */
export interface InstanceCreatedEvent<P extends RegistryPolicy = RegistryPolicy> {
  /** The policy the instance belongs to. */
  readonly policy: P;
  /** The instance's name (a derived instance shares its base instance's name). */
  readonly name: string;
  /** The instance just created. */
  readonly instance: PolicyInstances[P];
  /** True for a method's private instance made from decorator overrides. */
  readonly derived: boolean;
}

type Factory<P extends RegistryPolicy> = (
  name: string,
  config: PolicyConfigs[P],
  registry: ResilienceRegistry,
) => PolicyInstances[P];

/** The registry's policies in a pipeline's options, and the fallback. */
const PIPELINE_POLICIES: readonly RegistryPolicy[] = [
  'retry',
  'circuitBreaker',
  'rateLimiter',
  'timeLimiter',
  'bulkhead',
];
const PIPELINE_KEYS = ['name', ...PIPELINE_POLICIES, 'hedge', 'fallback'];

const FACTORIES: { readonly [P in RegistryPolicy]: Factory<P> } = {
  retry: (name, config, registry) => new RetryPolicy(name, config, registry.clock, registry.random),
  circuitBreaker: (name, config, registry) => new CircuitBreakerPolicy(name, config, registry.clock, registry.random),
  bulkhead: (name, config, registry) => new BulkheadPolicy(name, config, registry.clock),
  timeLimiter: (name, config, registry) =>
    new TimeLimiter(name, config, registry.clock, registry.options.deadline.attemptContext),
  rateLimiter: (name, config, registry) =>
    new RateLimiterPolicy(name, config, registry.clock, config.shared ? registry.rateLimiterStore : undefined),
};

/**
 * Holds every named policy instance of one application. Injectable in Nest
 * (`ResilienceRegistry`), and usable without Nest: `new ResilienceRegistry(options)`.
 * An instance not declared in the options is created from `configs.default`.
 */
export class ResilienceRegistry {
  /**
   * The validated options.
   *
   * @internal
   */
  readonly options: ResolvedOptions;
  /** The faults injected per instance name (module option `faultInjection`; off unless enabled). */
  readonly faults: FaultInjector;
  /** Where shared rate limiters keep their permits (module option `rateLimiterStore`). */
  readonly rateLimiterStore: RateLimiterStore | undefined;
  private readonly instances: { [P in RegistryPolicy]: Map<string, PolicyInstances[P]> } = {
    retry: new Map(),
    circuitBreaker: new Map(),
    bulkhead: new Map(),
    timeLimiter: new Map(),
    rateLimiter: new Map(),
  };
  private readonly threadPoolBulkheads = new Map<string, BulkheadPolicy>();
  private readonly derived: InstanceCreatedEvent[] = [];
  private readonly fallbackPolicies: FallbackPolicy[] = [];
  private readonly fallbackStream = new EventStream<FallbackPolicy>();
  private readonly hedging: ResolvedSection<HedgeConfig>;
  private readonly hedgeInstances = new Map<string, HedgePolicy>();
  private readonly hedgeList: HedgePolicy[] = [];
  private readonly createdStream = new EventStream<InstanceCreatedEvent>();
  private readonly warned = new Set<string>();
  private readonly undeclared: { [P in RegistryPolicy]: number } = {
    retry: 0,
    circuitBreaker: 0,
    bulkhead: 0,
    timeLimiter: 0,
    rateLimiter: 0,
  };

  /** Every instance created from now on (subscribe, then read {@link ResilienceRegistry.all} for the earlier ones). */
  readonly onInstanceCreated = this.createdStream.subscribe;

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
    this.options = resolveOptions(options, (m) => this.warnOnce(m));
    this.rateLimiterStore = readRateLimiterStore(this.options.extras.rateLimiterStore);
    this.faults = new FaultInjector(
      readFaultInjectionOptions(this.options.extras.faultInjection),
      this.clock,
      this.random,
      process.env.NODE_ENV,
      (m) => this.warnOnce(m),
    );
    this.hedging = resolveSection(HEDGE_SCHEMA, this.options.extras.hedging, (m) => this.warnOnce(m));
    const limiters = this.options.sections.rateLimiter;
    if (limiters.defaultConfig.shared)
      requireStore(this.rateLimiterStore, instancePlace('rateLimiter', 'config', 'default'));
    for (const [name, config] of limiters.instances)
      if (config.shared) requireStore(this.rateLimiterStore, instancePlace('rateLimiter', 'instance', name));
  }

  /** The clock every policy of this registry uses. */
  get clock(): Clock {
    return this.options.clock;
  }

  /** The random source used for jitter. */
  get random(): () => number {
    return this.options.random;
  }

  /** The retry instance `name`. */
  retry(name: string): RetryPolicy {
    return this.get('retry', name);
  }

  /** The circuit breaker instance `name`. */
  circuitBreaker(name: string): CircuitBreakerPolicy {
    return this.get('circuitBreaker', name);
  }

  /**
   * The bulkhead instance `name`: the semaphore bulkhead (Resilience4j's
   * default type), or the thread-pool bulkhead when only `threadPoolBulkhead`
   * declares the name.
   */
  bulkhead(name: string): BulkheadPolicy {
    return this.get('bulkhead', name);
  }

  /**
   * The thread-pool bulkhead `name` (`@Bulkhead(name, { type: 'THREADPOOL' })`),
   * run as a bulkhead of `maxThreadPoolSize` calls at once and `queueCapacity`
   * waiting; an undeclared name gets `threadPoolBulkhead.configs.default`.
   */
  threadPoolBulkhead(name: string, where = 'ResilienceRegistry'): BulkheadPolicy {
    const existing = this.threadPoolBulkheads.get(name);
    if (existing !== undefined) return existing;
    const section = this.options.threadPoolBulkhead;
    const declared = section.instances.get(name);
    if (declared === undefined) {
      if (this.options.strict) throw new Error(UNKNOWN_INSTANCE('threadPoolBulkhead', name, where));
      this.countUndeclared('bulkhead', name);
    }
    const instance = this.create('bulkhead', name, declared ?? section.defaultConfig, false);
    this.threadPoolBulkheads.set(name, instance);
    return instance;
  }

  /** @internal A private thread-pool bulkhead for one decorated method: `name`'s config with `overrides` applied. */
  deriveThreadPoolBulkhead(name: string, overrides: object, place: string, where: string): BulkheadPolicy {
    const section = this.options.threadPoolBulkhead;
    const declared = section.instances.get(name);
    if (declared === undefined && this.options.strict)
      throw new Error(UNKNOWN_INSTANCE('threadPoolBulkhead', name, where));
    const config = applyOverrides(POLICY_SCHEMAS.bulkhead, declared ?? section.defaultConfig, overrides, place, (m) =>
      this.warnOnce(m),
    );
    return this.create('bulkhead', name, config, true);
  }

  /** The rate limiter instance `name`. */
  rateLimiter(name: string): RateLimiterPolicy {
    return this.get('rateLimiter', name);
  }

  /** The time limiter instance `name`. */
  timeLimiter(name: string): TimeLimiter {
    return this.get('timeLimiter', name);
  }

  /**
   * The hedge instance `name` (section `hedging`), created on first use from
   * its declaration or `configs.default`; in strict mode an undeclared name throws.
   */
  hedge(name: string, where = 'ResilienceRegistry'): HedgePolicy {
    const existing = this.hedgeInstances.get(name);
    if (existing !== undefined) return existing;
    const declared = this.hedging.instances.get(name);
    if (declared === undefined && this.options.strict) throw new Error(UNKNOWN_INSTANCE('hedging', name, where));
    const place = instancePlace(
      'hedging',
      declared === undefined ? 'config' : 'instance',
      declared === undefined ? 'default' : name,
    );
    const instance = this.createHedge(name, declared ?? this.hedging.defaultConfig, place);
    this.hedgeInstances.set(name, instance);
    return instance;
  }

  /**
   * @internal A private hedge instance for one decorated method: the named
   * instance's config (or `configs.default` when `anonymous`) with `overrides` applied.
   */
  deriveHedge(name: string, overrides: object, place: string, where: string, anonymous = false): HedgePolicy {
    const declared = anonymous ? undefined : this.hedging.instances.get(name);
    if (!anonymous && declared === undefined && this.options.strict)
      throw new Error(UNKNOWN_INSTANCE('hedging', name, where));
    const config = applyOverrides(HEDGE_SCHEMA, declared ?? this.hedging.defaultConfig, overrides, place, (m) =>
      this.warnOnce(m),
    );
    return this.createHedge(name, config, place);
  }

  /** Every hedge instance created so far, the private ones of decorated methods included. */
  get hedges(): readonly HedgePolicy[] {
    return this.hedgeList;
  }

  private createHedge(name: string, config: HedgeConfig, place: string): HedgePolicy {
    let budget: RetryBudget;
    let refills = true;
    if (typeof config.budget === 'string') {
      const shared = this.get('retry', config.budget, place).retryBudget;
      if (shared === undefined) throw new Error(HEDGE_BUDGET_WITHOUT_RETRY_BUDGET(place, config.budget));
      budget = shared;
      refills = false;
    } else budget = new RetryBudget(config.budget);
    const instance = new HedgePolicy(name, config, this.clock, budget, refills);
    this.hedgeList.push(instance);
    return instance;
  }

  /** Every instance of `policy` created so far. */
  all<P extends RegistryPolicy>(policy: P): PolicyInstances[P][] {
    return [...this.instances[policy].values()];
  }

  /**
   * The named instance of `policy`, created on first use. In strict mode an
   * undeclared name throws, naming `where` it was asked for.
   */
  get<P extends RegistryPolicy>(policy: P, name: string, where = 'ResilienceRegistry'): PolicyInstances[P] {
    const map = this.instances[policy] as Map<string, PolicyInstances[P]>;
    const existing = map.get(name);
    if (existing !== undefined) return existing;
    if (policy === 'bulkhead' && this.onlyThreadPool(name))
      return this.threadPoolBulkhead(name, where) as PolicyInstances[P];
    const config = this.configOf(policy, name, where);
    if (!this.options.sections[policy].instances.has(name)) this.countUndeclared(policy, name);
    const instance = this.create(policy, name, config, false);
    map.set(name, instance);
    return instance;
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
    const base = anonymous ? this.options.sections[policy].defaultConfig : this.configOf(policy, name, where);
    const config = applyOverrides(POLICY_SCHEMAS[policy], base, overrides, place, (m) => this.warnOnce(m));
    if (policy === 'rateLimiter' && (config as PolicyConfigs['rateLimiter']).shared)
      requireStore(this.rateLimiterStore, place);
    return this.create(policy, name, config, true);
  }

  /** True when `name` is a thread-pool bulkhead and no semaphore bulkhead: `@Bulkhead(name)` then uses it, as it did before both could share a name. */
  private onlyThreadPool(name: string): boolean {
    return this.options.threadPoolBulkhead.instances.has(name) && !this.options.sections.bulkhead.instances.has(name);
  }

  private countUndeclared(policy: RegistryPolicy, name: string): void {
    if (this.undeclared[policy] >= this.options.maxUndeclaredInstances)
      throw new TooManyInstancesError(policy, name, this.options.maxUndeclaredInstances);
    this.undeclared[policy]++;
  }

  /** The declared config of `name`, else `configs.default`; in strict mode an undeclared name throws. */
  private configOf<P extends RegistryPolicy>(policy: P, name: string, where: string): PolicyConfigs[P] {
    const section = this.options.sections[policy];
    const declared = section.instances.get(name);
    if (declared !== undefined) return declared;
    const close = closeName(name, section.instances.keys());
    if (this.options.strict) throw new Error(UNKNOWN_INSTANCE(policy, name, where, close));
    if (close !== undefined) this.warnOnce(UNDECLARED_INSTANCE_CLOSE(policy, name, where, close));
    return section.defaultConfig;
  }

  private create<P extends RegistryPolicy>(
    policy: P,
    name: string,
    config: PolicyConfigs[P],
    derived: boolean,
  ): PolicyInstances[P] {
    const instance = (FACTORIES[policy] as Factory<P>)(name, config, this);
    const event = { policy, name, instance, derived } as InstanceCreatedEvent;
    if (derived) this.derived.push(event);
    if (this.createdStream.active) this.createdStream.emit(event);
    return instance;
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
   * ```
   */
  pipeline(nameOrOptions: string | PipelineOptions): ResiliencePipeline {
    if (typeof nameOrOptions === 'string') return this.namedPipeline(nameOrOptions);
    if (nameOrOptions === null || typeof nameOrOptions !== 'object' || Array.isArray(nameOrOptions))
      throw new Error(PIPELINE_BAD_ARGUMENT(nameOrOptions));
    const options = nameOrOptions;
    const name = options.name ?? 'pipeline';
    if (typeof name !== 'string') throw new Error(PIPELINE_BAD_LAYER('pipeline', 'name', name));
    for (const key of Object.keys(options))
      if (!PIPELINE_KEYS.includes(key)) throw new Error(PIPELINE_UNKNOWN_KEY(name, key, PIPELINE_KEYS));
    const where = `pipeline '${name}'`;
    const layers: ComposedLayer[] = [];
    for (const policy of PIPELINE_POLICIES) {
      const given: unknown = options[policy];
      if (given === undefined) continue;
      if (typeof given === 'string') layers.push({ kind: policy, policy: this.get(policy, given, where) });
      else if (given !== null && typeof given === 'object' && !Array.isArray(given))
        layers.push({
          kind: policy,
          policy: this.derive(policy, name, given, `${policy} options of ${where}`, where, true),
        });
      else throw new Error(PIPELINE_BAD_LAYER(name, policy, given));
    }
    const hedge: unknown = options.hedge;
    if (typeof hedge === 'string') layers.push(this.pipelineHedge(name, this.hedge(hedge, where)));
    else if (hedge !== undefined && hedge !== null && typeof hedge === 'object' && !Array.isArray(hedge))
      layers.push(this.pipelineHedge(name, this.deriveHedge(name, hedge, `hedge options of ${where}`, where, true)));
    else if (hedge !== undefined) throw new Error(PIPELINE_BAD_LAYER(name, 'hedge', hedge));
    let fallback: FallbackPolicy | undefined;
    if (options.fallback !== undefined) {
      fallback = new FallbackPolicy(name, pipelineFallbacks(name, options.fallback));
      layers.push({ kind: 'fallback', policy: fallback });
      this.trackFallback(fallback);
    }
    return this.makePipeline(name, layers, fallback);
  }

  private namedPipeline(name: string): ResiliencePipeline {
    const layers: ComposedLayer[] = PIPELINE_POLICIES.filter((policy) =>
      this.options.sections[policy].instances.has(name),
    ).map((policy) => ({ kind: policy, policy: this.get(policy, name, `pipeline '${name}'`) }));
    if (this.hedging.instances.has(name)) layers.push(this.pipelineHedge(name, this.hedge(name, `pipeline '${name}'`)));
    if (layers.length === 0) throw new Error(PIPELINE_NAMES_NOTHING(name));
    return this.makePipeline(name, layers, undefined);
  }

  /** A pipeline's hedge layer; refused unless the instance is declared safe to repeat. */
  private pipelineHedge(pipeline: string, hedge: HedgePolicy): ComposedLayer {
    if (!hedge.config.safe) throw new Error(PIPELINE_HEDGE_NOT_SAFE(pipeline, hedge.name));
    return { kind: 'hedge', policy: hedge };
  }

  private makePipeline(
    name: string,
    layers: ComposedLayer[],
    fallback: FallbackPolicy | undefined,
  ): ResiliencePipeline {
    const faults = this.faults;
    const names = [...new Set([...layers.filter((l) => l.kind !== 'fallback').map((l) => l.policy.name), name])];
    return new ResiliencePipeline(
      name,
      innermostFirst(layers, this.options.order),
      this.clock,
      fallback,
      faults.enabled
        ? { wrapCall: (call) => faults.wrapCall(names, call), observe: (source) => faults.observe(names, source) }
        : undefined,
    );
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
    for (const limiter of this.instances.timeLimiter.values()) limiter.dispose();
    for (const entry of this.derived) if (entry.instance instanceof TimeLimiter) entry.instance.dispose();
  }

  /** Logs `message` once for this registry. */
  warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.warn(message);
  }
}

/** A pipeline's fallbacks as the fallback policy's handler specs, checked. */
function pipelineFallbacks(name: string, given: PipelineFallback | readonly PipelineFallback[]): FallbackHandlerSpec[] {
  const list: readonly unknown[] = Array.isArray(given) ? given : [given];
  return list.map((entry) => {
    const candidate = entry as Partial<PipelineFallback> | null;
    const errors: unknown = candidate?.errors;
    const classes: unknown[] = Array.isArray(errors) ? errors : [errors];
    const handler = candidate?.handler;
    if (typeof handler !== 'function' || classes.length === 0 || classes.some((c) => typeof c !== 'function'))
      throw new Error(PIPELINE_BAD_FALLBACK(name, entry));
    return {
      errors: classes as ErrorClass[],
      handler: (_args: unknown[], error: unknown) => handler(error),
    };
  });
}

function readRateLimiterStore(value: unknown): RateLimiterStore | undefined {
  if (value === undefined) return undefined;
  if (!isRateLimiterStore(value)) throw new Error(NOT_A_STORE(describe(value)));
  return value;
}

function requireStore(store: RateLimiterStore | undefined, place: string): void {
  if (store === undefined) throw new Error(SHARED_WITHOUT_STORE(place));
}
