import { Clock } from '../clock';
import { contextStorage } from '../context';
import { ErrorMatcher } from '../error-matcher';
import { retryAfterOf } from '../error-status';
import { MaxRetriesExceededError } from '../errors';
import { EventStream } from '../events';
import { invokeThunk, Policy } from '../policy';
import { backoffDelay } from './backoff';
import { RetryBudget } from './retry-budget';
import { RetryConfig } from './retry.config';
import { isRetryableByDefault } from './retryable';

/** A retry is about to wait and try again. */
export interface RetryEvent {
  readonly name: string;
  /** The attempt that just failed (1-based). */
  readonly attempt: number;
  /** The wait before the next attempt, in ms. */
  readonly waitMs: number;
  /** The error of the failed attempt, or `undefined` when a result was retried. */
  readonly error: unknown;
}

/** A call ended; `attempts` counts every attempt made. */
export interface RetryOutcomeEvent {
  readonly name: string;
  readonly attempts: number;
  readonly error?: unknown;
}

/** Why a failed attempt was not retried. */
export type RetryStopReason = 'not-retryable' | 'max-attempts' | 'budget' | 'deadline' | 'retry-after-too-long';

/** A failed attempt that will not be retried, and why. */
export interface RetryStoppedEvent {
  readonly name: string;
  readonly attempt: number;
  readonly reason: RetryStopReason;
  readonly error: unknown;
}

/** Counters of a retry instance, as Resilience4j's `Retry.Metrics`, plus budget denials. */
export interface RetryMetrics {
  successfulCallsWithoutRetry: number;
  successfulCallsWithRetry: number;
  failedCallsWithoutRetry: number;
  failedCallsWithRetry: number;
  budgetDenied: number;
}

const NO_RETRY = -1;

/**
 * Retries a failing call with backoff and jitter, within an optional retry
 * budget and never past the request deadline. After the last attempt the
 * original error propagates, not a wrapper.
 */
export class RetryPolicy implements Policy {
  private readonly retryMatcher: ErrorMatcher;
  private readonly ignoreMatcher: ErrorMatcher;
  private readonly budget?: RetryBudget;
  private readonly counters: RetryMetrics = {
    successfulCallsWithoutRetry: 0,
    successfulCallsWithRetry: 0,
    failedCallsWithoutRetry: 0,
    failedCallsWithRetry: 0,
    budgetDenied: 0,
  };
  private readonly retryStream = new EventStream<RetryEvent>();
  private readonly successStream = new EventStream<RetryOutcomeEvent>();
  private readonly errorStream = new EventStream<RetryOutcomeEvent>();
  private readonly stoppedStream = new EventStream<RetryStoppedEvent>();

  /** Before each retry's wait. */
  readonly onRetry = this.retryStream.subscribe;
  /** A call succeeded (after any number of attempts). */
  readonly onSuccess = this.successStream.subscribe;
  /** A call failed for good; the event carries the error that propagates. */
  readonly onError = this.errorStream.subscribe;
  /** A failed attempt was not retried (not retryable, attempts spent, budget, deadline). */
  readonly onRetryStopped = this.stoppedStream.subscribe;

  /**
   * @param name instance name
   * @param config resolved settings
   * @param clock time source for waits and deadlines
   * @param random uniform [0, 1) source for jitter
   */
  constructor(
    readonly name: string,
    readonly config: RetryConfig,
    private readonly clock: Clock,
    private readonly random: () => number = Math.random,
  ) {
    this.retryMatcher = new ErrorMatcher(config.retryExceptions);
    this.ignoreMatcher = new ErrorMatcher(config.ignoreExceptions);
    this.budget = config.budget ? new RetryBudget(config.budget) : undefined;
  }

  /** A snapshot of the counters. */
  get metrics(): RetryMetrics {
    return { ...this.counters };
  }

  /** Tokens left in the retry budget; `undefined` without a budget. */
  get budgetTokens(): number | undefined {
    return this.budget?.tokens;
  }

  /** True when `error` would be retried (attempts, budget and deadline aside). */
  isRetryable(error: unknown): boolean {
    if (this.ignoreMatcher.matches(error)) return false;
    return this.retryMatcher.matches(error) || isRetryableByDefault(error);
  }

  /** Runs `fn` with retries. */
  execute<R>(fn: () => R | PromiseLike<R>): Promise<R> {
    return this.call(invokeThunk, fn) as Promise<R>;
  }

  /** Runs `next(arg)` with retries. */
  async call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    let result: R;
    try {
      result = await next(arg);
    } catch (error) {
      return this.continueAfterError(next, arg, 1, error);
    }
    return this.continueAfterResult(next, arg, 1, result);
  }

  /**
   * Continues a call whose attempt `attempt` threw `error`: retries it
   * (waiting, then calling `next(arg)` again) or throws the original error.
   * Lets a composed pipeline run the first attempt itself.
   */
  continueAfterError<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: number, error: unknown): Promise<R> {
    const wait = this.waitBeforeRetry(error, attempt, this.config.waitDuration);
    if (wait === NO_RETRY) throw this.failed(error, attempt);
    return this.retryLoop(next, arg, attempt + 1, wait);
  }

  /**
   * Continues a call whose attempt `attempt` returned `result`: returns it
   * (counting the success), or retries it when `retryOnResult` asks to.
   */
  continueAfterResult<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: number, result: R): R | Promise<R> {
    // Stryker disable next-line ConditionalExpression: without retryOnResult, waitForResult answers NO_RETRY too; this is the fast path
    if (this.config.retryOnResult === undefined) return this.succeeded(result, attempt);
    const wait = this.waitForResult(result, attempt, this.config.waitDuration);
    return wait === NO_RETRY ? this.succeeded(result, attempt) : this.retryLoop(next, arg, attempt + 1, wait);
  }

  private async retryLoop<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: number, wait: number): Promise<R> {
    for (; ; attempt++) {
      await this.sleep(wait);
      let result: R;
      try {
        result = await next(arg);
      } catch (error) {
        wait = this.waitBeforeRetry(error, attempt, wait);
        if (wait === NO_RETRY) throw this.failed(error, attempt);
        continue;
      }
      // Stryker disable next-line ConditionalExpression: without retryOnResult, waitForResult answers NO_RETRY too; this is the fast path
      if (this.config.retryOnResult === undefined) return this.succeeded(result, attempt);
      wait = this.waitForResult(result, attempt, wait);
      if (wait === NO_RETRY) return this.succeeded(result, attempt);
    }
  }

  /** The wait before retrying a returned value, or NO_RETRY; throws when attempts run out and `failAfterMaxAttempts`. */
  private waitForResult(result: unknown, attempt: number, previousWait: number): number {
    if (!this.config.retryOnResult?.(result)) return NO_RETRY;
    if (attempt < this.config.maxAttempts) {
      const wait = this.admitRetry(undefined, attempt, backoffDelay(this.config, attempt, previousWait, this.random));
      if (wait !== NO_RETRY) return wait;
    }
    if (this.config.failAfterMaxAttempts) throw this.failed(new MaxRetriesExceededError(this.name, attempt, result), attempt);
    return NO_RETRY;
  }

  private succeeded<R>(result: R, attempts: number): R {
    this.budget?.onSuccess();
    if (attempts === 1) this.counters.successfulCallsWithoutRetry++;
    else this.counters.successfulCallsWithRetry++;
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.successStream.active) this.successStream.emit({ name: this.name, attempts });
    return result;
  }

  private failed(error: unknown, attempts: number): unknown {
    if (attempts === 1) this.counters.failedCallsWithoutRetry++;
    else this.counters.failedCallsWithRetry++;
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.errorStream.active) this.errorStream.emit({ name: this.name, attempts, error });
    return error;
  }

  /** The wait before retrying after a thrown error, or NO_RETRY. */
  private waitBeforeRetry(error: unknown, attempt: number, previousWait: number): number {
    if (!this.isRetryable(error)) return this.stop('not-retryable', attempt, error);
    if (attempt >= this.config.maxAttempts) return this.stop('max-attempts', attempt, error);
    let wait = backoffDelay(this.config, attempt, previousWait, this.random);
    const retryAfter = retryAfterOf(error);
    if (retryAfter !== undefined) {
      if (retryAfter > this.config.retryAfterMaxWait) return this.stop('retry-after-too-long', attempt, error);
      // Stryker disable next-line EqualityOperator: when equal, either branch waits the same
      if (retryAfter > wait) wait = retryAfter;
    }
    return this.admitRetry(error, attempt, wait);
  }

  /** Checks the deadline, then the budget (last, so no token is spent on a retry that will not happen). */
  private admitRetry(error: unknown, attempt: number, wait: number): number {
    const scope = contextStorage.getStore();
    if (scope !== undefined && (scope.aborted || wait >= scope.remaining())) return this.stop('deadline', attempt, error);
    if (this.budget !== undefined && !this.budget.tryWithdraw()) {
      this.counters.budgetDenied++;
      return this.stop('budget', attempt, error);
    }
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.retryStream.active) this.retryStream.emit({ name: this.name, attempt, waitMs: wait, error });
    return wait;
  }

  private stop(reason: RetryStopReason, attempt: number, error: unknown): number {
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.stoppedStream.active) this.stoppedStream.emit({ name: this.name, attempt, reason, error });
    return NO_RETRY;
  }

  private sleep(ms: number): Promise<void> {
    return ms <= 0 ? Promise.resolve() : new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }
}
