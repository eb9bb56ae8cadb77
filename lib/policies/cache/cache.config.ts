import { Duration } from '../../config/duration';
import { invalidOption, OptionReader } from '../../config/option-readers';
import { PolicySchema } from '../../config/schema';
import { CacheStore, isCacheStore } from './cache-store';

/** What a stale answer's `mark` is told about it. */
export interface CacheStaleInfo {
  /**
   * When the answer was stored, in ms: epoch milliseconds under the system
   * clock; the injected clock's reading otherwise (a `VirtualClock` in tests).
   */
  readonly asOf: number;
  /** How old the answer is now, in ms. */
  readonly ageMs: number;
}

/** Resolved settings of a cache instance (durations in ms). */
export interface CacheConfig {
  /** How long a stored answer is served without calling. `0` (default): always call. */
  ttl: number;
  /**
   * How old a stored answer may be and still answer a call that failed (the
   * last known good and its shelf life); `undefined` (default): never.
   */
  staleIfError: number | undefined;
  /** Concurrent calls with one key share one call. Default false. */
  coalesce: boolean;
  /** The most answers the in-memory store keeps, the least recently used evicted first. Default 1000. */
  maxEntries: number;
  /** The key of a call, from the method's arguments. Default: the JSON of the arguments. */
  // The method's own parameter types: any, so a typed `(currency: string) => string` is accepted.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  key: ((...args: any[]) => string) | undefined;
  /** How a stale answer says it is stale, e.g. `(v, { asOf }) => ({ ...v, fresh: false, asOf })`. Default: as stored. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  mark: ((value: any, stale: CacheStaleInfo) => unknown) | undefined;
  /** Where answers are kept. Default: process memory, `maxEntries` of them. */
  store: CacheStore | undefined;
}

/** Cache settings as written in options: durations as numbers (ms) or text (`'10m'`). */
export type CacheConfigInput = Partial<
  Omit<CacheConfig, 'ttl' | 'staleIfError'> & { ttl: Duration; staleIfError: Duration }
>;

const storeOption: OptionReader<unknown> = (value, place, key) =>
  isCacheStore(value)
    ? value
    : invalidOption(
        place,
        key,
        'a cache store (an object with get() and set(), e.g. new RedisCacheStore({ client }))',
        value,
      );

export const CACHE_SCHEMA: PolicySchema<CacheConfig> = {
  policy: 'cache',
  fields: {
    ttl: { kind: 'duration' },
    staleIfError: { kind: 'duration' },
    coalesce: { kind: 'boolean' },
    maxEntries: { kind: 'integer', min: 1 },
    key: { kind: 'function' },
    mark: { kind: 'function' },
    store: { kind: 'custom', read: storeOption },
  },
  defaults: {
    ttl: 0,
    staleIfError: undefined,
    coalesce: false,
    maxEntries: 1000,
    key: undefined,
    mark: undefined,
    store: undefined,
  },
};
