import { Clock } from '../../kernel/clock';
import { EventTap, InstanceSnapshot, onEither, SpanEventSink, tapStream, TelemetryLog } from '../../kernel/telemetry';
import { BUDGET_EXHAUSTED, BUDGET_RECOVERED } from './retry.messages';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
import { Observable } from 'rxjs';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { ErrorMatcher } from '../../config/error-matcher';
import { retryAfterOf } from '../../kernel/error-status';
import { MaxRetriesExceededError } from '../../kernel/errors';
import { EventStream, EventSubscriber, Unsubscribe } from '../../kernel/events';
import { changedSettings, ConfigChangedEvent, publishConfigChange } from '../../kernel/config-change';
import { AttemptFunction } from '../../kernel/policy';
import { executeThrough, soloPipeline } from '../../engine/execute';
import { Pipeline } from '../../decorators/return-kind';
import { callerAbortError, ExecuteOptions, isCancellation } from '../../kernel/cancellation';
import { neverReached, withRefusalCause } from '../../kernel/refusal';
import { backoffDelay } from './backoff';
import { RetryBudget } from '../../kernel/retry-budget';
import { RetryConfig } from './retry.config';
import { isRetryableByDefault } from './retryable';
import { CANCELLED, NO_RETRY, RetriedObservable } from '../../engine/observable/retry.operator';
import type {
  RetryAttemptEvent,
  RetryEvent,
  RetryOutcomeEvent,
  RetryStopReason,
  RetryStoppedEvent,
} from './retry.events';

/** Counters of a retry instance, as Resilience4j's `Retry.Metrics`, plus budget denials. */
export interface RetryMetrics {
  /** Calls that succeeded on the first attempt. */
  successfulCallsWithoutRetry: number;
  /** Calls that succeeded after one or more retries. */
  successfulCallsWithRetry: number;
  /** Calls that failed on the first attempt and were not retried. */
  failedCallsWithoutRetry: number;
  /** Calls that failed after one or more retries. */
  failedCallsWithRetry: number;
  /** Retries the retry budget refused. */
  budgetDenied: number;
}

/** No attempt of the call has reached the method yet. */
const NOTHING_REACHED = Symbol('nothing reached');

/**
 * Retries a failing call with backoff and jitter, within an optional retry
 * budget and never past the request deadline. After the last attempt the
 * original error propagates, not a wrapper.
 */
export class RetryPolicy {
  private settings: RetryConfig;
  private retryMatcher: ErrorMatcher;
  private ignoreMatcher: ErrorMatcher;
  private budget?: RetryBudget;
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
  private readonly attemptStream = new EventStream<RetryAttemptEvent>();
  private readonly configStream = new EventStream<ConfigChangedEvent<RetryConfig>>();

  /** Before each retry's wait. */
  readonly onRetry = this.retryStream.subscribe;
  /** A call succeeded (after any number of attempts). */
  readonly onSuccess = this.successStream.subscribe;
  /**
   * A call failed for good; the event carries the error that propagates, or
   * a `MaxRetriesExceededError` when `retryOnResult` still rejected the last value.
   */
  readonly onError = this.errorStream.subscribe;
  /** A failed attempt was not retried (not retryable, attempts spent, budget, deadline). */
  readonly onRetryStopped = this.stoppedStream.subscribe;
  /** A retry's attempt starts, after its wait. */
  readonly onAttempt = this.attemptStream.subscribe;
  /** Fires when its settings change (`CONFIG_CHANGED`). */
  readonly onConfigChanged: EventSubscriber<ConfigChangedEvent<RetryConfig>> = this.configStream.subscribe;

  /**
   * @param name - instance name
   * @param config - resolved settings
   * @param clock - time source for waits and deadlines
   * @param random - uniform [0, 1) source for jitter
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    config: RetryConfig,
    /** The time source for waits and deadlines. */
    readonly clock: Clock,
    private readonly random: () => number = Math.random,
    /** The key this instance serves, for an instance used per key (`key` on a decorator, `{ key }` on a registry getter); else undefined. */
    readonly key?: string,
  ) {
    this.settings = config;
    this.retryMatcher = new ErrorMatcher(config.retryExceptions);
    this.ignoreMatcher = new ErrorMatcher(config.ignoreExceptions);
    this.budget = config.budget ? new RetryBudget(config.budget) : undefined;
  }

  /** The resolved settings (durations in ms). */
  get config(): RetryConfig {
    return this.settings;
  }

  /**
   * @internal Runs with `config` from calls that start now on (a call
   * already retrying goes on under the settings it started with, read per
   * attempt). The retry budget keeps its tokens (down to a lower
   * `maxTokens`); one given anew starts half full. Publishes `CONFIG_CHANGED`; returns
   * its event, or undefined when nothing differs.
   */
  reconfigure(config: RetryConfig): ConfigChangedEvent<RetryConfig> | undefined {
    const before = this.settings;
    const changed = changedSettings(before, config);
    if (changed.length === 0) return undefined;
    this.settings = config;
    this.retryMatcher = new ErrorMatcher(config.retryExceptions);
    this.ignoreMatcher = new ErrorMatcher(config.ignoreExceptions);
    // The budget keeps its tokens, and stays the one object hedges sharing it draw from.
    if (config.budget === undefined) this.budget = undefined;
    else if (this.budget === undefined) this.budget = new RetryBudget(config.budget);
    else this.budget.reconfigure(config.budget);
    return publishConfigChange(this.configStream, 'retry', this, before, config, changed);
  }

  /** A snapshot of the counters. */
  get metrics(): RetryMetrics {
    return { ...this.counters };
  }

  /** Tokens left in the retry budget; `undefined` without a budget. */
  get budgetTokens(): number | undefined {
    return this.budget?.tokens;
  }

  /** @internal The retry budget itself, for hedges that draw from it; `undefined` without a budget. */
  get retryBudget(): RetryBudget | undefined {
    return this.budget;
  }

  /** True when `error` would be retried (attempts, budget and deadline aside). */
  isRetryable(error: unknown): boolean {
    if (this.ignoreMatcher.matches(error)) return false;
    if (this.config.exceptionRules === 'resilience4j')
      return this.retryMatcher.empty || this.retryMatcher.matches(error);
    return this.retryMatcher.matches(error) || isRetryableByDefault(error);
  }

  /** @internal Its events on the telemetry channel, under Resilience4j's event type names. */
  tapEvents(tap: EventTap): Unsubscribe[] {
    const into: Unsubscribe[] = [];
    tapStream(into, tap, 'RETRY', this.onRetry);
    tapStream(into, tap, 'SUCCESS', this.onSuccess);
    tapStream(into, tap, 'ERROR', this.onError);
    tapStream(into, tap, 'CONFIG_CHANGED', this.onConfigChanged);
    const stopped = tap('RETRY_STOPPED');
    // Running out of attempts is followed by ERROR anyway; the other reasons say why a retry did not happen.
    if (stopped !== undefined)
      into.push(this.onRetryStopped((event) => event.reason !== 'max-attempts' && stopped(event)));
    return into;
  }

  /** @internal Its settings and counters (with the budget's tokens), for the status endpoints. */
  snapshot(): InstanceSnapshot {
    return { config: this.config, metrics: { ...this.metrics, budgetTokens: this.budgetTokens } };
  }

  /** @internal Its span events: each attempt after the first, each retry, and why a failed attempt was not retried. */
  traceEvents(trace: SpanEventSink): Unsubscribe[] {
    return [
      this.onAttempt(({ name, attempt }) =>
        trace.event(E.attempt, { [A.policy]: 'retry', [A.instance]: name, [A.attemptNumber]: attempt }),
      ),
      this.onRetry(({ name, attempt, waitMs, error }) =>
        trace.failure(
          E.retry,
          { [A.policy]: 'retry', [A.instance]: name, [A.attemptNumber]: attempt, [A.retryWaitMs]: waitMs },
          error,
        ),
      ),
      this.onRetryStopped(({ name, attempt, reason, error }) =>
        trace.failure(
          E.retryStopped,
          { [A.policy]: 'retry', [A.instance]: name, [A.attemptNumber]: attempt, [A.retryStopReason]: reason },
          error,
        ),
      ),
    ];
  }

  /** @internal What it logs: the start and end of each episode of retry-budget denials (with a budget). */
  logEvents(log: TelemetryLog): Unsubscribe[] {
    if (this.config.budget === undefined) return [];
    const denied = log.episode<void>(
      (onActivity) => onEither(this.onSuccess, this.onError, onActivity),
      () => log.warn(BUDGET_EXHAUSTED(this.name)),
      (count, ms) => log.log(BUDGET_RECOVERED(this.name, count, ms)),
    );
    return [this.onRetryStopped((event) => event.reason === 'budget' && denied())];
  }

  /** The engine over this policy alone, made on the first `execute`. */
  private solo: Pipeline | undefined;

  /**
   * Runs `fn` with retries. `fn` receives the attempt's signal; `options.signal` lets a caller
   * outside any request scope cancel the call.
   */
  execute<R>(fn: AttemptFunction<R>, options?: ExecuteOptions): Promise<R> {
    return executeThrough((this.solo ??= soloPipeline({ retry: this }, this.clock)), this.clock, fn, options);
  }

  /**
   * @internal Runs each subscription of `source` with retries: an error (or a value
   * `retryOnResult` rejects) re-subscribes `source` after the backoff, within
   * the budget and the deadline, as for a call; values already emitted may
   * be emitted again by the next attempt.
   */
  observe<T>(source: Observable<T>): Observable<T> {
    return new RetriedObservable(this, source);
  }

  /**
   * @internal Continues a call whose attempt `attempt` threw `error`: retries it
   * (waiting, then calling `next(arg)` again) or throws the original error.
   * Lets a composed pipeline run the first attempt itself.
   */
  continueAfterError<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: number, error: unknown): Promise<R> {
    // A cancelled attempt has no outcome: no retry, and the call is not counted.
    if (isCancellation(error)) throw error;
    const wait = this.waitBeforeRetry(error, attempt, this.config.waitDuration);
    if (wait === CANCELLED) throw this.cancelled(attempt, neverReached(error) ? NOTHING_REACHED : error, false);
    if (wait === NO_RETRY) throw this.failed(error, attempt);
    return this.retryLoop(next, arg, attempt + 1, wait, neverReached(error) ? NOTHING_REACHED : error, false);
  }

  /**
   * @internal Continues a call whose attempt `attempt` returned `result`: returns it
   * (counting the success), or retries it when `retryOnResult` asks to; a
   * value it still rejects when no retry may follow counts as a failure.
   */
  continueAfterResult<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: number, result: R): R | Promise<R> {
    if (!this.retriesResult(result, attempt)) return this.succeeded(result, attempt);
    const wait = this.waitForResult(attempt, this.config.waitDuration);
    if (wait === CANCELLED) throw this.cancelled(attempt, NOTHING_REACHED, false);
    return wait === NO_RETRY
      ? this.exhausted(result, attempt)
      : this.retryLoop(next, arg, attempt + 1, wait, result, true);
  }

  /**
   * Attempts `attempt` and on. `reached` is the outcome of the latest attempt
   * that reached the method (an error, or a result when `reachedResult`), or
   * NOTHING_REACHED: a refusal ending the call must not hide it.
   */
  private async retryLoop<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    attempt: number,
    wait: number,
    reached: unknown,
    reachedResult: boolean,
  ): Promise<R> {
    for (; ; attempt++) {
      const scope = contextStorage.getStore();
      await this.sleep(wait, scope);
      // The caller cancelled during the wait: no attempt follows.
      if (scope?.aborted === true) throw this.cancelled(attempt - 1, reached, reachedResult);
      // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
      if (this.attemptStream.active) this.attemptStream.emit({ name: this.name, key: this.key, attempt });
      let result: R;
      try {
        result = await next(arg);
      } catch (error) {
        if (isCancellation(error)) throw this.cancelled(attempt, reached, reachedResult, error);
        const refused = neverReached(error);
        wait = this.waitBeforeRetry(error, attempt, wait);
        if (wait === CANCELLED) throw this.cancelled(attempt, refused ? reached : error, refused && reachedResult);
        if (wait === NO_RETRY) {
          if (refused && reached !== NOTHING_REACHED)
            return this.endAfterRefusal(reached, reachedResult, error, attempt);
          throw this.failed(error, attempt);
        }
        if (!refused) {
          reached = error;
          reachedResult = false;
        }
        continue;
      }
      if (!this.retriesResult(result, attempt)) return this.succeeded(result, attempt);
      wait = this.waitForResult(attempt, wait);
      if (wait === CANCELLED) throw this.cancelled(attempt, reached, reachedResult);
      if (wait === NO_RETRY) return this.exhausted(result, attempt);
      reached = result;
      reachedResult = true;
    }
  }

  /**
   * Ends a call whose caller cancelled after `attempts` attempts: with the
   * error of the latest attempt that reached the method, when it failed
   * (`reached`, unless that was a result; the call counts as failed), else
   * with `cancellation` (the attempt's own) or the caller's `AbortError`,
   * and the call is not counted.
   */
  private cancelled(attempts: number, reached: unknown, reachedResult: boolean, cancellation?: unknown): unknown {
    if (reached !== NOTHING_REACHED && !reachedResult) return this.failed(reached, attempts);
    return cancellation ?? callerAbortError(contextStorage.getStore()?.caller?.reason);
  }

  /** @internal Whether `retryOnResult` asks to retry `result`; when it throws, the call ends with its error, counted as failed. */
  retriesResult(result: unknown, attempt: number): boolean {
    const retryOnResult = this.config.retryOnResult;
    if (retryOnResult === undefined) return false;
    try {
      return retryOnResult(result);
    } catch (predicateError) {
      throw this.failed(predicateError, attempt);
    }
  }

  /**
   * Ends a call whose last attempt was refused after an earlier one reached
   * the method: that attempt's outcome stands, as if it had been the last
   * (its error, with the refusal as `cause`; or its result, as when retries
   * on a result run out).
   *
   * @internal
   */
  endAfterRefusal<R>(reached: unknown, reachedResult: boolean, refused: unknown, attempt: number): R {
    if (!reachedResult) throw this.failed(withRefusalCause(reached, refused), attempt);
    const error = this.failed(
      withRefusalCause(new MaxRetriesExceededError(this.name, attempt, reached), refused),
      attempt,
    );
    if (this.config.failAfterMaxAttempts) throw error;
    return reached as R;
  }

  /**
   * @internal The wait before retrying a value `retryOnResult` asked to
   * retry, NO_RETRY, or CANCELLED. `scope` is the caller's deadline scope.
   */
  waitForResult(attempt: number, previousWait: number, scope = contextStorage.getStore()): number {
    if (attempt >= this.config.maxAttempts) return NO_RETRY;
    return this.admitRetry(undefined, attempt, backoffDelay(this.config, attempt, previousWait, this.random), scope);
  }

  /**
   * @internal A value `retryOnResult` still rejects and no retry follows: the
   * call failed, as Resilience4j counts and publishes it. The value is
   * returned, or `MaxRetriesExceededError` thrown with `failAfterMaxAttempts`.
   */
  exhausted<R>(result: R, attempts: number): R {
    const error = this.failed(new MaxRetriesExceededError(this.name, attempts, result), attempts);
    if (this.config.failAfterMaxAttempts) throw error;
    return result;
  }

  /** @internal Counts a call that succeeded after `attempts` attempts. */
  succeeded<R>(result: R, attempts: number): R {
    this.budget?.onSuccess();
    if (attempts === 1) this.counters.successfulCallsWithoutRetry++;
    else this.counters.successfulCallsWithRetry++;
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.successStream.active) this.successStream.emit({ name: this.name, key: this.key, attempts });
    return result;
  }

  /** @internal Counts a call that failed for good after `attempts` attempts; returns `error`. */
  failed(error: unknown, attempts: number): unknown {
    if (attempts === 1) this.counters.failedCallsWithoutRetry++;
    else this.counters.failedCallsWithRetry++;
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.errorStream.active) this.errorStream.emit({ name: this.name, key: this.key, attempts, error });
    return error;
  }

  /** @internal The wait before retrying after `error`, NO_RETRY, or CANCELLED. `scope` is the caller's deadline scope. */
  waitBeforeRetry(error: unknown, attempt: number, previousWait: number, scope = contextStorage.getStore()): number {
    if (!this.isRetryable(error)) return this.stop('not-retryable', attempt, error);
    if (attempt >= this.config.maxAttempts) return this.stop('max-attempts', attempt, error);
    let wait = backoffDelay(this.config, attempt, previousWait, this.random);
    const retryAfter = retryAfterOf(error);
    if (retryAfter !== undefined) {
      if (retryAfter > this.config.retryAfterMaxWait) return this.stop('retry-after-too-long', attempt, error);
      // Stryker disable next-line EqualityOperator: when equal, either branch waits the same
      if (retryAfter > wait) wait = retryAfter;
    }
    return this.admitRetry(error, attempt, wait, scope);
  }

  /** Checks the deadline, then the budget (last, so no token is spent on a retry that will not happen). */
  private admitRetry(error: unknown, attempt: number, wait: number, scope: ResilienceContext | undefined): number {
    if (scope !== undefined && scope.aborted) {
      this.stop('deadline', attempt, error);
      // A retry would follow, but the caller cancelled: the call ends with its abort, as at a wait.
      return CANCELLED;
    }
    if (scope !== undefined && wait >= scope.remaining()) return this.stop('deadline', attempt, error);
    if (this.budget !== undefined && !this.budget.tryWithdraw()) {
      this.counters.budgetDenied++;
      return this.stop('budget', attempt, error);
    }
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.retryStream.active)
      this.retryStream.emit({ name: this.name, key: this.key, attempt, waitMs: wait, error });
    return wait;
  }

  private stop(reason: RetryStopReason, attempt: number, error: unknown): number {
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.stoppedStream.active) this.stoppedStream.emit({ name: this.name, key: this.key, attempt, reason, error });
    return NO_RETRY;
  }

  /** Waits `ms`, or until the caller's `scope` aborts, whichever comes first. */
  private sleep(ms: number, scope: ResilienceContext | undefined): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    if (scope === undefined) return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
    const signal = scope.signal;
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = this.clock.setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
