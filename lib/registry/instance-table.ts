import type { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import type { CacheConfig } from '../policies/cache/cache.config';
import type { CachePolicy } from '../policies/cache/cache.policy';
import type { HedgeConfig } from '../policies/hedge/hedge.config';
import type { HedgePolicy } from '../policies/hedge/hedge.policy';
import { InstanceCache, InstanceKind } from './instance-cache';
import type { InstanceFeed, KindName } from './instance-feed';
import { cacheKind, hedgeKind, KindSource, policyKind, threadPoolBulkheadKind } from './instance-kinds';
import type { PolicyInstances, RegistryPolicy } from './policy-instances';
import type { PolicyConfigs, ResolvedOptions } from './resolve-options';

/** What the table asks of the registry: the factory table's source, and where one-time warnings go. */
export interface TableSource extends KindSource {
  /** Logs `message` once for the registry. */
  warnOnce(message: string): void;
}

/**
 * The registry's instances, one cache per kind: each policy's, the
 * thread-pool bulkheads', the hedges' and the caches', each made from its
 * entry of the factory table (`instance-kinds.ts`) and telling the feed of
 * every instance it makes and evicts. A bulkhead name only the thread pool
 * declares is the thread pool's.
 */
export class InstanceTable {
  /** The cache of each policy's instances (the semaphore bulkheads for `bulkhead`). */
  readonly policies: { readonly [P in RegistryPolicy]: InstanceCache<PolicyConfigs[P], PolicyInstances[P]> };
  /** The thread-pool bulkheads (section `threadPoolBulkhead`). */
  readonly threadPoolBulkheads: InstanceCache<PolicyConfigs['bulkhead'], BulkheadPolicy>;
  /** The hedges (section `hedging`). */
  readonly hedging: InstanceCache<HedgeConfig, HedgePolicy>;
  /** The caches (section `cache`). */
  readonly caching: InstanceCache<CacheConfig, CachePolicy>;

  /**
   * @param source - the registry, which the factory table reads
   * @param options - the options at startup
   * @param feed - told of every instance made and evicted
   * @param warn - receives the caches' warnings
   */
  constructor(
    private readonly source: TableSource,
    private readonly options: ResolvedOptions,
    private readonly feed: InstanceFeed,
    warn: (message: string) => void,
  ) {
    const sections = options.sections;
    const bound = options.maxUndeclaredInstances;
    this.policies = {
      retry: this.cache(policyKind(source, 'retry', sections.retry), 'retry', bound),
      circuitBreaker: this.cache(
        policyKind(source, 'circuitBreaker', sections.circuitBreaker),
        'circuitBreaker',
        bound,
      ),
      bulkhead: this.cache(policyKind(source, 'bulkhead', sections.bulkhead), 'bulkhead', bound),
      timeLimiter: this.cache(policyKind(source, 'timeLimiter', sections.timeLimiter), 'timeLimiter', bound),
      rateLimiter: this.cache(policyKind(source, 'rateLimiter', sections.rateLimiter), 'rateLimiter', bound),
    };
    this.threadPoolBulkheads = this.cache(
      threadPoolBulkheadKind(source, options.threadPoolBulkhead),
      'bulkhead',
      bound,
    );
    this.hedging = this.cache(hedgeKind(source, options.hedging), 'hedging', Infinity);
    this.caching = this.cache(cacheKind(source, options.cache, warn), 'cache', Infinity);
  }

  /** The cache of `policy`'s instances (the semaphore bulkheads for `bulkhead`). */
  of<P extends RegistryPolicy>(policy: P): InstanceCache<PolicyConfigs[P], PolicyInstances[P]> {
    return this.policies[policy];
  }

  /** The cache that makes the instance `name` of `policy`: the thread pool's for a bulkhead name only it declares. */
  cacheOf<P extends RegistryPolicy>(policy: P, name: string): InstanceCache<PolicyConfigs[P], PolicyInstances[P]> {
    if (policy === 'bulkhead' && this.onlyThreadPool(name))
      return this.threadPoolBulkheads as unknown as InstanceCache<PolicyConfigs[P], PolicyInstances[P]>;
    return this.of(policy);
  }

  /** True when `name` is a thread-pool bulkhead and no semaphore bulkhead: `@Bulkhead(name)` then uses it, as it did before both could share a name. */
  onlyThreadPool(name: string): boolean {
    return this.threadPoolBulkheads.declares(name) && !this.policies.bulkhead.declares(name);
  }

  /** The cache of one kind of instance, with `maxUndeclared` undeclared names kept at most. */
  private cache<C extends object, I extends object>(
    kind: InstanceKind<C, I>,
    name: KindName,
    maxUndeclared: number,
  ): InstanceCache<C, I> {
    return new InstanceCache(kind, {
      strict: this.options.strict,
      maxUndeclared,
      policy: name,
      clock: this.options.clock,
      warnOnce: (message) => this.source.warnOnce(message),
      made: (instanceName, instance, derived, key) => this.feed.made(name, instanceName, instance, derived, key),
      evicted: (instanceName, instance, key) => this.feed.evicted(name, instanceName, instance, key),
    });
  }
}
