/**
 * A manual transition that Resilience4j's state machine forbids (CLOSED →
 * HALF_OPEN, METRICS_ONLY → OPEN or HALF_OPEN). It is a programming error,
 * not a call outcome: the breaker stays in its state.
 */
export class IllegalStateTransitionError extends Error {
  /**
   * @param instance - the circuit breaker's name
   * @param from - the state the breaker is in
   * @param to - the state it was asked to move to
   */
  constructor(
    /** The circuit breaker's name. */
    readonly instance: string,
    /** The state the breaker is in (and stays in). */
    readonly from: string,
    /** The state it was asked to move to. */
    readonly to: string,
  ) {
    super(`CircuitBreaker '${instance}' tried an illegal state transition from ${from} to ${to}`);
  }
}

Object.defineProperty(IllegalStateTransitionError.prototype, 'name', {
  value: IllegalStateTransitionError.name,
  writable: true,
  configurable: true,
});
