import type { CacheEntry } from '../policies/cache/cache-store';
import { formatMs } from '../kernel/format-ms';
import { REDIS_CACHE_CORRUPT, REDIS_CACHE_TIMED_OUT } from './redis-cache-store.messages';

/** Key prefix used when the `prefix` option is not given. */
export const DEFAULT_CACHE_REDIS_PREFIX = 'resilience4nest:cache:';

/** Most time a command may take before the store counts as failed, when `timeout` is not given. */
export const DEFAULT_CACHE_REDIS_TIMEOUT_MS = 250;

/** The commands the store sends; an `ioredis` `Redis` client provides them. */
export interface RedisCacheClient {
  /** Reads a string key. */
  get(key: string): Promise<string | null>;
  /** Writes a string key that expires after `ms`. */
  set(key: string, value: string, px: 'PX', ms: number): Promise<unknown>;
}

/** Options of {@link RedisCacheStore}. */
export interface RedisCacheStoreOptions {
  /** An `ioredis` client. */
  readonly client: RedisCacheClient;
  /** Prefix of every key the store writes; default {@link DEFAULT_CACHE_REDIS_PREFIX}. */
  readonly prefix?: string;
  /**
   * Most time, in ms, a command may take; a slower one fails (the cache then
   * treats the call as a miss). Default {@link DEFAULT_CACHE_REDIS_TIMEOUT_MS}.
   * Measured on real timers: it bounds a network round trip.
   */
  readonly timeout?: number;
}

/**
 * Keeps a cache's answers in Redis, so a new process (a deploy, a restart)
 * starts warm with the last known good. Redis is a network dependency: it
 * can fail together with the dependency it stands in for, which is why the
 * default store is process memory. When it fails or answers late, the
 * cache treats the call as a miss and logs once per episode; the call never
 * fails because of it. Each answer is kept as JSON for as long as it may
 * answer (the larger of `ttl` and `staleIfError`); values must survive
 * `JSON.stringify`. `maxEntries` does not apply: Redis's own eviction does.
 *
 * @example
 * ```ts
 * cache: { instances: { rates: { staleIfError: '6h', store: new RedisCacheStore({ client: new Redis(process.env.REDIS_URL) }) } } }
 * ```
 */
export class RedisCacheStore {
  private readonly client: RedisCacheClient;
  private readonly prefix: string;
  private readonly timeout: number;

  /** @param options - the client, the key prefix and the command timeout */
  constructor(options: RedisCacheStoreOptions) {
    this.client = options.client;
    this.prefix = options.prefix ?? DEFAULT_CACHE_REDIS_PREFIX;
    this.timeout = options.timeout ?? DEFAULT_CACHE_REDIS_TIMEOUT_MS;
  }

  /** The entry stored under `key`, if any. */
  async get(key: string): Promise<CacheEntry | undefined> {
    const raw = await this.bounded(this.client.get(this.prefix + key));
    if (raw === null) return undefined;
    const parsed = JSON.parse(raw) as { a?: unknown; v?: unknown };
    if (typeof parsed !== 'object' || parsed === null || typeof parsed.a !== 'number')
      throw new Error(REDIS_CACHE_CORRUPT(this.prefix + key));
    return { value: parsed.v, asOf: parsed.a };
  }

  /** Stores `entry` under `key` for `keepMs`. */
  async set(key: string, entry: CacheEntry, keepMs: number): Promise<void> {
    const raw = JSON.stringify({ a: entry.asOf, v: entry.value });
    await this.bounded(this.client.set(this.prefix + key, raw, 'PX', Math.max(1, Math.ceil(keepMs))));
  }

  /** `command`, failed when it takes longer than the timeout. */
  private bounded<T>(command: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(REDIS_CACHE_TIMED_OUT(formatMs(this.timeout)))), this.timeout);
      timer.unref();
    });
    return Promise.race([command, late]).finally(() => clearTimeout(timer));
  }
}
