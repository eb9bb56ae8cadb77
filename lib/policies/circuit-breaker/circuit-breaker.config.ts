import type { CircuitBreakerState } from './circuit-breaker.events';
import { INVALID_VALUE } from '../../config/config.messages';
import { Duration } from '../../config/duration';
import { PolicySchema } from '../../config/schema';
import { ErrorClassOrName } from '../../config/error-matcher';
import { integerOption, invalidOption, objectOption, OptionReader } from '../../config/option-readers';
import { SHARED_EXPECTED } from './circuit-breaker.messages';

/**
 * Which errors a breaker counts as failures. `resilience4nest`: every error
 * but an answer with a 4xx status other than 408 and 429 (a success) and
 * `BulkheadFullError` (ignored). `resilience4j`: every error. Either way,
 * when `recordExceptions` is given only the listed errors are failures (a
 * timeout too), and `ignoreExceptions` wins.
 */
export type CircuitBreakerExceptionRules = 'resilience4nest' | 'resilience4j';

/** How the breaker's sliding window counts calls. */
export type SlidingWindowType = 'COUNT_BASED' | 'TIME_BASED';

/** How a fleet-wide breaker shares its transitions: `quorum` replicas reporting OPEN open every replica. */
export interface CircuitBreakerSharing {
  /** Replicas whose own window must open before the fleet opens (reports count for their open wait). */
  readonly quorum: number;
}

/** Resolved settings of a circuit breaker (durations in ms), with Resilience4j's defaults. */
export interface CircuitBreakerConfig {
  /** Failure rate, in percent, at or above which the breaker opens. Default 50. */
  failureRateThreshold: number;
  /** Slow-call rate, in percent, at or above which the breaker opens. Default 100. */
  slowCallRateThreshold: number;
  /** A call longer than this is slow. Default 60 s. */
  slowCallDurationThreshold: number;
  /** Trial calls admitted in HALF_OPEN. Default 10. */
  permittedNumberOfCallsInHalfOpenState: number;
  /** Longest stay in HALF_OPEN before `transitionToStateAfterWaitDuration`; 0 waits for the trials. Default 0. */
  maxWaitDurationInHalfOpenState: number;
  /** Where HALF_OPEN goes when `maxWaitDurationInHalfOpenState` runs out: OPEN or CLOSED. Default OPEN. */
  transitionToStateAfterWaitDuration: 'OPEN' | 'CLOSED';
  /** COUNT_BASED (last N calls) or TIME_BASED (last N seconds). Default COUNT_BASED. */
  slidingWindowType: SlidingWindowType;
  /** Calls (COUNT_BASED) or seconds (TIME_BASED) in the window. Default 100. */
  slidingWindowSize: number;
  /** Calls needed before any rate is computed. Default 100. */
  minimumNumberOfCalls: number;
  /** Time spent OPEN before trial calls (the first wait, with exponential backoff). Default 60 s. */
  waitDurationInOpenState: number;
  /** Multiply the OPEN wait by `exponentialBackoffMultiplier` each time the breaker opens again without closing. Default false. */
  enableExponentialBackoff: boolean;
  /** Growth factor of the OPEN wait. Default 1.5. */
  exponentialBackoffMultiplier: number;
  /** Cap of the exponential OPEN wait. Default: none. */
  exponentialMaxWaitDurationInOpenState: number;
  /** Spread each OPEN wait uniformly over wait × [1 − factor, 1 + factor] (whole ms). Default false. */
  enableRandomizedWait: boolean;
  /** Spread of the randomized OPEN wait, in [0, 1]. Default 0.5. */
  randomizedWaitFactor: number;
  /** The state a new breaker starts in (not `reset()`, which always closes it). Default CLOSED. */
  initialState: CircuitBreakerState;
  /** Move OPEN → HALF_OPEN on a timer rather than on the next call. Default false. */
  automaticTransitionFromOpenToHalfOpenEnabled: boolean;
  /** Errors counted as failures (timeouts included only when listed); when set, other errors count as successes. */
  recordExceptions: ErrorClassOrName[];
  /** Which errors are failures when `recordExceptions` is not given. Default `resilience4nest`; `resilience4j` for an application.yml. */
  exceptionRules: CircuitBreakerExceptionRules;
  /** Errors counted as neither success nor failure; wins over `recordExceptions`. */
  ignoreExceptions: ErrorClassOrName[];
  /** A returned value counted as a failure (e.g. a response with status 500 or more). */
  recordResult?: (result: unknown) => boolean;
  /** Include this breaker in the health indicator. Default false. */
  registerHealthIndicator: boolean;
  /** Let this breaker being OPEN turn the health check down. Default false. */
  allowHealthIndicatorToFail: boolean;
  /**
   * Whether the `CallNotPermittedError` it raises carries a stack trace (Resilience4j's
   * `writableStackTraceEnabled`). `false` spares the frame walk that makes a
   * refusal several times dearer than an admitted call. Default true.
   */
  writableStackTraceEnabled?: boolean;
  /**
   * Fleet-wide: share this breaker's transitions with every replica through
   * the module's `circuitBreakerStore` (`true` is `{ quorum: 1 }`). Each
   * replica keeps its own window; when `quorum` replicas open, all open for
   * the same wait, one probes for all, and transitions made by hand reach
   * all. Default false.
   */
  shared: CircuitBreakerSharing | false;
}

/** Circuit breaker settings as written in options. */
export type CircuitBreakerConfigInput = Partial<
  Omit<
    CircuitBreakerConfig,
    | 'slowCallDurationThreshold'
    | 'maxWaitDurationInHalfOpenState'
    | 'waitDurationInOpenState'
    | 'exponentialMaxWaitDurationInOpenState'
    | 'slidingWindowType'
    | 'transitionToStateAfterWaitDuration'
    | 'initialState'
    | 'shared'
  > & {
    slowCallDurationThreshold: Duration;
    maxWaitDurationInHalfOpenState: Duration;
    waitDurationInOpenState: Duration;
    exponentialMaxWaitDurationInOpenState: Duration;
    slidingWindowType: SlidingWindowType | Lowercase<SlidingWindowType>;
    transitionToStateAfterWaitDuration: 'OPEN' | 'CLOSED' | 'open' | 'closed';
    initialState: CircuitBreakerState | Lowercase<CircuitBreakerState>;
    shared: boolean | CircuitBreakerSharing;
  }
>;

const sharingObject = objectOption({ quorum: integerOption(1) });

/** `shared`: true, false (also as text, as Spring binds it) or `{ quorum }`, resolved to the sharing or false. */
const sharedOption: OptionReader<CircuitBreakerSharing | false> = (value, place, key) => {
  const text = typeof value === 'string' ? value.trim().toLowerCase() : value;
  if (text === true || text === 'true') return { quorum: 1 };
  if (text === false || text === 'false') return false;
  if (text !== null && typeof text === 'object' && !Array.isArray(text))
    return sharingObject(text, place, key) as CircuitBreakerSharing;
  return invalidOption(place, key, SHARED_EXPECTED, value);
};

export const CIRCUIT_BREAKER_SCHEMA: PolicySchema<CircuitBreakerConfig> = {
  policy: 'circuitBreaker',
  fields: {
    failureRateThreshold: { kind: 'percent' },
    slowCallRateThreshold: { kind: 'percent' },
    slowCallDurationThreshold: { kind: 'duration', positive: true },
    permittedNumberOfCallsInHalfOpenState: { kind: 'integer', min: 1 },
    maxWaitDurationInHalfOpenState: { kind: 'duration' },
    transitionToStateAfterWaitDuration: { kind: 'enum', values: ['OPEN', 'CLOSED'] },
    slidingWindowType: { kind: 'enum', values: ['COUNT_BASED', 'TIME_BASED'] },
    // Each slot is allocated up front: a bound keeps a typo from failing far from its key.
    slidingWindowSize: { kind: 'integer', min: 1, max: 1_000_000 },
    minimumNumberOfCalls: { kind: 'integer', min: 1 },
    waitDurationInOpenState: { kind: 'duration', positive: true },
    enableExponentialBackoff: { kind: 'boolean' },
    exponentialBackoffMultiplier: { kind: 'number', min: 1 },
    exponentialMaxWaitDurationInOpenState: { kind: 'duration', positive: true },
    enableRandomizedWait: { kind: 'boolean' },
    randomizedWaitFactor: { kind: 'number', min: 0, max: 1 },
    initialState: { kind: 'enum', values: ['CLOSED', 'OPEN', 'HALF_OPEN', 'DISABLED', 'FORCED_OPEN', 'METRICS_ONLY'] },
    automaticTransitionFromOpenToHalfOpenEnabled: { kind: 'boolean' },
    recordExceptions: { kind: 'errors' },
    exceptionRules: { kind: 'enum', values: ['resilience4nest', 'resilience4j'] },
    ignoreExceptions: { kind: 'errors' },
    recordResult: { kind: 'function' },
    registerHealthIndicator: { kind: 'boolean' },
    allowHealthIndicatorToFail: { kind: 'boolean' },
    writableStackTraceEnabled: { kind: 'boolean' },
    shared: { kind: 'custom', read: sharedOption },
  },
  defaults: {
    failureRateThreshold: 50,
    slowCallRateThreshold: 100,
    slowCallDurationThreshold: 60_000,
    permittedNumberOfCallsInHalfOpenState: 10,
    maxWaitDurationInHalfOpenState: 0,
    transitionToStateAfterWaitDuration: 'OPEN',
    slidingWindowType: 'COUNT_BASED',
    slidingWindowSize: 100,
    minimumNumberOfCalls: 100,
    waitDurationInOpenState: 60_000,
    enableExponentialBackoff: false,
    exponentialBackoffMultiplier: 1.5,
    exponentialMaxWaitDurationInOpenState: Number.POSITIVE_INFINITY,
    enableRandomizedWait: false,
    randomizedWaitFactor: 0.5,
    initialState: 'CLOSED',
    automaticTransitionFromOpenToHalfOpenEnabled: false,
    recordExceptions: [],
    exceptionRules: 'resilience4nest',
    ignoreExceptions: [],
    recordResult: undefined,
    registerHealthIndicator: false,
    allowHealthIndicatorToFail: false,
    writableStackTraceEnabled: true,
    shared: false,
  },
  check(config, place) {
    if (config.enableExponentialBackoff && config.enableRandomizedWait) {
      // As Resilience4j's Spring configuration: one open-state interval function or the other.
      throw new Error(
        INVALID_VALUE(place, 'enableRandomizedWait', 'false when enableExponentialBackoff is true', true),
      );
    }
    if (config.slidingWindowType === 'TIME_BASED' && config.slidingWindowSize > 3600) {
      throw new Error(
        INVALID_VALUE(
          place,
          'slidingWindowSize',
          'at most 3600 seconds for a TIME_BASED window',
          config.slidingWindowSize,
        ),
      );
    }
  },
};
