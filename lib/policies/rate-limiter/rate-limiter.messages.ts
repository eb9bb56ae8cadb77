import { formatMs } from '../../kernel/format-ms';
import { PREFIX } from '../../kernel/resilience.messages';

export const SHARED_WITHOUT_STORE = (place: string): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'shared' is true, but the module option 'rateLimiterStore' is not set (e.g. rateLimiterStore: new RedisRateLimiterStore({ client }))`;

export const NOT_A_STORE = (value: string): string =>
  `${PREFIX}: invalid module options: key 'rateLimiterStore' must be a rate limiter store (an object with acquire(), e.g. new RedisRateLimiterStore({ client })), got ${value}`;

export const RESERVE_ON_SHARED = (name: string): string =>
  `${PREFIX}: RateLimiter '${name}' is shared: its permits are in the store, so reservePermission() cannot answer synchronously; use acquirePermission()`;

export const BAD_PERMITS = (name: string, value: unknown): string =>
  `${PREFIX}: RateLimiter '${name}': permits must be an integer >= 1, got ${String(value)}`;

/** The refusal's message when the store failed: clients read it, so it never carries the store's own text (that goes to the log). */
export const STORE_UNAVAILABLE = (name: string): string =>
  `RateLimiter '${name}' could not get an answer from its store and refused the call`;

export const STORE_TIMED_OUT = (ms: number): string => `no answer within ${formatMs(ms)}ms`;
