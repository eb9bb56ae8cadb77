import type { DeadlineExceededError, RateLimitedError } from '../../kernel/errors';
/** A caller got its permits (Resilience4j's `SUCCESSFUL_ACQUIRE`). */
export interface RateLimiterAcquiredEvent {
  /** The rate limiter's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** Permits the caller acquired. */
  readonly numberOfPermits: number;
}

/** A caller reserved permits of a later period and waits for them. */
export interface RateLimiterWaitEvent {
  /** The rate limiter's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** How long the caller waits for its permits, in ms. */
  readonly waitMs: number;
}

/** A caller was refused (Resilience4j's `FAILED_ACQUIRE`). */
export interface RateLimiterRefusedEvent {
  /** The rate limiter's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** Permits the caller asked for. */
  readonly numberOfPermits: number;
  /** The refusal: `DeadlineExceededError` when only the request deadline stood in the way, else `RateLimitedError`. */
  readonly error: RateLimitedError | DeadlineExceededError;
}

/** The permits left in the period were drained (Resilience4j's `DRAINED`). */
export interface RateLimiterDrainedEvent {
  /** The rate limiter's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** Permits that were left and are now gone. */
  readonly numberOfPermits: number;
}

/** A shared rate limiter's store failed or did not answer in time. */
export interface RateLimiterStoreFailureEvent {
  /** The rate limiter's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The store's error, or an `Error` saying it did not answer within `storeTimeout`; for logs only, never for clients. */
  readonly error: unknown;
  /** True when the call went ahead without a permit (`failOpen`); false when it was refused. */
  readonly failedOpen: boolean;
}
