import { Observable, Observer, Subscriber, Subscription, TeardownLogic, Unsubscribable } from 'rxjs';
import { Clock, TimerHandle } from '../../kernel/clock';
import { callerAbortError, isCancellation } from '../../kernel/cancellation';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { neverReached } from '../../kernel/refusal';

/** @internal What the wait functions return when no retry follows. */
export const NO_RETRY = -1;

/** @internal What the wait functions return when a retry would follow but the caller cancelled: the call ends with its abort. */
export const CANCELLED = -2;

/** @internal What a retried subscription asks of its retry policy (the policy, without a cycle back to it). */
export interface RetryDecisions {
  readonly config: { readonly waitDuration: number; readonly retryOnResult?: unknown };
  readonly clock: Clock;
  retriesResult(result: unknown, attempt: number): boolean;
  waitForResult(attempt: number, previousWait: number, scope?: ResilienceContext): number;
  waitBeforeRetry(error: unknown, attempt: number, previousWait: number, scope?: ResilienceContext): number;
  exhausted<R>(result: R, attempts: number): R;
  succeeded<R>(result: R, attempts: number): R;
  failed(error: unknown, attempts: number): unknown;
  endAfterRefusal<R>(reached: unknown, reachedResult: boolean, refused: unknown, attempt: number): R;
}

/** No attempt of the subscription has reached the source yet. */
const NOTHING_REACHED = Symbol('nothing reached');

/** @internal `upstream` with each subscription retried; see {@link RetryPolicy.observe}. */
export class RetriedObservable<T> extends Observable<T> {
  constructor(
    readonly policy: RetryDecisions,
    readonly upstream: Observable<T>,
  ) {
    super(subscribeRetried);
  }
}

function subscribeRetried<T>(this: Observable<T>, subscriber: Subscriber<T>): TeardownLogic {
  const self = this as RetriedObservable<T>;
  return new RetriedSubscription(self.policy, self.upstream, subscriber).start();
}

/**
 * One subscription and its attempts. The decisions (what is retryable,
 * backoff, budget, deadline) are the policy's, taken in the subscriber's
 * deadline scope; each attempt re-subscribes `upstream` in that scope.
 */
class RetriedSubscription<T> implements Observer<T>, Unsubscribable {
  private attempt = 1;
  private wait: number;
  private closed = false;
  private emitted = false;
  /** A value ran out of retries and was counted as a failed call. */
  private exhausted = false;
  private inner?: Subscription;
  private timer: TimerHandle;
  /** The outcome of the latest attempt that reached the source: a refusal ending the subscription must not hide it. */
  private reached: unknown = NOTHING_REACHED;
  /** That outcome was a value `retryOnResult` asked to retry, not an error. */
  private reachedResult = false;
  private readonly scope: ResilienceContext | undefined;

  constructor(
    private readonly policy: RetryDecisions,
    private readonly upstream: Observable<T>,
    private readonly downstream: Subscriber<T>,
  ) {
    this.wait = policy.config.waitDuration;
    this.scope = contextStorage.getStore();
  }

  start(): Unsubscribable {
    this.subscribeAttempt();
    return this;
  }

  next(value: T): void {
    if (this.closed) return;
    const retryOnResult = this.policy.config.retryOnResult;
    // Stryker disable next-line ConditionalExpression: without a predicate retriesResult is false
    if (retryOnResult !== undefined && !this.exhausted) {
      try {
        if (this.policy.retriesResult(value, this.attempt)) {
          const wait = this.policy.waitForResult(this.attempt, this.wait, this.scope);
          if (wait === CANCELLED) throw this.cancelled();
          if (wait !== NO_RETRY) {
            this.reached = value;
            this.reachedResult = true;
            this.inner?.unsubscribe();
            this.retryAfter(wait);
            return;
          }
          // Counted as a failed call now; the value still goes out unless failAfterMaxAttempts throws.
          this.policy.exhausted(value, this.attempt);
          this.exhausted = true;
        }
      } catch (error) {
        this.closed = true;
        this.inner?.unsubscribe();
        this.downstream.error(error);
        return;
      }
    }
    this.emitted = true;
    this.downstream.next(value);
  }

  error(error: unknown): void {
    if (this.closed) return;
    if (isCancellation(error, this.scope)) {
      this.closed = true;
      this.downstream.error(this.cancelled(error));
      return;
    }
    const refused = neverReached(error);
    if (!refused) {
      this.reached = error;
      this.reachedResult = false;
    }
    const wait = this.policy.waitBeforeRetry(error, this.attempt, this.wait, this.scope);
    if (wait === CANCELLED) {
      this.closed = true;
      this.downstream.error(this.cancelled());
      return;
    }
    if (wait >= 0) {
      this.retryAfter(wait);
      return;
    }
    this.closed = true;
    if (!refused || this.reached === NOTHING_REACHED) {
      this.downstream.error(this.policy.failed(error, this.attempt));
      return;
    }
    // The attempt that reached the source last stands, as if it had been the last: its error, or its value.
    let value: T;
    try {
      value = this.policy.endAfterRefusal(this.reached, this.reachedResult, error, this.attempt);
    } catch (outcome) {
      this.downstream.error(outcome);
      return;
    }
    this.downstream.next(value);
    this.downstream.complete();
  }

  /**
   * What a subscription its caller cancelled ends with: the error of the
   * latest attempt that reached the source (counted as a failed call), else
   * the attempt's own cancellation or the caller's `AbortError` (not counted).
   */
  private cancelled(cancellation?: unknown): unknown {
    if (this.reached !== NOTHING_REACHED && !this.reachedResult) return this.policy.failed(this.reached, this.attempt);
    return cancellation ?? callerAbortError(this.scope?.caller?.reason);
  }

  /** The caller cancelled during a wait: it ends at once, and no attempt follows. */
  private readonly onCallerAbort = (): void => {
    if (this.closed || this.timer === undefined) return;
    this.policy.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.closed = true;
    this.downstream.error(this.cancelled());
  };

  complete(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.exhausted) this.policy.succeeded(undefined, this.attempt);
    this.downstream.complete();
  }

  /** The subscriber left; after a value (as `firstValueFrom` does) that is a success. */
  unsubscribe(): void {
    if (this.closed) return;
    this.closed = true;
    // Stryker disable next-line ConditionalExpression: clearing no timer does nothing
    if (this.timer !== undefined) this.policy.clock.clearTimeout(this.timer);
    this.scope?.unwatch(this.onCallerAbort);
    this.inner?.unsubscribe();
    if (this.emitted && !this.exhausted) this.policy.succeeded(undefined, this.attempt);
  }

  private retryAfter(wait: number): void {
    this.attempt++;
    this.wait = wait;
    this.inner = undefined;
    if (wait <= 0) {
      // In the subscriber's scope, not that of whatever notified the failure (a time limit's timer, another call's
      // source): the next attempt's limits are the caller's deadline's.
      contextStorage.run(this.scope as ResilienceContext, () => this.subscribeAttempt());
      return;
    }
    this.scope?.watch(this.onCallerAbort);
    this.timer = this.policy.clock.setTimeout(() => {
      this.timer = undefined;
      this.scope?.unwatch(this.onCallerAbort);
      // Stryker disable next-line ConditionalExpression: only unsubscribe closes during a wait; it clears this timer
      if (!this.closed) contextStorage.run(this.scope as ResilienceContext, () => this.subscribeAttempt());
    }, wait);
  }

  private subscribeAttempt(): void {
    const attempt = this.attempt;
    // A synchronous source may go on notifying after a retry was decided: only the current attempt is heard.
    const inner = this.upstream.subscribe({
      next: (value) => attempt === this.attempt && this.next(value),
      error: (error: unknown) => attempt === this.attempt && this.error(error),
      complete: () => attempt === this.attempt && this.complete(),
    });
    // A synchronous source may have been replaced, or left by the subscriber, while subscribing.
    if (attempt === this.attempt && !this.closed) this.inner = inner;
    else inner.unsubscribe();
  }
}
