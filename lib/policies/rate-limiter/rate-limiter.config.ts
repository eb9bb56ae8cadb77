import { INVALID_VALUE } from '../../config/config.messages';
import { Duration } from '../../config/duration';
import { PolicySchema } from '../../config/schema';

/** What a call protected by a rate limiter ended with, as `drainPermissionsOnResult` sees it. */
export type RateLimitedCallOutcome =
  { readonly failed: false; readonly result: unknown } | { readonly failed: true; readonly error: unknown };

/** Resolved settings of a rate limiter (durations in ms, fractions allowed: `"500ns"` is 0.0005). */
export interface RateLimiterConfig {
  /** Permits per refresh period. Default 50. */
  limitForPeriod: number;
  /** Length of a period; the permits are refilled to `limitForPeriod` at the start of each. Default 500 ns. */
  limitRefreshPeriod: number;
  /** Longest a call waits for a permit (never past the request deadline); 0 refuses at once. Default 5 s. */
  timeoutDuration: number;
  /** Called with each permitted call's outcome; `true` drains the permits left in the current period. */
  drainPermissionsOnResult?: (outcome: RateLimitedCallOutcome) => boolean;
  /** Keep the permits in the module's `rateLimiterStore`, shared by every process using it. Default false. */
  shared: boolean;
  /** Shared only: when the store fails or does not answer, let the call through (`true`) or refuse it (`false`). Default false. */
  failOpen: boolean;
  /** Shared only: longest wait for the store's answer (never past the request deadline). Default 500 ms. */
  storeTimeout: number;
  /** List the instance in `ResilienceHealthIndicator.checkRateLimiters()`. Default false. */
  registerHealthIndicator: boolean;
  /** Report DOWN rather than RATE_LIMITED while the limiter refuses callers. Default false. */
  allowHealthIndicatorToFail: boolean;
  /**
   * Whether the `RateLimitedError` (or `DeadlineExceededError`) it raises carries a stack trace (Resilience4j's
   * `writableStackTraceEnabled`). `false` spares the frame walk that makes a
   * refusal several times dearer than an admitted call. Default true.
   */
  writableStackTraceEnabled?: boolean;
}

/** Rate limiter settings as written in options. */
export type RateLimiterConfigInput = Partial<
  Omit<RateLimiterConfig, 'limitRefreshPeriod' | 'timeoutDuration' | 'storeTimeout'> & {
    limitRefreshPeriod: Duration;
    timeoutDuration: Duration;
    storeTimeout: Duration;
  }
>;

/** Longest wait Node's timers can run in one piece (about 24.8 days). */
export const MAX_RATE_LIMITER_WAIT_MS = 2 ** 31 - 1;

/** How `rateLimiter` settings are read, checked and defaulted (Resilience4j's defaults). */
export const RATE_LIMITER_SCHEMA: PolicySchema<RateLimiterConfig> = {
  policy: 'rateLimiter',
  fields: {
    limitForPeriod: { kind: 'integer', min: 1 },
    limitRefreshPeriod: { kind: 'duration', positive: true },
    timeoutDuration: { kind: 'duration' },
    drainPermissionsOnResult: { kind: 'function' },
    shared: { kind: 'boolean' },
    failOpen: { kind: 'boolean' },
    storeTimeout: { kind: 'duration', positive: true },
    registerHealthIndicator: { kind: 'boolean' },
    allowHealthIndicatorToFail: { kind: 'boolean' },
    writableStackTraceEnabled: { kind: 'boolean' },
  },
  defaults: {
    limitForPeriod: 50,
    limitRefreshPeriod: 0.0005,
    timeoutDuration: 5000,
    drainPermissionsOnResult: undefined,
    shared: false,
    failOpen: false,
    storeTimeout: 500,
    registerHealthIndicator: false,
    allowHealthIndicatorToFail: false,
    writableStackTraceEnabled: true,
  },
  check(config, place) {
    // Resilience4j counts periods in whole nanoseconds and refuses one shorter than 1 ns.
    if (Math.round(config.limitRefreshPeriod * 1e6) < 1) {
      throw new Error(INVALID_VALUE(place, 'limitRefreshPeriod', 'at least 1ns', config.limitRefreshPeriod));
    }
    if (config.timeoutDuration > MAX_RATE_LIMITER_WAIT_MS) {
      throw new Error(
        INVALID_VALUE(
          place,
          'timeoutDuration',
          `at most ${MAX_RATE_LIMITER_WAIT_MS}ms (Node's longest timer)`,
          config.timeoutDuration,
        ),
      );
    }
  },
};
