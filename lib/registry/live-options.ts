import type { ResolvedSection } from '../config/schema';
import type { ConfigChangedEvent, ReconfigurablePolicy } from '../kernel/config-change';
import type { InstanceCache } from './instance-cache';
import type { InstanceTable } from './instance-table';
import type { RegistryOptions } from './registry.options';
import { ResolvedOptions, resolveOptions } from './resolve-options';
import type { SharedStores } from './shared-stores';
import { checkStartupOnly } from './startup-options';
import { checkHedgeBudget } from './instance-kinds';
import { findKey } from '../config/relaxed-binding';

/** The policies with a section of their own among the policy sections, whose instances follow a change of it. */
const RECONFIGURABLE: readonly Exclude<ReconfigurablePolicy, 'hedge' | 'cache'>[] = [
  'retry',
  'circuitBreaker',
  'bulkhead',
  'timeLimiter',
  'rateLimiter',
];

/**
 * The module's sections of instances that no Resilience4j file has
 * (`hedging`, `cache`): a reload source need not repeat them, so one left
 * out keeps its value.
 */
type ModuleSection = 'hedging' | 'cache';

/** True when `options` gives `section` (in any spelling relaxed binding accepts). */
function gives(options: RegistryOptions, section: ModuleSection): boolean {
  return Object.entries(options).some(([key, value]) => value !== undefined && findKey(key, [section]) !== undefined);
}

/** One move of one kind of instance: its cache, what else checks its configs, and where its section is kept. */
interface Move {
  readonly cache: InstanceCache<object, object>;
  readonly check?: (config: object, place: string) => void;
  readonly keep: (section: ResolvedSection<object>) => ResolvedOptions;
}

/** The move of `cache`'s instances, whose section `keep` keeps in the options, checked by `check` too. */
function moveOf<C extends object, I extends object>(
  cache: InstanceCache<C, I>,
  keep: (section: ResolvedSection<C>) => ResolvedOptions,
  check?: (config: C, place: string) => void,
): Move {
  return { cache, keep, check } as unknown as Move;
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
    const { cache, check, keep } = this.moveOf(policy, name);
    const section = cache.patched(name, patch, 'ResilienceRegistry.reconfigure');
    const events = cache.commit(section, cache.plan(section, check));
    this.resolved = keep(section);
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
    const hedging = gives(options, 'hedging') ? next.hedging : this.resolved.hedging;
    const cache = gives(options, 'cache') ? next.cache : this.resolved.cache;
    // After the retries, whose budgets a hedge may draw from once they have moved.
    stage(this.table.hedging, hedging, checkHedgeBudget(this.table.policies.retry, next.sections.retry));
    stage(this.table.caching, cache);
    this.resolved = {
      ...this.resolved,
      sections: next.sections,
      threadPoolBulkhead: next.threadPoolBulkhead,
      hedging,
      cache,
    };
    return moves.flatMap((move) => move());
  }

  /** How instance `name` of `policy` moves: a thread-pool bulkhead in its own section, a hedge checked against the retries. */
  private moveOf(policy: ReconfigurablePolicy, name: string): Move {
    const resolved = this.resolved;
    const table = this.table;
    if (policy === 'hedge')
      return moveOf(
        table.hedging,
        (hedging) => ({ ...resolved, hedging }),
        checkHedgeBudget(table.policies.retry, resolved.sections.retry),
      );
    if (policy === 'cache') return moveOf(table.caching, (cache) => ({ ...resolved, cache }));
    if (policy === 'bulkhead' && table.onlyThreadPool(name))
      return moveOf(table.threadPoolBulkheads, (threadPoolBulkhead) => ({ ...resolved, threadPoolBulkhead }));
    return moveOf(table.of(policy), (section) => ({
      ...resolved,
      sections: { ...resolved.sections, [policy]: section },
    }));
  }
}
