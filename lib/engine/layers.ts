import type { ResilienceContext } from '../kernel/context';
import type { AttemptLimiter, TimedAttempt } from './timed-attempt';

/**
 * What the engine asks of each standard policy: the hooks of its state
 * machine, and nothing of how a call is run. The policies implement them;
 * the engine ({@link StandardPipeline}) composes them, so the meaning of a
 * call through several policies, or through one policy's `execute`, is
 * written once.
 */

/** What a bulkhead's `tryEnter` returns when every permit is taken. */
export const NO_PERMIT = -1;

/** A circuit breaker's hooks: a permission per attempt, and the attempt's outcome recorded under the epoch it started in. */
export interface BreakerLayer {
  readonly name: string;
  /** The epoch a call permitted now belongs to. */
  readonly callEpoch: number;
  /** Asks for permission to make one attempt (counted and published when refused). */
  tryAcquirePermission(): boolean;
  /** The error for an attempt that was refused. */
  notPermittedError(): Error;
  /**
   * Records a permitted attempt's outcome; a cancellation records nothing
   * and gives the permission back. Throws what a throwing `recordResult` threw.
   */
  recordCall(epoch: number, start: number, failed: boolean, outcome: unknown, end?: number, now?: number): void;
}

/** A rate limiter's hooks: a permit now, or a wait for a reserved one; the outcome offered to `drainPermissionsOnResult`. */
export interface RateLimiterLayer {
  readonly name: string;
  /** It has a `drainPermissionsOnResult` to offer each permitted attempt's outcome to (read per attempt: it may be reconfigured). */
  readonly drains: boolean;
  /** Takes a free permit of the period `now` falls in, without waiting. */
  tryAcquire(now: number): boolean;
  /** Resolves once a reserved permit is granted; rejects with the refusal or the caller's cancellation. */
  waitForPermission(): Promise<void>;
  /** Gives back the permit of an attempt that ended with no outcome. */
  releasePermit(): void;
  /** Offers a permitted attempt's outcome to `drainPermissionsOnResult`. */
  drainIfNeeded(failed: boolean, value: unknown): void;
}

/** A bulkhead's hooks: a permit without waiting, its return, and the queued path. */
export interface BulkheadLayer {
  readonly name: string;
  /** Takes a free permit; {@link NO_PERMIT} when every permit is taken. */
  tryEnter(): number;
  /** Gives back the permit `tryEnter` returned. */
  exit(started: number): void;
  /** Runs `next(arg)` once the queue hands it a permit, and gives the permit back when it settles. */
  callQueued<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R>;
}

/** A retry's hooks: what follows a first attempt that failed or returned. */
export interface RetryLayer {
  readonly name: string;
  /** Retries after `error` (waiting, then calling `next(arg)` again), or throws the error the call ends with. */
  continueAfterError<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: number, error: unknown): Promise<R>;
  /** Returns `result`, or retries it when `retryOnResult` asks to. */
  continueAfterResult<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: number, result: R): R | Promise<R>;
}

/** A fallback's hooks: the answer for a failed call, and the count of calls for the fallback share. */
export interface FallbackLayer {
  readonly name: string;
  /** What the handler declared for `error`'s class answers, or `error` rethrown. */
  recover(args: unknown[], error: unknown): unknown;
  /** Counts one call of the guarded method or pipeline. */
  countCall(): void;
}

/** A time limiter's hooks: what its attempts ask of it, and the start of an attempt under it. */
export interface TimeLimiterLayer extends AttemptLimiter {
  readonly name: string;
  /** True when an attempt now, under `parent`, would fail at once. */
  refusesAtOnce(parent: ResilienceContext | undefined): boolean;
  /** Starts `next(arg)` as `attempt`, at clock reading `now`, under `parent`. */
  begin<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    attempt: TimedAttempt,
    now: number,
    parent: ResilienceContext | undefined,
  ): Promise<unknown>;
}

/** The standard layers of one composition; any may be absent. */
export interface StandardLayers {
  readonly fallback?: FallbackLayer;
  readonly retry?: RetryLayer;
  readonly circuitBreaker?: BreakerLayer;
  readonly rateLimiter?: RateLimiterLayer;
  readonly timeLimiter?: TimeLimiterLayer;
  readonly bulkhead?: BulkheadLayer;
}

/** The standard layers, outermost first: the nesting the engine runs them in. */
export const STANDARD_ORDER = [
  'fallback',
  'retry',
  'circuitBreaker',
  'rateLimiter',
  'timeLimiter',
  'bulkhead',
] as const satisfies readonly (keyof StandardLayers)[];

/** A standard layer's kind. */
export type StandardKind = (typeof STANDARD_ORDER)[number];
