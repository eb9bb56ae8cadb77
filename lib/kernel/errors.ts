import { formatMs } from './format-ms';
import { TOO_MANY_KEYS, TOO_MANY_UNDECLARED_INSTANCES } from './resilience.messages';

/**
 * @internal Marks `error` as a refusal. A private field rather than a
 * weak set: a refusal is made on every refused call, and adding each to a
 * weak set costs more than building the error.
 */
export let markRefusal: (error: ResilienceError) => void;

/** @internal True when {@link markRefusal} marked `error`. */
export let isMarkedRefusal: (error: ResilienceError) => boolean;

/**
 * Base class of every error this module raises. Like every JavaScript
 * error, `name` is the class name (`'CallNotPermittedError'`); the policy
 * instance that raised it is `instance`, and `code` gives the kind as a
 * stable string.
 */
export abstract class ResilienceError extends Error {
  /** Stable machine-readable kind, e.g. `CALL_NOT_PERMITTED`. */
  abstract readonly code: string;
  /** The policy instance (or route, or handler) that raised the error. */
  readonly instance: string;

  /** Raised by a policy instead of running the call it guards; see {@link markRefusal}. */
  #refusal = false;

  /** @param instance - the policy instance that raised the error. */
  constructor(instance: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.instance = instance;
  }

  static {
    markRefusal = (error) => {
      error.#refusal = true;
    };
    isMarkedRefusal = (error) => error.#refusal;
  }
}

// The class name, read from the prototype so no error carries it as its own property; assigning relabels one error.
Object.defineProperty(ResilienceError.prototype, 'name', {
  get(this: ResilienceError): string {
    return this.constructor.name;
  },
  set(this: ResilienceError, value: unknown): void {
    Object.defineProperty(this, 'name', { value, writable: true, configurable: true });
  },
  configurable: true,
});

/**
 * @internal Builds a refusal error with or without a stack trace, as
 * Resilience4j's `writableStackTraceEnabled` asks. Without one, V8 walks no
 * frames: the error keeps its name, message and fields, and `stack` is only
 * its first line. A refused call under overload then costs about what an
 * admitted one does.
 */
export function refusalError<A extends unknown[], E extends Error>(
  withStackTrace: boolean,
  ErrorClass: new (...args: A) => E,
  ...args: A
): E {
  if (withStackTrace) return new ErrorClass(...args);
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new ErrorClass(...args);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** The circuit breaker refused the call: it never left, so refusing is safe. */
export class CallNotPermittedError extends ResilienceError {
  /** Always `'CALL_NOT_PERMITTED'`. */
  readonly code = 'CALL_NOT_PERMITTED';

  /**
   * @param instance - the circuit breaker's name
   * @param state - the breaker state that refused the call
   * @param retryAfterMs - ms until the breaker may admit calls again (`undefined` when unknown, e.g. FORCED_OPEN)
   */
  constructor(
    instance: string,
    /** The breaker's state when it refused the call: `OPEN`, `HALF_OPEN` (no trial permit left) or `FORCED_OPEN`. */
    readonly state: string,
    /** ms until the breaker may admit calls again: the time left in OPEN; undefined in FORCED_OPEN and HALF_OPEN. */
    readonly retryAfterMs?: number,
  ) {
    super(instance, `CircuitBreaker '${instance}' is ${state} and does not permit further calls`);
  }
}

/** The bulkhead had no permit free within `maxWaitDuration`, or its queue was full. */
export class BulkheadFullError extends ResilienceError {
  /** Always `'BULKHEAD_FULL'`. */
  readonly code = 'BULKHEAD_FULL';

  /**
   * @param instance - the bulkhead's name
   * @param reason - why the call was refused
   * @param retryAfterMs - a hint for the caller, in ms
   */
  constructor(
    instance: string,
    /** `queue-full` (no permit, no room to wait), `wait-timeout` (none within `maxWaitDuration`) or `aborted`. */
    readonly reason: 'queue-full' | 'wait-timeout' | 'aborted' = 'queue-full',
    /** A hint for the caller, in ms: the bulkhead's `maxWaitDuration`; undefined when it does not wait. */
    readonly retryAfterMs?: number,
  ) {
    super(instance, `Bulkhead '${instance}' is full and does not permit further calls (${reason})`);
  }
}

/** A call ran past its time limit; its outcome is unknown. */
export class TimeoutExceededError extends ResilienceError {
  /** Always `'TIMEOUT_EXCEEDED'`. */
  readonly code = 'TIMEOUT_EXCEEDED';

  /** @param instance - the time limiter's name @param timeoutMs - the limit that was exceeded */
  constructor(
    instance: string,
    /** The time limit the call ran past, in ms (`timeoutDuration`). */
    readonly timeoutMs: number,
  ) {
    super(instance, `TimeLimiter '${instance}' recorded a call that exceeded ${formatMs(timeoutMs)}ms`);
  }
}

/** The request deadline has no time left for this work. */
export class DeadlineExceededError extends ResilienceError {
  /** Always `'DEADLINE_EXCEEDED'`. */
  readonly code = 'DEADLINE_EXCEEDED';

  /** @param instance - the policy instance that found no time left (or `deadline`) */
  constructor(instance = 'deadline', detail = 'the request deadline has passed') {
    super(instance, `Deadline exceeded at '${instance}': ${detail}`);
  }
}

/** A rate limiter had no permit within `timeoutDuration` (or, failing closed, could not reach its store). */
export class RateLimitedError extends ResilienceError {
  /** Always `'RATE_LIMITED'`. */
  readonly code = 'RATE_LIMITED';

  /**
   * @param instance - the rate limiter's name
   * @param retryAfterMs - ms until the limiter's next period starts
   * @param options - `cause` (a store failure) and `message`, when the refusal has another reason than a spent limit
   */
  constructor(
    instance: string,
    /** ms until the limiter's next period starts; undefined when its store could not be reached. */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown; message?: string },
  ) {
    super(
      instance,
      options?.message ?? `RateLimiter '${instance}' does not permit further calls`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
  }
}

/** The load shedder refused a request at the server's door: it never ran, so trying again later is safe. */
export class OverloadedError extends ResilienceError {
  /** Always `'OVERLOADED'`. */
  readonly code = 'OVERLOADED';

  /**
   * @param reason - the signal that refused it: `concurrency`, `event-loop-delay` or `priority`
   * @param priority - the request's load-shedding class
   * @param retryAfterMs - a hint for the client, in ms
   */
  constructor(
    /** The signal that refused the request: `concurrency`, `event-loop-delay` or `priority`. */
    readonly reason: string,
    /** The request's load-shedding class: `critical`, `high`, `normal` or `low`. */
    readonly priority: string,
    /** The `Retry-After` hint for the client, in ms (the `loadShedding.retryAfter` option, default 1 s). */
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
  /** Always `'MAX_RETRIES_EXCEEDED'`. */
  readonly code = 'MAX_RETRIES_EXCEEDED';

  /** @param instance - the retry's name @param attempts - attempts made @param lastResult - the last returned value */
  constructor(
    instance: string,
    /** Attempts made, the first call included. */
    readonly attempts: number,
    /** The value the last attempt returned, which `retryOnResult` still asked to retry. */
    readonly lastResult: unknown,
  ) {
    super(instance, `Retry '${instance}' has exhausted all ${attempts} attempts and the result is still retryable`);
  }
}

/** The `Idempotency-Key` is required but absent or malformed. */
export class IdempotencyKeyMissingError extends ResilienceError {
  /** Always `'IDEMPOTENCY_KEY_MISSING'`. */
  readonly code = 'IDEMPOTENCY_KEY_MISSING';

  /** @param instance - the route or handler @param detail - what was wrong with the key */
  constructor(instance: string, detail: string) {
    super(instance, detail);
  }
}

/** A request with the same idempotency key is still being processed. */
export class IdempotencyKeyInProgressError extends ResilienceError {
  /** Always `'IDEMPOTENCY_KEY_IN_PROGRESS'`. */
  readonly code = 'IDEMPOTENCY_KEY_IN_PROGRESS';

  /** @param instance - the route or handler @param retryAfterMs - when to try again */
  constructor(
    instance: string,
    /** ms to wait before trying again: the time left on the other request's lease, or one whole lease. */
    readonly retryAfterMs?: number,
  ) {
    super(instance, `A request with this idempotency key is still in progress at '${instance}'`);
  }
}

/**
 * The earlier attempt with this idempotency key stopped without finishing
 * and nothing can tell whether it had its effect (no `reconciler`): the key
 * is not run again, so a retry cannot help; an operator, or a reconciler,
 * must resolve it.
 */
export class IdempotencyOutcomeUnknownError extends ResilienceError {
  /** Always `'IDEMPOTENCY_OUTCOME_UNKNOWN'`. */
  readonly code = 'IDEMPOTENCY_OUTCOME_UNKNOWN';

  /** @param instance - the route or handler */
  constructor(instance: string) {
    super(
      instance,
      `The earlier request with this idempotency key at '${instance}' stopped without finishing and its outcome is unknown; it is not run again, and retrying will not change this answer`,
    );
  }
}

/** The idempotency key was already used with a different request fingerprint. */
export class IdempotencyKeyReuseError extends ResilienceError {
  /** Always `'IDEMPOTENCY_KEY_REUSE'`. */
  readonly code = 'IDEMPOTENCY_KEY_REUSE';

  /** @param instance - the route or handler */
  constructor(instance: string) {
    super(instance, `This idempotency key was already used with a different request payload at '${instance}'`);
  }
}

/**
 * The idempotency store failed, or did not answer within `storeTimeout`
 * (or the request deadline). Nothing ran for this request: the client may
 * retry with the same key.
 */
export class IdempotencyStoreUnavailableError extends ResilienceError {
  /** Always `'IDEMPOTENCY_STORE_UNAVAILABLE'`. */
  readonly code = 'IDEMPOTENCY_STORE_UNAVAILABLE';

  /**
   * @param instance - the route or handler
   * @param detail - what the store did (failed, or did not answer in time)
   * @param retryAfterMs - when to try again
   * @param cause - the store's error, if it gave one
   */
  constructor(
    instance: string,
    detail: string,
    /** A hint for the client, in ms; undefined when none is known (answered as `Retry-After: 1`). */
    readonly retryAfterMs?: number,
    cause?: unknown,
  ) {
    super(
      instance,
      `The idempotency store is unavailable at '${instance}': ${detail}`,
      cause === undefined ? undefined : { cause },
    );
  }
}

/**
 * The caller already holds as many idempotency keys as the store allows one
 * principal (`MemoryIdempotencyStore`'s `maxKeysPerPrincipal`). Nothing ran;
 * the same request is accepted once the caller's oldest key expires
 * (`retryAfterMs`), and other callers are not affected.
 */
export class IdempotencyKeyQuotaExceededError extends ResilienceError {
  /** Always `'IDEMPOTENCY_KEY_QUOTA_EXCEEDED'`. */
  readonly code = 'IDEMPOTENCY_KEY_QUOTA_EXCEEDED';

  /** @param instance - the route or handler @param retryAfterMs - until the caller's oldest key expires */
  constructor(
    instance: string,
    /** ms until the caller's oldest key expires and a new key is accepted. */
    readonly retryAfterMs: number,
  ) {
    super(
      instance,
      `The caller holds as many idempotency keys as it may at '${instance}'; a new key is accepted once its oldest key expires`,
    );
  }
}

/**
 * The registry was asked for an instance it cannot make room for: an
 * undeclared name past `maxUndeclaredInstances`, or a new key of an
 * instance used per key past its section's `keys.max`, while every
 * existing one holds state a restart would lose (an OPEN breaker, a
 * bulkhead with calls in flight, a rate limiter with waiters) and so
 * cannot be evicted. Nothing ran. `instance` is the name asked for.
 */
export class TooManyInstancesError extends ResilienceError {
  /** Always `'TOO_MANY_INSTANCES'`. */
  readonly code = 'TOO_MANY_INSTANCES';

  /**
   * @param policy - the policy section, e.g. `circuitBreaker`
   * @param instance - the name asked for
   * @param max - the cap reached: `maxUndeclaredInstances`, or the section's `keys.max` when `key` is given
   * @param key - the new key refused, for an instance used per key
   */
  constructor(
    /** The policy section the name was asked of, e.g. `circuitBreaker`. */
    readonly policy: string,
    instance: string,
    /** The cap reached: the module option `maxUndeclaredInstances`, or the section's `keys.max`. */
    readonly max: number,
    /** The key refused, when the instance is used per key (kept out of the message, which may reach a client); else undefined. */
    readonly key?: string,
  ) {
    super(
      instance,
      key === undefined ? TOO_MANY_UNDECLARED_INSTANCES(policy, instance, max) : TOO_MANY_KEYS(policy, instance, max),
    );
  }
}
