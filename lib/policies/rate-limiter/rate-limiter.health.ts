/**
 * A rate limiter's health, as Resilience4j's `RateLimitersHealthIndicator`
 * reports it: `UP` while it has permits or no one waits; `RATE_LIMITED`
 * (`DOWN` with `allowHealthIndicatorToFail`) while callers wait and a new
 * one would wait longer than `timeoutDuration`; else `UNKNOWN`.
 */
export type RateLimiterHealthStatus = 'UP' | 'DOWN' | 'RATE_LIMITED' | 'UNKNOWN';

/** What the health check reports of one rate limiter. */
export interface RateLimiterHealth {
  /** The rate limiter's health, as described at {@link RateLimiterHealthStatus}. */
  readonly status: RateLimiterHealthStatus;
  /** Permits left in the current period; negative while waiting callers hold reservations on later periods. */
  readonly availablePermissions: number;
  /** Callers waiting for a reserved permit (Resilience4j's name). */
  readonly numberOfWaitingThreads: number;
}
