/**
 * Names of the span events and attributes the tracing records. OpenTelemetry
 * has no convention for resilience events; these follow Polly's telemetry
 * (`attempt.number`, the strategy's name and kind) under a `resilience.`
 * namespace, and OpenTelemetry's `error.type` for the error's class.
 */
export const RESILIENCE_SPAN_EVENTS = {
  /** An attempt after the first starts (a retry's, after its wait). */
  attempt: 'resilience.attempt',
  /** A failed attempt will be retried after a wait. */
  retry: 'resilience.retry',
  /** A failed attempt is not retried, and why (budget, deadline, attempts spent, not retryable). */
  retryStopped: 'resilience.retry.stopped',
  /** The circuit breaker refused a call. */
  circuitBreakerNotPermitted: 'resilience.circuit_breaker.not_permitted',
  /** A call waited in the bulkhead's queue for its permit. */
  bulkheadWaited: 'resilience.bulkhead.waited',
  /** The bulkhead refused a call (queue full, wait ran out, aborted, deadline). */
  bulkheadRejected: 'resilience.bulkhead.rejected',
  /** An attempt ran out of time (its time limit or the request deadline). */
  timeout: 'resilience.timeout',
  /** The rate limiter made the call wait for a permit. */
  rateLimiterWaited: 'resilience.rate_limiter.waited',
  /** The rate limiter refused the call. */
  rateLimiterRejected: 'resilience.rate_limiter.rejected',
  /** A fallback handler answered the call. */
  fallback: 'resilience.fallback',
  /** `@Idempotent` answered with the stored response of an earlier request. */
  idempotencyReplayed: 'resilience.idempotency.replayed',
  /** A hedge started, or a hedged call got its answer. */
  hedge: 'resilience.hedge',
  /** A cache answered with a stored answer younger than its `ttl`, without calling. */
  cacheHit: 'resilience.cache.hit',
  /** The call failed and a cache answered with the last known good (a degraded answer). */
  cacheStale: 'resilience.cache.stale',
  /** Fault injection slowed, failed or answered the call on purpose (with `resilience.fault.injected`). */
  fault: 'resilience.fault',
} as const;

/** Attribute names on the span events. */
export const RESILIENCE_SPAN_ATTRIBUTES = {
  /** The policy instance's name (Polly: `strategy.name`). */
  instance: 'resilience.instance',
  /** The key, on the events of the instance of one key (a breaker per host, a limiter per tenant). */
  key: 'resilience.instance.key',
  /** The policy: `retry`, `circuit_breaker`, `bulkhead`, `time_limiter`, `rate_limiter`, `fallback`, `idempotency`, `hedge`, `cache`, `fault_injection`. */
  policy: 'resilience.policy',
  /** The attempt, 1-based (Polly: `attempt.number`, which is 0-based). */
  attemptNumber: 'resilience.attempt.number',
  /** OpenTelemetry's `error.type`: the error's class name (Polly: `exception.type`). */
  errorType: 'error.type',
  /** The wait before the next attempt, in ms. */
  retryWaitMs: 'resilience.retry.wait_ms',
  /** Why no retry follows: `not-retryable`, `max-attempts`, `budget`, `deadline`, `retry-after-too-long`. */
  retryStopReason: 'resilience.retry.stop_reason',
  /** The breaker's state when it refused. */
  circuitBreakerState: 'resilience.circuit_breaker.state',
  /** Why the bulkhead refused: `queue-full`, `wait-timeout`, `aborted`, `deadline`. */
  bulkheadReason: 'resilience.bulkhead.reason',
  /** The wait for a bulkhead permit, in ms. */
  bulkheadWaitMs: 'resilience.bulkhead.wait_ms',
  /** The rate limiter's wait, in ms. */
  rateLimiterWaitMs: 'resilience.rate_limiter.wait_ms',
  /** The error class whose fallback handler answered. */
  fallbackHandler: 'resilience.fallback.handler',
  /** `started` (a hedge) or `won` (a hedged call's answer). */
  hedgeKind: 'resilience.hedge.kind',
  /** Attempts cancelled when a hedged call got its answer. */
  hedgeCancelled: 'resilience.hedge.cancelled',
  /** How a cache answered: `hit` or `stale`. */
  cacheResult: 'resilience.cache.result',
  /** How old the cache's answer was, in ms. */
  cacheAgeMs: 'resilience.cache.age_ms',
  /** The failed attempt's error code: its `code` property (`ECONNREFUSED`, `card_declined`), on the attempt span's exception. */
  errorCode: 'resilience.error.code',
  /** The HTTP status the failed attempt's error carries, on the attempt span's exception. */
  errorStatus: 'resilience.error.status',
  /** `true` on an event or exception that fault injection caused, so it is not mistaken for a real failure. */
  faultInjected: 'resilience.fault.injected',
  /** What fault injection did: `latency`, `error` or `outcome`. */
  faultKind: 'resilience.fault.kind',
  /** The latency injected, in ms. */
  faultDurationMs: 'resilience.fault.duration_ms',
} as const;
