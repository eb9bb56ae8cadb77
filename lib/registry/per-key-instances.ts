import type { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import type { HedgePolicy } from '../policies/hedge/hedge.policy';
import type { LruEntry } from './instance-lru';
import type { InstanceTable } from './instance-table';
import type { KeyedInstances } from './keyed-instances';
import type { PolicyInstances, RegistryPolicy } from './policy-instances';

/**
 * The instances of keys (a breaker per host, a hedge per region): each
 * named or derived instance keeps its keys in the cache that made it, each
 * key's instance made from its config (see {@link KeyedInstances}). This
 * finds that cache for an instance of a policy, thread-pool bulkheads
 * included, and for a hedge. A key evicted is told to the feed by its cache.
 */
export class PerKeyInstances {
  constructor(private readonly table: InstanceTable) {}

  /** The instance of `key` of `named`, an instance of `policy`; `named` itself without a key. */
  instance<P extends RegistryPolicy>(
    policy: P,
    named: PolicyInstances[P],
    key: string | undefined,
  ): PolicyInstances[P] {
    return key === undefined ? named : this.keysOf(policy, named).get(key);
  }

  /** The keys kept now of `named`, the instance `name` of `policy`, each with its instance (idle keys evicted first). */
  kept<P extends RegistryPolicy>(
    policy: P,
    name: string,
    named: PolicyInstances[P],
  ): ReadonlyMap<string, PolicyInstances[P]> {
    const family = this.table.cacheOf(policy, name).existingKeysOf(named);
    return new Map((family?.entries() ?? []).map((entry) => [entry.key, entry.instance]));
  }

  /** The instance of every key kept now, of every instance of `policy` (thread-pool bulkheads included). */
  all<P extends RegistryPolicy>(policy: P): readonly LruEntry<PolicyInstances[P]>[] {
    const threadPool = policy === 'bulkhead' ? this.table.threadPoolBulkheads.allKeys() : [];
    return [...this.table.of(policy).allKeys(), ...(threadPool as unknown as LruEntry<PolicyInstances[P]>[])];
  }

  /** The keys of `instance`, a named or derived instance of `policy` the registry made. */
  keysOf<P extends RegistryPolicy>(policy: P, instance: PolicyInstances[P]): KeyedInstances<PolicyInstances[P]> {
    const family =
      this.table.of(policy).keysOf(instance) ??
      (policy === 'bulkhead' ? this.table.threadPoolBulkheads.keysOf(instance as BulkheadPolicy) : undefined);
    return family as KeyedInstances<PolicyInstances[P]>;
  }

  /** The hedge of `key` of `named`; `named` itself without a key. */
  hedge(named: HedgePolicy, key: string | undefined): HedgePolicy {
    return key === undefined ? named : this.hedgeKeysOf(named).get(key);
  }

  /** The keys of `hedge`, a named or derived hedge the registry made. */
  hedgeKeysOf(hedge: HedgePolicy): KeyedInstances<HedgePolicy> {
    return this.table.hedging.keysOf(hedge) as KeyedInstances<HedgePolicy>;
  }

  /** The hedge of every key kept now, of every hedge. */
  allHedges(): readonly LruEntry<HedgePolicy>[] {
    return this.table.hedging.allKeys();
  }
}
