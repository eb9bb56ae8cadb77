import type { CircuitBreakerState } from './circuit-breaker.events';

/**
 * A breaker's health, as Resilience4j's health indicator reports it: `UP`
 * when CLOSED; `DOWN` when OPEN and `allowHealthIndicatorToFail`, else
 * `CIRCUIT_OPEN`; `CIRCUIT_HALF_OPEN`; `UNKNOWN` in the manual states.
 */
export type CircuitBreakerHealthStatus = 'UP' | 'DOWN' | 'CIRCUIT_OPEN' | 'CIRCUIT_HALF_OPEN' | 'UNKNOWN';

/** What the health check reports of one breaker (rates in percent, -1 below `minimumNumberOfCalls`). */
export interface CircuitBreakerHealth {
  /** The breaker's health, mapped from its state as Resilience4j maps it. */
  readonly status: CircuitBreakerHealthStatus;
  /** The breaker's current state. */
  readonly state: CircuitBreakerState;
  /** Failed calls in percent of the calls in the window; -1 below `minimumNumberOfCalls`. */
  readonly failureRate: number;
  /** Slow calls in percent of the calls in the window; -1 below `minimumNumberOfCalls`. */
  readonly slowCallRate: number;
  /** The configured `failureRateThreshold`, in percent. */
  readonly failureRateThreshold: number;
  /** The configured `slowCallRateThreshold`, in percent. */
  readonly slowCallRateThreshold: number;
  /** Calls in the sliding window. */
  readonly bufferedCalls: number;
  /** Calls in the window recorded as failures. */
  readonly failedCalls: number;
  /** Calls in the window longer than `slowCallDurationThreshold`. */
  readonly slowCalls: number;
  /** Calls in the window both slow and failed. */
  readonly slowFailedCalls: number;
  /** Calls refused since the current window began. */
  readonly notPermittedCalls: number;
}

/** The health of each state, as Resilience4j maps it; `allowToFail` is the breaker's `allowHealthIndicatorToFail`. */
export const HEALTH_OF: Readonly<Record<CircuitBreakerState, (allowToFail: boolean) => CircuitBreakerHealthStatus>> = {
  CLOSED: () => 'UP',
  OPEN: (allowToFail) => (allowToFail ? 'DOWN' : 'CIRCUIT_OPEN'),
  HALF_OPEN: () => 'CIRCUIT_HALF_OPEN',
  DISABLED: () => 'UNKNOWN',
  FORCED_OPEN: () => 'UNKNOWN',
  METRICS_ONLY: () => 'UNKNOWN',
};
