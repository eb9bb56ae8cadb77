import type { Clock } from '../kernel/clock';
import type { ResolvedKeys } from '../config/schema';

/** One instance an {@link InstanceLru} keeps, with what its eviction reads. */
export interface LruEntry<I> {
  /** The key (or undeclared name) it is kept under. */
  readonly key: string;
  readonly instance: I;
  /** The clock reading of its last use. */
  lastUsed: number;
  /** Uses since it was made: how active it is, for the metrics' per-key series. */
  uses: number;
  /** Set once it is evicted: whoever holds the entry must ask again. */
  evicted: boolean;
}

/**
 * Instances by key, bounded: past `max` the least recently used one that
 * holds no state a restart would lose is evicted, and one unused for
 * `idleTimeoutMs` is evicted too. Both run lazily on the injected clock,
 * with no timer per key: an idle entry goes when it is next asked for or
 * listed, or at the next sweep (one pass over every entry at most once per
 * `idleTimeoutMs`). A hit costs one Map lookup and one clock reading.
 */
export class InstanceLru<I> {
  private readonly entries = new Map<string, LruEntry<I>>();
  private nextSweep: number;

  /**
   * @param limits - `max` entries, evicted after `idleTimeoutMs` unused
   * @param clock - the registry's clock
   * @param holdsState - true for an instance a restart would lose state of: never evicted
   * @param evicted - told of each entry evicted
   */
  constructor(
    private readonly limits: ResolvedKeys,
    private readonly clock: Clock,
    private readonly holdsState: (instance: I) => boolean,
    private readonly evicted: (entry: LruEntry<I>) => void,
  ) {
    this.nextSweep = clock.now() + limits.idleTimeoutMs;
  }

  /** Entries kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** The entry of `key`, marked used now; undefined when there is none (or it has just been evicted as idle). */
  use(key: string): LruEntry<I> | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    return this.touch(entry) ? entry : undefined;
  }

  /** Marks `entry` used at `now`; false when it is gone (evicted now as idle, or earlier). */
  touch(entry: LruEntry<I>, now = this.clock.now()): boolean {
    if (now >= this.nextSweep) this.sweep(now);
    if (entry.evicted) return false;
    if (now - entry.lastUsed >= this.limits.idleTimeoutMs && !this.holdsState(entry.instance)) {
      this.evict(entry);
      return false;
    }
    entry.lastUsed = now;
    entry.uses++;
    return true;
  }

  /**
   * Keeps the instance `make` makes under `key`, used now, evicting the
   * least recently used evictable entry first when `max` are kept. Returns
   * undefined, making and keeping nothing, when every entry holds state.
   */
  add(key: string, make: () => I): LruEntry<I> | undefined {
    if (this.entries.size >= this.limits.max) {
      const victim = this.leastRecentlyUsed();
      if (victim === undefined) return undefined;
      this.evict(victim);
    }
    const instance = make();
    const entry: LruEntry<I> = { key, instance, lastUsed: this.clock.now(), uses: 1, evicted: false };
    this.entries.set(key, entry);
    return entry;
  }

  /** The entries kept now, idle ones evicted first. */
  list(): LruEntry<I>[] {
    this.sweep(this.clock.now());
    return [...this.entries.values()];
  }

  /** Evicts every entry unused for `idleTimeoutMs` that holds no state. */
  private sweep(now: number): void {
    this.nextSweep = now + this.limits.idleTimeoutMs;
    for (const entry of this.entries.values())
      if (now - entry.lastUsed >= this.limits.idleTimeoutMs && !this.holdsState(entry.instance)) this.evict(entry);
  }

  /** The least recently used entry that holds no state: one pass, made only when the cache is full. */
  private leastRecentlyUsed(): LruEntry<I> | undefined {
    let oldest: LruEntry<I> | undefined;
    for (const entry of this.entries.values())
      if ((oldest === undefined || entry.lastUsed < oldest.lastUsed) && !this.holdsState(entry.instance))
        oldest = entry;
    return oldest;
  }

  private evict(entry: LruEntry<I>): void {
    entry.evicted = true;
    this.entries.delete(entry.key);
    this.evicted(entry);
  }
}
