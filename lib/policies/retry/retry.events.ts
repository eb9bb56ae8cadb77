/** A retry is about to wait and try again. */
export interface RetryEvent {
  /** The retry's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The attempt that just failed (1-based). */
  readonly attempt: number;
  /** The wait before the next attempt, in ms. */
  readonly waitMs: number;
  /** The error of the failed attempt, or `undefined` when a result was retried. */
  readonly error: unknown;
}

/** An attempt after the first starts (its wait is over). */
export interface RetryAttemptEvent {
  /** The retry's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The attempt that starts, 1-based: 2 for the first retry. */
  readonly attempt: number;
}

/** A call ended; `attempts` counts every attempt made. */
export interface RetryOutcomeEvent {
  /** The retry's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** Attempts made, the first call included. */
  readonly attempts: number;
  /** On failure, the error that propagates (a `MaxRetriesExceededError` for a retried result); absent on success. */
  readonly error?: unknown;
}

/** Why a failed attempt was not retried. */
export type RetryStopReason = 'not-retryable' | 'max-attempts' | 'budget' | 'deadline' | 'retry-after-too-long';

/** A failed attempt that will not be retried, and why. */
export interface RetryStoppedEvent {
  /** The retry's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The attempt that failed and is not retried (1-based). */
  readonly attempt: number;
  /** Why no retry follows. */
  readonly reason: RetryStopReason;
  /** The error of that attempt, or `undefined` when `retryOnResult` rejected a result. */
  readonly error: unknown;
}
