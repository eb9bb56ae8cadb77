/**
 * The states of a circuit breaker, as Resilience4j names them. CLOSED, OPEN
 * and HALF_OPEN follow the calls; DISABLED (always permit, record nothing),
 * FORCED_OPEN (permit nothing) and METRICS_ONLY (always permit, record and
 * report, never open) are entered only by hand.
 */
export type CircuitBreakerState = 'CLOSED' | 'OPEN' | 'HALF_OPEN' | 'DISABLED' | 'FORCED_OPEN' | 'METRICS_ONLY';

/** The breaker moved from one state to another. */
export interface CircuitBreakerStateTransitionEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The state the breaker left. */
  readonly from: CircuitBreakerState;
  /** The state the breaker entered. */
  readonly to: CircuitBreakerState;
}

/** A call was refused with {@link CallNotPermittedError}. */
export interface CircuitBreakerCallNotPermittedEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The state that refused it. */
  readonly state: CircuitBreakerState;
}

/** A call was recorded as a success (including a not-recorded error). */
export interface CircuitBreakerSuccessEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The call's duration in ms on the breaker's clock (an Observable's: to its first value). */
  readonly durationMs: number;
}

/** A call was recorded as a failure. */
export interface CircuitBreakerErrorEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The call's duration in ms on the breaker's clock (an Observable's: to its first value). */
  readonly durationMs: number;
  /** The thrown error, or the returned value that `recordResult` marked as a failure. */
  readonly error: unknown;
}

/** A call ended with an error that counts as neither success nor failure. */
export interface CircuitBreakerIgnoredErrorEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The call's duration in ms on the breaker's clock (an Observable's: to its first value). */
  readonly durationMs: number;
  /** The error, matched by `ignoreExceptions` (or a `BulkheadFullError` the breaker does not record). */
  readonly error: unknown;
}

/** The failure rate reached `failureRateThreshold`. */
export interface CircuitBreakerFailureRateExceededEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** Failed calls in percent of the calls in the window, at or above `failureRateThreshold`. */
  readonly failureRate: number;
}

/** The slow-call rate reached `slowCallRateThreshold`. */
export interface CircuitBreakerSlowCallRateExceededEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** Slow calls in percent of the calls in the window, at or above `slowCallRateThreshold`. */
  readonly slowCallRate: number;
}

/** The breaker was reset to a fresh CLOSED state. */
export interface CircuitBreakerResetEvent {
  /** The breaker's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
}
