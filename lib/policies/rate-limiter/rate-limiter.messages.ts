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

/** The first store failure of a shared rate limiter's episode: the store's own text, which its clients never see. */
export const RATE_LIMITER_STORE_FAILING = (name: string, reason: string, failOpen: boolean): string =>
  `rate limiter '${name}' could not get an answer from its store (${reason}); ` +
  `calls ${failOpen ? 'go ahead without a permit (failOpen)' : 'are refused with 429'} until it answers again`;

/** An episode of rate limiter store failures ended. */
export const RATE_LIMITER_STORE_ANSWERING = (name: string, failures: number, ms: number): string =>
  `rate limiter '${name}' gets answers from its store again; ${failures} acquires failed over ${formatMs(ms)} ms`;
