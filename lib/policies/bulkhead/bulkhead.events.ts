import type { BulkheadFullError, DeadlineExceededError } from '../../kernel/errors';

/** A call received a permit (at once or after waiting). */
export interface BulkheadCallPermittedEvent {
  /** The bulkhead's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
}

/**
 * A call left the bulkhead without a permit: `queue-full`, `wait-timeout`,
 * `aborted` (its caller cancelled, or its attempt was aborted) or `deadline`
 * (the request ran out of time).
 */
export interface BulkheadCallRejectedEvent {
  /** The bulkhead's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** Why the call got no permit: `queue-full`, `wait-timeout`, `aborted` or `deadline`. */
  readonly reason: BulkheadFullError['reason'] | 'deadline';
  /**
   * The error the call was rejected with: a `DeadlineExceededError` for
   * `deadline`; for `aborted`, the caller's `AbortError` (`callerAbortError`)
   * when the caller cancelled, else a `BulkheadFullError`; else a `BulkheadFullError`.
   */
  readonly error: BulkheadFullError | DeadlineExceededError | DOMException;
}

/** A permitted call finished (either way) and gave its permit back. */
export interface BulkheadCallFinishedEvent {
  /** The bulkhead's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** How long the call held its permit, in ms. */
  readonly durationMs: number;
}

/** A call that waited in the queue got its permit. */
export interface BulkheadCallWaitedEvent {
  /** The bulkhead's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** How long the call waited for its permit, in ms. */
  readonly waitMs: number;
}
