import { Observable, Observer, Subscriber, Subscription, TeardownLogic, Unsubscribable } from 'rxjs';
import { Clock, TimerHandle } from '../../kernel/clock';
import { isCancellation } from '../../kernel/cancellation';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { refusal } from '../../kernel/refusal';
import type { AttemptLimiter, TimedEntry } from '../timed-attempt';

/** @internal What a time-limited subscription asks of its time limiter (the policy, without a cycle back to it). */
export interface TimeLimitedSource {
  readonly config: AttemptLimiter['config'];
  readonly clock: Clock;
  attemptLimit(parent: ResilienceContext | undefined, now: number): number;
  enqueue(entry: TimedEntry, limit: number): void;
  timesApart(limit: number, deadline: number): boolean;
  settled(): void;
  timedOut(byDeadline: boolean, limit: number): Error;
  finished(error: unknown, failed: boolean): void;
}

/** @internal `upstream` with each subscription under a time limiter; see {@link TimeLimiter.observe}. */
export class TimeLimitedObservable<T> extends Observable<T> {
  constructor(
    readonly limiter: TimeLimitedSource,
    readonly upstream: Observable<T>,
  ) {
    super(subscribeLimited);
  }
}

function subscribeLimited<T>(this: Observable<T>, subscriber: Subscriber<T>): TeardownLogic {
  const self = this as TimeLimitedObservable<T>;
  return new LimitedSubscription(self.limiter, subscriber).start(self.upstream);
}

function subscribeIn<T>(upstream: Observable<T>, observer: Observer<T>): Subscription {
  return upstream.subscribe(observer);
}

/**
 * One subscription racing its time limit. A value moves the scope's
 * deadline; the timer is not re-armed then but when it fires and finds the
 * deadline moved, so a one-value source costs no timer of its own.
 */
class LimitedSubscription<T> implements Observer<T>, Unsubscribable, TimedEntry {
  deadline = 0;
  settled = false;
  private scope?: ResilienceContext;
  private inner?: Subscription;
  private timer: TimerHandle;
  // Stryker disable next-line BooleanLiteral: trimming the queue only frees memory
  private queued = false;
  private gapStart = 0;
  /** A value came in time: a subscriber leaving after it (as `firstValueFrom` does) ends a successful call. */
  private answered = false;

  constructor(
    private readonly limiter: TimeLimitedSource,
    private readonly downstream: Subscriber<T>,
  ) {}

  start(upstream: Observable<T>): Unsubscribable {
    const limiter = this.limiter;
    const parent = contextStorage.getStore();
    const now = limiter.clock.now();
    const limit = limiter.attemptLimit(parent, now);
    if (limit < 0) {
      // Stryker disable next-line BooleanLiteral: the subscriber is errored; finishing again clears nothing
      this.settled = true;
      this.downstream.error(refusal(limiter.timedOut(true, limiter.config.timeoutDuration)));
      return this;
    }
    const scope = ResilienceContext.forAttempt(limiter.clock, now + limit, parent);
    this.scope = scope;
    this.deadline = scope.deadline;
    this.gapStart = now;
    if (limiter.timesApart(limit, now + limit)) this.arm(limit);
    else {
      // Stryker disable next-line BooleanLiteral: trimming the queue only frees memory
      this.queued = true;
      limiter.enqueue(this, limit);
    }
    const inner = contextStorage.run(scope, subscribeIn, upstream, this as Observer<T>);
    // Stryker disable next-line ConditionalExpression: rxjs has torn down a source that ended while subscribing
    if (this.settled) inner.unsubscribe();
    else this.inner = inner;
    return this;
  }

  next(value: T): void {
    // Stryker disable next-line ConditionalExpression: a settled subscription's source is closed
    if (this.settled) return;
    const now = this.limiter.clock.now();
    const scope = this.scope as ResilienceContext;
    const limit = this.limiter.attemptLimit(scope.parent, now);
    // Stryker disable next-line EqualityOperator: limit 0 means timeoutDuration 0: values then come only at the start
    if (limit >= 0) {
      scope.deadline = now + limit;
      this.gapStart = now;
    }
    this.answered = true;
    this.downstream.next(value);
  }

  error(error: unknown): void {
    // Stryker disable next-line ConditionalExpression: a settled subscription's source is closed
    if (this.settled) return;
    const scope = this.scope as ResilienceContext;
    // A cancellation at the subscription's own limit (the request deadline it was cut to, most often) is that limit
    // passing, whichever timer of the instant fired first, as for a promise attempt.
    if (isCancellation(error, scope)) {
      const now = this.limiter.clock.now();
      if (now >= scope.deadline) {
        this.timeOut(scope, now);
        return;
      }
    }
    this.finish();
    this.limiter.finished(error, true);
    this.downstream.error(error);
  }

  complete(): void {
    // Stryker disable next-line ConditionalExpression: a settled subscription's source is closed
    if (this.settled) return;
    this.finish();
    this.limiter.finished(undefined, false);
    this.downstream.complete();
  }

  unsubscribe(): void {
    // Stryker disable next-line ConditionalExpression: finishing again clears nothing and the source is closed
    if (this.settled) return;
    this.finish();
    // Stryker disable next-line OptionalChaining: the inner subscription is set before its teardown can run
    this.inner?.unsubscribe();
    if (this.answered) this.limiter.finished(undefined, false);
  }

  /** A subscription is queued again for each gap between values: leaving the queue ends nothing. */
  dequeued(): void {}

  expire(): void {
    // Stryker disable next-line ConditionalExpression: the queue skips settled entries; finish() clears an own timer
    if (this.settled) return;
    const scope = this.scope as ResilienceContext;
    const now = this.limiter.clock.now();
    // A value came since the timer was armed: wait for the rest of the new gap.
    if (scope.deadline > now) {
      this.arm(scope.deadline - now);
      return;
    }
    this.timeOut(scope, now);
  }

  /** Ends the subscription with the limiter's timeout: its limit has passed (`now` is the clock reading that saw it). */
  private timeOut(scope: ResilienceContext, now: number): void {
    this.finish();
    const parent = scope.parent;
    const byDeadline = parent !== undefined && parent.deadline <= now;
    const error = this.limiter.timedOut(byDeadline, scope.deadline - this.gapStart);
    if (this.limiter.config.cancelRunningFuture) scope.abort(error);
    // Stryker disable next-line OptionalChaining: the inner subscription is set before any timer runs
    this.inner?.unsubscribe();
    this.downstream.error(error);
  }

  private arm(ms: number): void {
    this.timer = this.limiter.clock.setTimeout(() => {
      this.timer = undefined;
      this.expire();
    }, ms);
  }

  private finish(): void {
    this.settled = true;
    // Stryker disable next-line ConditionalExpression: clearing no timer does nothing
    if (this.timer !== undefined) this.limiter.clock.clearTimeout(this.timer);
    // Stryker disable next-line ConditionalExpression: trimming the queue only frees memory
    if (this.queued) this.limiter.settled();
  }
}
