/**
 * The states of a circuit breaker, as Resilience4j names them. CLOSED, OPEN
 * and HALF_OPEN follow the calls; DISABLED (always permit, record nothing),
 * FORCED_OPEN (permit nothing) and METRICS_ONLY (always permit, record and
 * report, never open) are entered only by hand.
 */
export type CircuitBreakerState = 'CLOSED' | 'OPEN' | 'HALF_OPEN' | 'DISABLED' | 'FORCED_OPEN' | 'METRICS_ONLY';

/** The breaker moved from one state to another. */
export interface CircuitBreakerStateTransitionEvent {
  readonly name: string;
  readonly from: CircuitBreakerState;
  readonly to: CircuitBreakerState;
}

/** A call was refused with {@link CallNotPermittedError}. */
export interface CircuitBreakerCallNotPermittedEvent {
  readonly name: string;
  /** The state that refused it. */
  readonly state: CircuitBreakerState;
}

/** A call was recorded as a success (including a not-recorded error). */
export interface CircuitBreakerSuccessEvent {
  readonly name: string;
  readonly durationMs: number;
}

/** A call was recorded as a failure. */
export interface CircuitBreakerErrorEvent {
  readonly name: string;
  readonly durationMs: number;
  /** The thrown error, or the returned value that `recordResult` marked as a failure. */
  readonly error: unknown;
}

/** A call ended with an error that counts as neither success nor failure. */
export interface CircuitBreakerIgnoredErrorEvent {
  readonly name: string;
  readonly durationMs: number;
  readonly error: unknown;
}

/** The failure rate reached `failureRateThreshold`. */
export interface CircuitBreakerFailureRateExceededEvent {
  readonly name: string;
  readonly failureRate: number;
}

/** The slow-call rate reached `slowCallRateThreshold`. */
export interface CircuitBreakerSlowCallRateExceededEvent {
  readonly name: string;
  readonly slowCallRate: number;
}

/** The breaker was reset to a fresh CLOSED state. */
export interface CircuitBreakerResetEvent {
  readonly name: string;
}
