/** One stored answer: the value and when it was stored. */
export interface CacheEntry {
  /** The answer, as the method gave it. */
  readonly value: unknown;
  /** When it was stored, in ms on the cache's time line (see {@link CacheStaleInfo.asOf}). */
  readonly asOf: number;
}

/**
 * Where a cache keeps its answers. The default is process memory
 * ({@link MemoryCacheStore}), which cannot fail with the dependency;
 * `RedisCacheStore` keeps them across deploys. A store that fails (throws or
 * rejects) never fails a call: the cache treats it as a miss and logs once
 * per episode.
 */
export interface CacheStore {
  /** The entry stored under `key`, if any. */
  get(key: string): CacheEntry | undefined | PromiseLike<CacheEntry | undefined>;
  /** Stores `entry` under `key`, to be kept for at least `keepMs`. */
  set(key: string, entry: CacheEntry, keepMs: number): void | PromiseLike<void>;
}

/** True when `value` has the methods of a {@link CacheStore}. */
export function isCacheStore(value: unknown): value is CacheStore {
  const store = value as Partial<CacheStore> | null;
  return (
    typeof store === 'object' && store !== null && typeof store.get === 'function' && typeof store.set === 'function'
  );
}

/**
 * The in-process store: at most `maxEntries` entries, the least recently
 * used evicted first. Reads and writes are synchronous, so a hit costs no
 * promise of the store's own.
 */
export class MemoryCacheStore implements CacheStore {
  private readonly entries = new Map<string, CacheEntry>();

  /** @param maxEntries - the most entries kept */
  constructor(private maxEntries: number) {}

  /** @internal Keeps at most `maxEntries` from now on, evicting the least recently used down to it. */
  resize(maxEntries: number): void {
    this.maxEntries = maxEntries;
    for (const key of this.entries.keys()) {
      if (this.entries.size <= maxEntries) return;
      this.entries.delete(key);
    }
  }

  /** Entries held now. */
  get size(): number {
    return this.entries.size;
  }

  /** The entry under `key`, now the most recently used. */
  get(key: string): CacheEntry | undefined {
    const entry = this.entries.get(key);
    if (entry !== undefined && this.entries.size > 1) {
      // A Map iterates in insertion order: moving the entry to the end makes the first the least recently used.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  /** Stores `entry` under `key` as the most recently used, evicting the least recently used past `maxEntries`. */
  set(key: string, entry: CacheEntry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }
}
