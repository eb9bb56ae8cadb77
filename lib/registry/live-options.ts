import type { ResolvedSection } from '../config/schema';
import type { ConfigChangedEvent, ReconfigurablePolicy } from '../kernel/config-change';
import type { BulkheadConfig } from '../policies/bulkhead/bulkhead.config';
import type { InstanceCache } from './instance-cache';
import type { InstanceTable } from './instance-table';
import type { RegistryOptions } from './registry.options';
import { ResolvedOptions, resolveOptions } from './resolve-options';
import type { SharedStores } from './shared-stores';
import { checkStartupOnly } from './startup-options';
import { checkHedgeBudget } from './instance-kinds';
import { findKey } from '../config/relaxed-binding';

/** The policies with a section of their own in the options, whose instances follow a change of it. */
const RECONFIGURABLE: readonly Exclude<ReconfigurablePolicy, 'hedge'>[] = [
  'retry',
  'circuitBreaker',
  'bulkhead',
  'timeLimiter',
  'rateLimiter',
];

/** True when `options` gives a `hedging` section (in any spelling relaxed binding accepts). */
function givesHedging(options: RegistryOptions): boolean {
  return Object.entries(options).some(([key, value]) => value !== undefined && findKey(key, ['hedging']) !== undefined);
}

/**
 * The options in force, and the moves to new ones while the instances
 * run: one instance's settings patched ({@link LiveOptions.reconfigure}),
 * or the policy sections of a whole options object
 * ({@link LiveOptions.apply}). Each move is checked in full, every
 * instance it reaches included, before any instance changes.
 */
export class LiveOptions {
  /**
   * @param resolved - the options at startup
   * @param table - the caches whose instances follow a change
   * @param stores - what shared instances need, checked for the new options
   * @param warnOnce - receives each one-time warning of the new options
   */
  constructor(
    private resolved: ResolvedOptions,
    private readonly table: InstanceTable,
    private readonly stores: SharedStores,
    private readonly warnOnce: (message: string) => void,
  ) {}

  /** The validated options: those given at startup, with the policy sections in force. */
  get options(): ResolvedOptions {
    return this.resolved;
  }

  /** See `ResilienceRegistry.reconfigure`. */
  reconfigure(policy: ReconfigurablePolicy, name: string, patch: object): ConfigChangedEvent[] {
    if (policy === 'hedge') {
      const hedging = this.table.hedging;
      const section = hedging.patched(name, patch, 'ResilienceRegistry.reconfigure');
      const changes = hedging.plan(section, checkHedgeBudget(this.table.policies.retry, this.resolved.sections.retry));
      const events = hedging.commit(section, changes);
      this.resolved = { ...this.resolved, hedging: section };
      return events;
    }
    const cache = this.table.cacheOf(policy, name) as unknown as InstanceCache<object, object>;
    const section = cache.patched(name, patch, 'ResilienceRegistry.reconfigure');
    const events = cache.commit(section, cache.plan(section));
    this.resolved =
      cache === (this.table.threadPoolBulkheads as unknown)
        ? { ...this.resolved, threadPoolBulkhead: section as ResolvedSection<BulkheadConfig> }
        : { ...this.resolved, sections: { ...this.resolved.sections, [policy]: section } };
    return events;
  }

  /** See `ResilienceRegistry.applyOptions`. */
  apply(options: RegistryOptions): ConfigChangedEvent[] {
    const next = resolveOptions(options, this.warnOnce);
    checkStartupOnly(options, this.resolved, next);
    this.stores.check(next.sections.rateLimiter, next.sections.circuitBreaker);
    const moves: Array<() => ConfigChangedEvent[]> = [];
    const stage = <C extends object, I extends object>(
      cache: InstanceCache<C, I>,
      section: ResolvedSection<C>,
      check?: (config: C, place: string) => void,
    ): void => {
      const changes = cache.plan(section, check);
      moves.push(() => cache.commit(section, changes));
    };
    for (const policy of RECONFIGURABLE)
      stage(
        this.table.policies[policy] as unknown as InstanceCache<object, object>,
        next.sections[policy] as ResolvedSection<object>,
      );
    stage(this.table.threadPoolBulkheads, next.threadPoolBulkhead);
    // Hedging has no place in a Resilience4j file, so a reload source need not repeat it: left out, it keeps its value.
    const hedging = givesHedging(options) ? next.hedging : this.resolved.hedging;
    // After the retries, whose budgets a hedge may draw from once they have moved.
    stage(this.table.hedging, hedging, checkHedgeBudget(this.table.policies.retry, next.sections.retry));
    this.resolved = {
      ...this.resolved,
      sections: next.sections,
      threadPoolBulkhead: next.threadPoolBulkhead,
      hedging,
    };
    return moves.flatMap((move) => move());
  }
}
