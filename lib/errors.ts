/**
 * Base class of every error this module raises. `name` is the policy
 * instance that raised it (as in DESIGN: errors carry the instance name);
 * the error's kind is its class, and `code` gives it as a stable string.
 */
export abstract class ResilienceError extends Error {
  /** Stable machine-readable kind, e.g. `CALL_NOT_PERMITTED`. */
  abstract readonly code: string;

  /** @param instanceName the policy instance that raised the error. */
  constructor(
    instanceName: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    Object.defineProperty(this, 'name', { value: instanceName, enumerable: true, writable: true, configurable: true });
  }

  /** The policy instance that raised the error (same as `name`). */
  get instanceName(): string {
    return this.name;
  }
}

/** The circuit breaker refused the call: it never left, so refusing is safe. */
export class CallNotPermittedError extends ResilienceError {
  readonly code = 'CALL_NOT_PERMITTED';

  /**
   * @param instanceName the circuit breaker's name
   * @param state the breaker state that refused the call
   * @param retryAfterMs ms until the breaker may admit calls again (`undefined` when unknown, e.g. FORCED_OPEN)
   */
  constructor(
    instanceName: string,
    readonly state: string,
    readonly retryAfterMs?: number,
  ) {
    super(instanceName, `CircuitBreaker '${instanceName}' is ${state} and does not permit further calls`);
  }
}

/** The bulkhead had no permit free within `maxWaitDuration`, or its queue was full. */
export class BulkheadFullError extends ResilienceError {
  readonly code = 'BULKHEAD_FULL';

  /**
   * @param instanceName the bulkhead's name
   * @param reason why the call was refused
   * @param retryAfterMs a hint for the caller, in ms
   */
  constructor(
    instanceName: string,
    readonly reason: 'queue-full' | 'wait-timeout' | 'aborted' = 'queue-full',
    readonly retryAfterMs?: number,
  ) {
    super(instanceName, `Bulkhead '${instanceName}' is full and does not permit further calls (${reason})`);
  }
}

/** A call ran past its time limit; its outcome is unknown. */
export class TimeoutExceededError extends ResilienceError {
  readonly code = 'TIMEOUT_EXCEEDED';

  /** @param instanceName the time limiter's name @param timeoutMs the limit that was exceeded */
  constructor(
    instanceName: string,
    readonly timeoutMs: number,
  ) {
    super(instanceName, `TimeLimiter '${instanceName}' recorded a call that exceeded ${timeoutMs}ms`);
  }
}

/** The request deadline has no time left for this work. */
export class DeadlineExceededError extends ResilienceError {
  readonly code = 'DEADLINE_EXCEEDED';

  /** @param instanceName the policy instance that found no time left (or `deadline`) */
  constructor(instanceName = 'deadline', detail = 'the request deadline has passed') {
    super(instanceName, `Deadline exceeded at '${instanceName}': ${detail}`);
  }
}

/** A rate limiter had no permit within `timeoutDuration` (or, failing closed, could not reach its store). */
export class RateLimitedError extends ResilienceError {
  readonly code = 'RATE_LIMITED';

  /**
   * @param instanceName the rate limiter's name
   * @param retryAfterMs ms until the limiter's next period starts
   * @param options `cause` (a store failure) and `message`, when the refusal has another reason than a spent limit
   */
  constructor(
    instanceName: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown; message?: string },
  ) {
    super(instanceName, options?.message ?? `RateLimiter '${instanceName}' does not permit further calls`, options?.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** The load shedder refused a request at the server's door: it never ran, so trying again later is safe. */
export class OverloadedError extends ResilienceError {
  readonly code = 'OVERLOADED';

  /**
   * @param reason the signal that refused it: `concurrency`, `event-loop-delay` or `priority`
   * @param priority the request's load-shedding class
   * @param retryAfterMs a hint for the client, in ms
   */
  constructor(
    readonly reason: string,
    readonly priority: string,
    readonly retryAfterMs?: number,
  ) {
    super('loadShedding', `The server is overloaded and refused a '${priority}' request (${reason})`);
  }
}

/**
 * `retryOnResult` still asked for a retry after the last attempt and
 * `failAfterMaxAttempts` is true. `lastResult` is the value of that attempt.
 */
export class MaxRetriesExceededError extends ResilienceError {
  readonly code = 'MAX_RETRIES_EXCEEDED';

  /** @param instanceName the retry's name @param attempts attempts made @param lastResult the last returned value */
  constructor(
    instanceName: string,
    readonly attempts: number,
    readonly lastResult: unknown,
  ) {
    super(instanceName, `Retry '${instanceName}' has exhausted all ${attempts} attempts and the result is still retryable`);
  }
}

/** The `Idempotency-Key` is required but absent or malformed. */
export class IdempotencyKeyMissingError extends ResilienceError {
  readonly code = 'IDEMPOTENCY_KEY_MISSING';

  /** @param instanceName the route or handler @param detail what was wrong with the key */
  constructor(instanceName: string, detail: string) {
    super(instanceName, detail);
  }
}

/** A request with the same idempotency key is still being processed. */
export class IdempotencyKeyInProgressError extends ResilienceError {
  readonly code = 'IDEMPOTENCY_KEY_IN_PROGRESS';

  /** @param instanceName the route or handler @param retryAfterMs when to try again */
  constructor(
    instanceName: string,
    readonly retryAfterMs?: number,
  ) {
    super(instanceName, `A request with this idempotency key is still in progress at '${instanceName}'`);
  }
}

/** The idempotency key was already used with a different request fingerprint. */
export class IdempotencyKeyReuseError extends ResilienceError {
  readonly code = 'IDEMPOTENCY_KEY_REUSE';

  /** @param instanceName the route or handler */
  constructor(instanceName: string) {
    super(instanceName, `This idempotency key was already used with a different request payload at '${instanceName}'`);
  }
}

/**
 * The idempotency store failed, or did not answer within `storeTimeout`
 * (or the request deadline). Nothing ran for this request: the client may
 * retry with the same key.
 */
export class IdempotencyStoreUnavailableError extends ResilienceError {
  readonly code = 'IDEMPOTENCY_STORE_UNAVAILABLE';

  /**
   * @param instanceName the route or handler
   * @param detail what the store did (failed, or did not answer in time)
   * @param retryAfterMs when to try again
   * @param cause the store's error, if it gave one
   */
  constructor(
    instanceName: string,
    detail: string,
    readonly retryAfterMs?: number,
    cause?: unknown,
  ) {
    super(instanceName, `The idempotency store is unavailable at '${instanceName}': ${detail}`, cause === undefined ? undefined : { cause });
  }
}

// Stack traces and `util.inspect` read the class from the prototype's `name`.
for (const errorClass of [
  CallNotPermittedError,
  BulkheadFullError,
  TimeoutExceededError,
  DeadlineExceededError,
  RateLimitedError,
  OverloadedError,
  MaxRetriesExceededError,
  IdempotencyKeyMissingError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyReuseError,
  IdempotencyStoreUnavailableError,
]) {
  Object.defineProperty(errorClass.prototype, 'name', { value: errorClass.name, writable: true, configurable: true });
}
