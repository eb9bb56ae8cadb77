/** A command of the Redis cache store took longer than its timeout. */
export const REDIS_CACHE_TIMED_OUT = (ms: string): string => `RedisCacheStore: no answer from Redis within ${ms}ms`;

/** A key under the store's prefix holds something the store did not write. */
export const REDIS_CACHE_CORRUPT = (key: string): string =>
  `RedisCacheStore: key '${key}' does not hold a cache entry (another writer uses the prefix?)`;
