import { EventStream } from '../kernel/events';
import type { CachePolicy } from '../policies/cache/cache.policy';
import type { FallbackPolicy } from '../policies/fallback/fallback.policy';
import type { HedgePolicy } from '../policies/hedge/hedge.policy';
import type { InstanceCreatedEvent, InstanceEvictedEvent, RegistryPolicy } from './policy-instances';

/** A kind of instance the registry keeps in a cache of its own: a policy's, the hedges (`hedging`) or the caches (`cache`). */
export type KindName = RegistryPolicy | 'hedging' | 'cache';

/**
 * What the registry announces of its instances, and the lists it keeps of
 * them for those who start listening later: each instance made or evicted
 * (a policy's, a hedge, a cache), the private instances of decorated
 * methods, and the fallback policies of pipelines and decorated methods.
 */
export class InstanceFeed {
  private readonly createdStream = new EventStream<InstanceCreatedEvent>();
  private readonly evictedStream = new EventStream<InstanceEvictedEvent>();
  private readonly hedgeCreatedStream = new EventStream<HedgePolicy>();
  private readonly hedgeEvictedStream = new EventStream<HedgePolicy>();
  private readonly cacheStream = new EventStream<CachePolicy>();
  private readonly fallbackStream = new EventStream<FallbackPolicy>();

  /** The private instances of the policies made from decorator overrides. */
  readonly derived: InstanceCreatedEvent[] = [];
  /** Every hedge made but those of keys, the private ones of decorated methods included. */
  readonly hedges: HedgePolicy[] = [];
  /** The hedges and caches private to one decorated method or pipeline. */
  readonly derivedOwn = new WeakSet<HedgePolicy | CachePolicy>();
  /** Every cache made, the private ones of decorated methods and pipelines included. */
  readonly caches: CachePolicy[] = [];
  /** The fallback policies of the pipelines and decorated methods made so far. */
  readonly fallbacks: FallbackPolicy[] = [];

  /** Each instance of a policy made from now on, the instances of keys included. */
  readonly onInstanceCreated = this.createdStream.subscribe;
  /** Each instance of a policy evicted from now on: a key or an undeclared name. */
  readonly onInstanceEvicted = this.evictedStream.subscribe;
  /** Each hedge made from now on: named, a decorated method's or pipeline's own, or of one key. */
  readonly onHedgeCreated = this.hedgeCreatedStream.subscribe;
  /** Each hedge evicted from now on: of a key, or an undeclared name. */
  readonly onHedgeEvicted = this.hedgeEvictedStream.subscribe;
  /** Each cache made from now on. */
  readonly onCacheCreated = this.cacheStream.subscribe;
  /** Each fallback policy of a pipeline or decorated method made from now on. */
  readonly onFallbackCreated = this.fallbackStream.subscribe;

  /** Announces an instance of `kind` made: shared (by name), a method's own (`derived`), or of one `key`. */
  made(kind: KindName, name: string, instance: unknown, derived: boolean, key?: string): void {
    if (kind === 'hedging') {
      if (key === undefined) this.hedges.push(instance as HedgePolicy);
      if (derived) this.derivedOwn.add(instance as HedgePolicy);
      if (this.hedgeCreatedStream.active) this.hedgeCreatedStream.emit(instance as HedgePolicy);
    } else if (kind === 'cache') {
      this.caches.push(instance as CachePolicy);
      if (derived) this.derivedOwn.add(instance as CachePolicy);
      if (this.cacheStream.active) this.cacheStream.emit(instance as CachePolicy);
    } else {
      const event = { policy: kind, name, instance, derived, key } as InstanceCreatedEvent;
      if (derived) this.derived.push(event);
      if (this.createdStream.active) this.createdStream.emit(event);
    }
  }

  /** Announces an instance of `kind` evicted: the instance of one `key`, or an undeclared name (a cache's are not announced). */
  evicted(kind: KindName, name: string, instance: unknown, key?: string): void {
    if (kind === 'hedging') {
      if (this.hedgeEvictedStream.active) this.hedgeEvictedStream.emit(instance as HedgePolicy);
    } else if (kind !== 'cache' && this.evictedStream.active)
      this.evictedStream.emit({ policy: kind, name, key, instance } as InstanceEvictedEvent);
  }

  /** Records the fallback policy of a pipeline or decorated method. */
  trackFallback(policy: FallbackPolicy): void {
    this.fallbacks.push(policy);
    if (this.fallbackStream.active) this.fallbackStream.emit(policy);
  }
}
