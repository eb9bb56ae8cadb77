import { INVALID_VALUE } from '../config/config.messages';
import { Duration } from '../config/duration';
import { PolicySchema } from '../config/schema';
import { ErrorClassOrName } from '../error-matcher';

/** How the breaker's sliding window counts calls. */
export type SlidingWindowType = 'COUNT_BASED' | 'TIME_BASED';

/** Resolved settings of a circuit breaker (durations in ms), with Resilience4j's defaults. */
export interface CircuitBreakerConfig {
  /** Failure rate, in percent, at or above which the breaker opens. Default 50. */
  failureRateThreshold: number;
  /** Slow-call rate, in percent, at or above which the breaker opens. Default 100. */
  slowCallRateThreshold: number;
  /** A call at least this long is slow. Default 60 s. */
  slowCallDurationThreshold: number;
  /** Trial calls admitted in HALF_OPEN. Default 10. */
  permittedNumberOfCallsInHalfOpenState: number;
  /** Longest stay in HALF_OPEN before opening again; 0 waits for all trials. Default 0. */
  maxWaitDurationInHalfOpenState: number;
  /** COUNT_BASED (last N calls) or TIME_BASED (last N seconds). Default COUNT_BASED. */
  slidingWindowType: SlidingWindowType;
  /** Calls (COUNT_BASED) or seconds (TIME_BASED) in the window. Default 100. */
  slidingWindowSize: number;
  /** Calls needed before any rate is computed. Default 100. */
  minimumNumberOfCalls: number;
  /** Time spent OPEN before trial calls. Default 60 s. */
  waitDurationInOpenState: number;
  /** Move OPEN → HALF_OPEN on a timer rather than on the next call. Default false. */
  automaticTransitionFromOpenToHalfOpenEnabled: boolean;
  /** Errors counted as failures; when set, other errors count as successes. */
  recordExceptions: ErrorClassOrName[];
  /** Errors counted as neither success nor failure; wins over `recordExceptions`. */
  ignoreExceptions: ErrorClassOrName[];
  /** A returned value counted as a failure (e.g. a response with status >= 500). */
  recordResult?: (result: unknown) => boolean;
  /** Include this breaker in the health indicator. Default false. */
  registerHealthIndicator: boolean;
  /** Let this breaker being OPEN turn the health check down. Default false. */
  allowHealthIndicatorToFail: boolean;
}

/** Circuit breaker settings as written in options. */
export type CircuitBreakerConfigInput = Partial<
  Omit<
    CircuitBreakerConfig,
    'slowCallDurationThreshold' | 'maxWaitDurationInHalfOpenState' | 'waitDurationInOpenState' | 'slidingWindowType'
  > & {
    slowCallDurationThreshold: Duration;
    maxWaitDurationInHalfOpenState: Duration;
    waitDurationInOpenState: Duration;
    slidingWindowType: SlidingWindowType | Lowercase<SlidingWindowType>;
  }
>;

export const CIRCUIT_BREAKER_SCHEMA: PolicySchema<CircuitBreakerConfig> = {
  policy: 'circuitBreaker',
  fields: {
    failureRateThreshold: { kind: 'percent' },
    slowCallRateThreshold: { kind: 'percent' },
    slowCallDurationThreshold: { kind: 'duration', positive: true },
    permittedNumberOfCallsInHalfOpenState: { kind: 'integer', min: 1 },
    maxWaitDurationInHalfOpenState: { kind: 'duration' },
    slidingWindowType: { kind: 'enum', values: ['COUNT_BASED', 'TIME_BASED'] },
    // Each slot is allocated up front: a bound keeps a typo from failing far from its key.
    slidingWindowSize: { kind: 'integer', min: 1, max: 1_000_000 },
    minimumNumberOfCalls: { kind: 'integer', min: 1 },
    waitDurationInOpenState: { kind: 'duration', positive: true },
    automaticTransitionFromOpenToHalfOpenEnabled: { kind: 'boolean' },
    recordExceptions: { kind: 'errors' },
    ignoreExceptions: { kind: 'errors' },
    recordResult: { kind: 'function' },
    registerHealthIndicator: { kind: 'boolean' },
    allowHealthIndicatorToFail: { kind: 'boolean' },
  },
  defaults: {
    failureRateThreshold: 50,
    slowCallRateThreshold: 100,
    slowCallDurationThreshold: 60_000,
    permittedNumberOfCallsInHalfOpenState: 10,
    maxWaitDurationInHalfOpenState: 0,
    slidingWindowType: 'COUNT_BASED',
    slidingWindowSize: 100,
    minimumNumberOfCalls: 100,
    waitDurationInOpenState: 60_000,
    automaticTransitionFromOpenToHalfOpenEnabled: false,
    recordExceptions: [],
    ignoreExceptions: [],
    recordResult: undefined,
    registerHealthIndicator: false,
    allowHealthIndicatorToFail: false,
  },
  unsupported: [
    'eventConsumerBufferSize',
    'writableStackTraceEnabled',
    'recordFailurePredicate',
    'recordExceptionPredicate',
    'ignoreExceptionPredicate',
    'recordResultPredicate',
    'waitIntervalFunctionInOpenState',
    'transitionOnResult',
    'ignoreClassBindingExceptions',
    'initialState',
  ],
  check(config, place) {
    if (config.slidingWindowType === 'TIME_BASED' && config.slidingWindowSize > 3600) {
      throw new Error(INVALID_VALUE(place, 'slidingWindowSize', 'at most 3600 seconds for a TIME_BASED window', config.slidingWindowSize));
    }
  },
};
