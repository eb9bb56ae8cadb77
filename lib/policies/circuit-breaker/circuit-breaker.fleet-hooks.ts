import type { CircuitBreakerState } from './circuit-breaker.events';

/**
 * What a fleet-wide breaker tells its fleet, and asks of it. The breaker
 * calls these synchronously on its transitions only (never on a call it
 * merely admits or records), and the fleet answers without waiting on its
 * store.
 */
export interface CircuitBreakerFleetHooks {
  /** The breaker's own window opened it from CLOSED, for `waitMs`. */
  opened(waitMs: number): void;
  /** A half-open round ended (by its trials, or `maxWaitDurationInHalfOpenState`) in `to`; `waitMs` is the new OPEN wait. */
  decided(to: CircuitBreakerState, waitMs: number): void;
  /** OPEN's wait is over: true lets this replica go HALF_OPEN now; false keeps it OPEN until the fleet moves it. */
  mayProbe(): boolean;
  /** An operator moved the breaker to `to` (`reset` for `reset()`); `waitMs` is the wait when `to` is OPEN. */
  changedByHand(to: CircuitBreakerState, waitMs: number, reset: boolean): void;
}
