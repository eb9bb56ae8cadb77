import type { RetryBudgetConfig } from '../../kernel/retry-budget';
import { INVALID_VALUE } from '../../config/config.messages';
import { Duration } from '../../config/duration';
import { PolicySchema } from '../../config/schema';
import { ErrorClassOrName } from '../../config/error-matcher';

/** How waits between attempts are spread. `full`: uniform in [0, bound]. */
export type JitterKind = 'full' | 'equal' | 'decorrelated' | 'none';

/**
 * Which errors a retry retries. `resilience4nest`: the default retryable set
 * (timeouts, connection errors, HTTP 429/502/503/504) and the errors listed
 * in `retryExceptions`. `resilience4j`: every error, or only the listed ones
 * when `retryExceptions` is given. `ignoreExceptions` wins in both.
 */
export type RetryExceptionRules = 'resilience4nest' | 'resilience4j';

/** Resolved settings of a retry instance (durations in ms). */
export interface RetryConfig {
  /** Attempts in all, the first call included. Default 3. */
  maxAttempts: number;
  /** Base wait between attempts. Default 500 ms. */
  waitDuration: number;
  /** Multiply the wait by `exponentialBackoffMultiplier` after each attempt. Default false. */
  enableExponentialBackoff: boolean;
  /** Growth factor of exponential backoff. Default 1.5 (Resilience4j's). */
  exponentialBackoffMultiplier: number;
  /** Cap of the wait, applied after randomization; only with exponential backoff (or decorrelated jitter). Default: none. */
  exponentialMaxWaitDuration: number;
  /** Resilience4j's randomized wait: whole ms uniform in wait × [1 − factor, 1 + factor], at least 1 ms. Default false. */
  enableRandomizedWait: boolean;
  /** Spread of the randomized wait, in [0, 1]. Default 0.5. */
  randomizedWaitFactor: number;
  /** Jitter applied to the (capped) wait. Default `full`, or `none` with `enableRandomizedWait`. */
  jitter: JitterKind;
  /** Errors to retry: beyond the default retryable set, or (with `exceptionRules: 'resilience4j'`) instead of every error. */
  retryExceptions: ErrorClassOrName[];
  /** What `retryExceptions` adds to or replaces. Default `resilience4nest`; `resilience4j` for an application.yml. */
  exceptionRules: RetryExceptionRules;
  /** Errors never retried; wins over `retryExceptions`. */
  ignoreExceptions: ErrorClassOrName[];
  /** A returned value for which the call is retried. */
  retryOnResult?: (result: unknown) => boolean;
  /** With `retryOnResult`: throw `MaxRetriesExceededError` after the last attempt instead of returning the value. Default false. */
  failAfterMaxAttempts: boolean;
  /** Longest `Retry-After` honoured; an error asking for more is not retried. Default 30 s. */
  retryAfterMaxWait: number;
  /** Retry budget; none by default. */
  budget?: RetryBudgetConfig;
}

/** Retry settings as written in options: durations may be strings, keys kebab-case. */
export type RetryConfigInput = Partial<
  Omit<RetryConfig, 'waitDuration' | 'exponentialMaxWaitDuration' | 'retryAfterMaxWait'> & {
    waitDuration: Duration;
    exponentialMaxWaitDuration: Duration;
    retryAfterMaxWait: Duration;
  }
>;

export const RETRY_SCHEMA: PolicySchema<RetryConfig> = {
  policy: 'retry',
  fields: {
    maxAttempts: { kind: 'integer', min: 1 },
    waitDuration: { kind: 'duration' },
    enableExponentialBackoff: { kind: 'boolean' },
    exponentialBackoffMultiplier: { kind: 'number', min: 1 },
    exponentialMaxWaitDuration: { kind: 'duration', positive: true },
    enableRandomizedWait: { kind: 'boolean' },
    randomizedWaitFactor: { kind: 'number', min: 0, max: 1 },
    jitter: { kind: 'enum', values: ['full', 'equal', 'decorrelated', 'none'] },
    retryExceptions: { kind: 'errors' },
    exceptionRules: { kind: 'enum', values: ['resilience4nest', 'resilience4j'] },
    ignoreExceptions: { kind: 'errors' },
    retryOnResult: { kind: 'function' },
    failAfterMaxAttempts: { kind: 'boolean' },
    retryAfterMaxWait: { kind: 'duration' },
    budget: {
      kind: 'object',
      fields: { ratio: { kind: 'number', min: 0, max: 1, exclusiveMin: true }, maxTokens: { kind: 'integer', min: 1 } },
    },
  },
  defaults: {
    maxAttempts: 3,
    waitDuration: 500,
    enableExponentialBackoff: false,
    exponentialBackoffMultiplier: 1.5,
    exponentialMaxWaitDuration: Number.POSITIVE_INFINITY,
    enableRandomizedWait: false,
    randomizedWaitFactor: 0.5,
    jitter: 'full',
    retryExceptions: [],
    exceptionRules: 'resilience4nest',
    ignoreExceptions: [],
    retryOnResult: undefined,
    failAfterMaxAttempts: false,
    retryAfterMaxWait: 30_000,
    budget: undefined,
  },
  check(config, place) {
    if (config.enableRandomizedWait && config.jitter !== 'none' && config.jitter !== 'full') {
      throw new Error(INVALID_VALUE(place, 'jitter', "'none' when enableRandomizedWait is true", config.jitter));
    }
  },
};
