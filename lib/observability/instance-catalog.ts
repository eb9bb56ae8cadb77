import { Injectable } from '@nestjs/common';
import { Unsubscribe } from '../kernel/events';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { InstanceCreatedEvent, RegistryPolicy } from '../registry/policy-instances';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { POLICY_SCHEMAS } from '../registry/resolve-options';
import { CachePolicy } from '../policies/cache/cache.policy';
import type { HedgePolicy } from '../policies/hedge/hedge.policy';
import { HEDGE_METRICS } from '../policies/hedge/hedge.metrics';
import type { LruEntry } from '../registry/instance-lru';

/** A method's fallback policy, in the shape of the registry's instances. */
export interface ObservedFallback {
  readonly policy: 'fallback';
  /** `Class.method`. */
  readonly name: string;
  readonly instance: FallbackPolicy;
  readonly derived: false;
}

/** A cache instance, named or private to one decorated method or pipeline. */
export interface ObservedCache {
  readonly policy: 'cache';
  readonly name: string;
  readonly instance: CachePolicy;
  /** True for a cache private to one decorated method or pipeline. */
  readonly derived: boolean;
}

/** An instance observability reports on: one of the registry's, a cache, or a method's fallback policy. */
export type ObservedInstance =
  { [P in RegistryPolicy]: InstanceCreatedEvent<P> }[RegistryPolicy] | ObservedFallback | ObservedCache;

/** What a watcher of instances takes besides the new ones. */
export interface WatchOptions {
  /** Also visit the instance of each key of an instance used per key (off: only named and derived instances). */
  readonly keys?: boolean;
  /** Told of each instance visited that the registry evicts (an idle key, an undeclared name). */
  readonly evicted?: (observed: ObservedInstance) => void;
}

/** The policies whose named instances the registry makes: those with an options section. */
const POLICIES = Object.keys(POLICY_SCHEMAS) as RegistryPolicy[];

/**
 * Calls `visit` once for every instance of `registry` (its caches included) and every fallback
 * policy (of decorated methods and of the registry's pipelines): the declared instances (created now, as Resilience4j creates its
 * configured instances at startup, so their series exist before the first
 * call), those made so far, and each one made later. Returns the function
 * that stops watching for later ones.
 */
export function watchInstances(
  registry: ResilienceRegistry,
  fallbacks: readonly FallbackPolicy[],
  visit: (observed: ObservedInstance) => void,
  options: WatchOptions = {},
): Unsubscribe {
  const seen = new Set<object>();
  const once = (observed: ObservedInstance): void => {
    if (seen.has(observed.instance)) return;
    if (options.keys !== true && 'key' in observed && observed.key !== undefined) return;
    seen.add(observed.instance);
    visit(observed);
  };
  // Subscribed first, so an instance made while the existing ones are visited is not missed.
  const unsubscribe = registry.onInstanceCreated((event) => once(event as ObservedInstance));
  // An evicted instance is forgotten, so that a watcher holds no instance the registry let go.
  const unsubscribeEvicted = registry.onInstanceEvicted((event) => {
    if (!seen.delete(event.instance)) return;
    options.evicted?.({ ...event, derived: false } as ObservedInstance);
  });
  const visitFallback = (instance: FallbackPolicy): void =>
    once({ policy: 'fallback', name: instance.name, instance, derived: false });
  const unsubscribePipelines = registry.onFallbackCreated(visitFallback);
  const visitCache = (instance: CachePolicy): void =>
    once({ policy: 'cache', name: instance.name, instance, derived: registry.isDerived(instance) });
  const unsubscribeCaches = registry.onCacheCreated(visitCache);
  for (const policy of POLICIES) {
    for (const name of registry.options.sections[policy].instances.keys()) registry.get(policy, name);
    for (const instance of registry.all(policy))
      once({ policy, name: instance.name, instance, derived: false } as ObservedInstance);
    if (options.keys === true)
      for (const { key, instance } of registry.allKeys(policy))
        once({ policy, name: instance.name, instance, derived: false, key } as ObservedInstance);
  }
  for (const name of registry.options.threadPoolBulkhead.instances.keys()) registry.threadPoolBulkhead(name);
  for (const event of registry.derivedInstances) once(event as ObservedInstance);
  for (const instance of [...fallbacks, ...registry.fallbacks]) visitFallback(instance);
  for (const name of registry.options.cache.instances.keys()) registry.cache(name);
  for (const instance of registry.caches) visitCache(instance);
  return () => {
    unsubscribe();
    unsubscribeEvicted();
    unsubscribePipelines();
    unsubscribeCaches();
  };
}

/**
 * A hedge instance: named, private to one decorated method or pipeline, or
 * of one key. It reports Prometheus series only, not the rest of the
 * telemetry channel, so {@link watchSeries} alone hands it out.
 */
export interface ObservedHedge {
  readonly policy: 'hedge';
  readonly name: string;
  readonly instance: HedgePolicy;
  /** True for a hedge private to one decorated method or pipeline. */
  readonly derived: boolean;
  readonly key?: string;
}

/** An instance with Prometheus series: one {@link watchInstances} visits, or a hedge. */
export type ObservedSeries = ObservedInstance | ObservedHedge;

const observedHedge = (registry: ResilienceRegistry, instance: HedgePolicy): ObservedHedge => ({
  policy: 'hedge',
  name: instance.name,
  instance,
  derived: registry.isDerived(instance),
  key: instance.key,
});

/**
 * Calls `visit` once for every hedge of `registry` (named, a method's or
 * pipeline's own, of one key), made so far or later; `evicted` is told of
 * each one visited that the registry evicts (an idle key, an undeclared
 * name). Returns the function that stops watching.
 */
export function watchHedges(
  registry: ResilienceRegistry,
  visit: (observed: ObservedHedge) => void,
  evicted: (observed: ObservedHedge) => void,
): Unsubscribe {
  const seen = new Set<HedgePolicy>();
  const visitHedge = (instance: HedgePolicy): void => {
    if (seen.has(instance)) return;
    seen.add(instance);
    visit(observedHedge(registry, instance));
  };
  // Subscribed first, so a hedge made while the existing ones are visited is not missed.
  const unsubscribeCreated = registry.onHedgeCreated(visitHedge);
  const unsubscribeEvicted = registry.onHedgeEvicted((instance) => {
    if (seen.delete(instance)) evicted(observedHedge(registry, instance));
  });
  for (const instance of registry.hedges) visitHedge(instance);
  for (const { instance } of registry.allHedgeKeys()) visitHedge(instance);
  return () => {
    unsubscribeCreated();
    unsubscribeEvicted();
  };
}

/**
 * Calls `visit` once for every instance with Prometheus series: those
 * {@link watchInstances} visits, the instance of each key included, and
 * every hedge ({@link watchHedges}); `evicted` is told of each one the
 * registry evicts. Returns the function that stops watching.
 */
export function watchSeries(
  registry: ResilienceRegistry,
  fallbacks: readonly FallbackPolicy[],
  visit: (observed: ObservedSeries) => void,
  evicted: (observed: ObservedSeries) => void,
): Unsubscribe {
  const unsubscribe = watchInstances(registry, fallbacks, visit, { keys: true, evicted });
  const unsubscribeHedges = watchHedges(registry, visit, evicted);
  return () => {
    unsubscribe();
    unsubscribeHedges();
  };
}

/** The keys kept now of every instance of `policy` used per key (hedges included), with how often each was used. */
export function keysKept(registry: ResilienceRegistry, policy: string): readonly LruEntry<{ readonly name: string }>[] {
  return policy === HEDGE_METRICS.policy ? registry.allHedgeKeys() : registry.allKeys(policy as RegistryPolicy);
}

/**
 * The instances of one application — the registry's, and the fallback
 * policies of its decorated methods and pipelines, which it tracks too — for
 * the metrics, logs, health and status endpoints. Watch from `onApplicationBootstrap`,
 * once the explorer has composed every pipeline. A fallback policy's calls
 * come from its {@link FallbackPolicy.onCall} event.
 */
@Injectable()
export class InstanceCatalog {
  constructor(
    /** The application's registry. */
    readonly registry: ResilienceRegistry,
  ) {}

  /**
   * See {@link watchInstances}; `evicted` is told of each instance visited
   * that the registry evicts (an undeclared name, or with `keys` an idle key).
   */
  watch(
    visit: (observed: ObservedInstance) => void,
    evicted?: (observed: ObservedInstance) => void,
    keys = false,
  ): Unsubscribe {
    return watchInstances(this.registry, [], visit, { evicted, keys });
  }

  /** See {@link watchHedges}. */
  watchHedges(visit: (observed: ObservedHedge) => void, evicted: (observed: ObservedHedge) => void): Unsubscribe {
    return watchHedges(this.registry, visit, evicted);
  }

  /** The fallback policies of the decorated methods and pipelines. */
  get fallbacks(): readonly FallbackPolicy[] {
    return this.registry.fallbacks;
  }
}
