import type { Clock } from '../kernel/clock';
import type { ResolvedKeys } from '../config/schema';

/** Hits between two readings of the clock for a due sweep: a reading costs more than the rest of a hit. */
const HITS_PER_CLOCK_READ = 64;

/** One instance an {@link InstanceLru} keeps, with what its eviction reads. */
export interface LruEntry<I> {
  /** The key (or undeclared name) it is kept under. */
  readonly key: string;
  readonly instance: I;
  /**
   * The clock reading of its last use, or, for uses that read no clock
   * ({@link InstanceLru.hit}), of the first sweep after them: never earlier
   * than the last use, so an entry is never taken for idle too soon.
   */
  lastUsed: number;
  /** Used through {@link InstanceLru.hit} since the last sweep: `lastUsed` is read then. */
  hitSinceSweep: boolean;
  /** Order of last use among the entries: the least recently used has the lowest. */
  order: number;
  /** Uses since it was made: how active it is, for the metrics' per-key series. */
  uses: number;
  /** Set once it is evicted: whoever holds the entry must ask again. */
  evicted: boolean;
}

/**
 * Instances by key, bounded: past `max` the least recently used one that
 * holds no state a restart would lose is evicted, and one unused for
 * `idleTimeoutMs` is evicted too. Both run lazily on the injected clock,
 * with no timer per key: an idle entry goes when it is next asked for by
 * name or listed, or at the next sweep (one pass over every entry, at most
 * once per quarter of `idleTimeoutMs`, looked for at each new entry and
 * every {@link HITS_PER_CLOCK_READ} hits). A hit through a held entry
 * ({@link InstanceLru.hit}) reads no clock: it counts the use and its
 * order, and the next sweep dates it. So an entry used only through hits
 * lives at most `idleTimeoutMs` and one sweep interval past its last use.
 */
export class InstanceLru<I> {
  private readonly entries = new Map<string, LruEntry<I>>();
  private nextSweep: number;
  private readonly sweepEveryMs: number;
  /** Uses so far: the order stamp of the next one. */
  private uses = 0;

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
    this.sweepEveryMs = limits.idleTimeoutMs / 4;
    this.nextSweep = clock.now() + this.sweepEveryMs;
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

  /** Marks `entry` used now, reading the clock; false when it is gone (evicted now as idle, or earlier). */
  touch(entry: LruEntry<I>): boolean {
    const now = this.clock.now();
    if (now >= this.nextSweep) this.sweep(now);
    if (entry.evicted) return false;
    if (this.idle(entry, now)) {
      this.evict(entry);
      return false;
    }
    entry.lastUsed = now;
    entry.order = ++this.uses;
    entry.uses++;
    return true;
  }

  /**
   * Marks a held `entry` used without reading the clock (the per-call path
   * of a decorated method or pipeline): false when it has been evicted.
   * Every {@link HITS_PER_CLOCK_READ} hits, the clock is read to see whether
   * a sweep is due.
   */
  hit(entry: LruEntry<I>): boolean {
    if (entry.evicted) return false;
    entry.hitSinceSweep = true;
    entry.order = ++this.uses;
    entry.uses++;
    if (this.uses % HITS_PER_CLOCK_READ === 0) this.sweepIfDue();
    return true;
  }

  /**
   * Keeps the instance `make` makes under `key`, used now, evicting the
   * least recently used evictable entry first when `max` are kept. Returns
   * undefined, making and keeping nothing, when every entry holds state.
   */
  add(key: string, make: () => I): LruEntry<I> | undefined {
    const now = this.clock.now();
    if (now >= this.nextSweep) this.sweep(now);
    if (this.entries.size >= this.limits.max) {
      const victim = this.leastRecentlyUsed();
      if (victim === undefined) return undefined;
      this.evict(victim);
    }
    const instance = make();
    const entry: LruEntry<I> = {
      key,
      instance,
      lastUsed: now,
      hitSinceSweep: false,
      order: ++this.uses,
      uses: 1,
      evicted: false,
    };
    this.entries.set(key, entry);
    return entry;
  }

  /** The entries kept now, idle ones evicted first. */
  list(): LruEntry<I>[] {
    this.sweep(this.clock.now());
    return [...this.entries.values()];
  }

  private sweepIfDue(): void {
    const now = this.clock.now();
    if (now >= this.nextSweep) this.sweep(now);
  }

  /** Dates the hits since the last sweep at `now`, and evicts every entry unused for `idleTimeoutMs` that holds no state. */
  private sweep(now: number): void {
    this.nextSweep = now + this.sweepEveryMs;
    for (const entry of this.entries.values()) {
      if (entry.hitSinceSweep) {
        entry.hitSinceSweep = false;
        entry.lastUsed = now;
      } else if (this.idle(entry, now)) this.evict(entry);
    }
  }

  /** True when `entry` has gone unused for `idleTimeoutMs` at `now` and holds no state a restart would lose. */
  private idle(entry: LruEntry<I>, now: number): boolean {
    return (
      !entry.hitSinceSweep && now - entry.lastUsed >= this.limits.idleTimeoutMs && !this.holdsState(entry.instance)
    );
  }

  /** The least recently used entry that holds no state: one pass, made only when the cache is full. */
  private leastRecentlyUsed(): LruEntry<I> | undefined {
    let oldest: LruEntry<I> | undefined;
    for (const entry of this.entries.values())
      if ((oldest === undefined || entry.order < oldest.order) && !this.holdsState(entry.instance)) oldest = entry;
    return oldest;
  }

  private evict(entry: LruEntry<I>): void {
    entry.evicted = true;
    this.entries.delete(entry.key);
    this.evicted(entry);
  }
}
