import type { ResolvedSection } from '../config/schema';
import type { ConfigChangedEvent, ReconfigurablePolicy } from '../kernel/config-change';
import type { BulkheadConfig } from '../policies/bulkhead/bulkhead.config';
import type { InstanceCache } from './instance-cache';
import type { InstanceTable } from './instance-table';
import type { RegistryOptions } from './registry.options';
import { ResolvedOptions, resolveOptions } from './resolve-options';
import type { SharedStores } from './shared-stores';
import { checkStartupOnly } from './startup-options';

/** The policies whose instances follow a change of their options. */
const RECONFIGURABLE: readonly ReconfigurablePolicy[] = [
  'retry',
  'circuitBreaker',
  'bulkhead',
  'timeLimiter',
  'rateLimiter',
];

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
    ): void => {
      const changes = cache.plan(section);
      moves.push(() => cache.commit(section, changes));
    };
    for (const policy of RECONFIGURABLE)
      stage(
        this.table.policies[policy] as unknown as InstanceCache<object, object>,
        next.sections[policy] as ResolvedSection<object>,
      );
    stage(this.table.threadPoolBulkheads, next.threadPoolBulkhead);
    this.resolved = { ...this.resolved, sections: next.sections, threadPoolBulkhead: next.threadPoolBulkhead };
    return moves.flatMap((move) => move());
  }
}
