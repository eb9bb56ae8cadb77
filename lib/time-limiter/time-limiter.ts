import { AsyncLocalStorage } from 'node:async_hooks';
import { Clock, TimerHandle } from '../clock';
import {
  contextStorage,
  DEFAULT_DEADLINE_HEADER,
  policyScope,
  ResilienceContext,
  runAsAttempt,
  ScopeOnDemand,
} from '../context';
import { DeadlineExceededError, TimeoutExceededError } from '../errors';
import { EventStream, Unsubscribe } from '../events';
import { invokeThunk, Policy } from '../policy';
import { isRefusal, refusal } from '../refusal';
import { Observable } from 'rxjs';
import { TimeLimiterConfig } from './time-limiter.config';
import { TimedEntry, TimeLimitedObservable } from './time-limiter.operator';

/**
 * When a time-limited attempt runs in a context of its own (see
 * {@link TimeLimiter.attemptContext}): `'auto'` or `'always'`.
 */
export type AttemptContextMode = 'auto' | 'always';

/** The outcome of one time-limited call. */
export interface TimeLimiterEvent {
  /** The time limiter's name. */
  readonly name: string;
  /** `successful` or `failed` within the limit, or `timeout` (its own limit or the request deadline ran out). */
  readonly kind: 'successful' | 'failed' | 'timeout';
  /** The call's error (`failed`), or a `TimeoutExceededError` / `DeadlineExceededError` (`timeout`). */
  readonly error?: unknown;
}

/**
 * Bounds each call by `min(timeoutDuration, remaining request deadline)`.
 * The call runs in its own context, so `currentSignal()` inside it is the
 * attempt's signal, aborted on timeout when `cancelRunningFuture` is true.
 *
 * Calls limited by `timeoutDuration` alone expire in the order they start,
 * so they share one timer over a FIFO queue instead of arming a timer each;
 * only calls cut short by a request deadline get a timer of their own.
 */
export class TimeLimiter implements Policy {
  private readonly successStream = new EventStream<TimeLimiterEvent>();
  private readonly errorStream = new EventStream<TimeLimiterEvent>();
  private readonly timeoutStream = new EventStream<TimeLimiterEvent>();
  private queue: TimedEntry[] = [];
  private head = 0;
  // undefined while the queue is empty (TimerHandle admits it).
  private queueTimer: TimerHandle;

  /** A call finished in time. */
  readonly onSuccess = this.successStream.subscribe;
  /** A call failed in time. */
  readonly onError = this.errorStream.subscribe;
  /** A call ran out of time (its own limit or the deadline). */
  readonly onTimeout = this.timeoutStream.subscribe;

  private callContextListeners = 0;

  /**
   * @internal Like {@link TimeLimiter.onTimeout}, for a listener that must
   * hear each timeout in the async context of its call (a tracer recording
   * on the call's span): calls capture their context only while one listens,
   * so counting timeouts (metrics, the event journal) costs no capture.
   */
  onTimeoutInCallContext(listener: (event: TimeLimiterEvent) => void): Unsubscribe {
    this.callContextListeners++;
    const unsubscribe = this.timeoutStream.subscribe(listener);
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      this.callContextListeners--;
      unsubscribe();
    };
  }

  /**
   * @param name - instance name
   * @param config - resolved settings
   * @param clock - time source (also used by its attempts)
   * @param attemptContext - `'always'`: every attempt runs in its own context; `'auto'`: only one inside a scope
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    /** The resolved settings (durations in ms). */
    readonly config: TimeLimiterConfig,
    /** The time source for limits and deadlines, also used by its attempts. */
    readonly clock: Clock,
    /**
     * When an attempt runs in its own context (so that `currentSignal()`,
     * `remainingTime()` and `deadlineHeaders()` inside it see the attempt):
     * `'auto'` when it starts inside a request deadline or another scope,
     * `'always'` for every attempt.
     */
    readonly attemptContext: AttemptContextMode = 'auto',
  ) {}

  /** Runs `fn` within the time limit. */
  execute<R>(fn: () => R | PromiseLike<R>): Promise<R> {
    return this.call<() => R | PromiseLike<R>, R>(invokeThunk, fn);
  }

  /** Runs `next(arg)` within the time limit. */
  call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R>;
  /**
   * Runs `next(arg)` within the time limit and settles with what `observer`
   * makes of the outcome, saving a composed pipeline a promise per call.
   *
   * @internal
   */
  call<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    observer: AttemptObserver<R>,
    startedAt?: number,
  ): Promise<unknown>;
  call<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    observer?: AttemptObserver<R>,
    startedAt?: number,
  ): Promise<unknown> {
    const parent = policyScope();
    // A composed pipeline that already read the clock for this attempt passes the reading on.
    const now = startedAt ?? this.clock.now();
    const limit = this.attemptLimit(parent, now);
    if (limit < 0) {
      const error = refusal(this.timedOut(true, this.config.timeoutDuration));
      if (observer === undefined) return Promise.reject(error);
      observer.calleeSettled();
      try {
        return Promise.resolve(observer.rejected(error));
      } catch (mapped) {
        return Promise.reject(mapped);
      }
    }
    const byDeadline = limit < this.config.timeoutDuration;
    // Outside any scope, an attempt gets its own only when asked to: entering one costs every call (see attemptContext).
    const scope =
      parent === undefined && this.attemptContext === 'auto'
        ? undefined
        : new ResilienceContext(this.clock, now + limit, parent?.header ?? DEFAULT_DEADLINE_HEADER, parent, false);
    // A listener of timeouts hears each in the context of its call, not of whoever armed the shared timer.
    const context = this.callContextListeners > 0 ? AsyncLocalStorage.snapshot() : undefined;
    const attempt = new TimedAttempt<A, R>(this, now + limit, scope, limit, byDeadline, observer, context);
    if (byDeadline) attempt.timer = this.clock.setTimeout(() => attempt.expire(), limit);
    else this.enqueue(attempt, limit);
    return attempt.start(next, arg);
  }

  /**
   * Runs each subscription of `source` within the time limit: the first
   * value (or the end) must come within
   * `min(timeoutDuration, remaining deadline)` of subscribing, and each later one within that of the one
   * before. A subscription that runs out is unsubscribed from `source` (its
   * teardown runs) and fails with {@link TimeoutExceededError} (or
   * {@link DeadlineExceededError}); `source` is subscribed in the attempt's
   * own context, so `currentSignal()` there is the attempt's signal.
   */
  observe<T>(source: Observable<T>): Observable<T> {
    return new TimeLimitedObservable(this, source);
  }

  /**
   * @internal The limit of an attempt starting at `now` under `parent`:
   * `min(timeoutDuration, time left before the parent's deadline)`, or -1
   * when no time is left.
   */
  attemptLimit(parent: ResilienceContext | undefined, now: number): number {
    const limit = this.config.timeoutDuration;
    if (parent === undefined || parent.deadline === Number.POSITIVE_INFINITY) return limit;
    const left = parent.deadline - now;
    if (left <= 0 || parent.aborted) return -1;
    // Stryker disable next-line EqualityOperator: when equal, both branches return the same value
    return left < limit ? left : limit;
  }

  /**
   * Expires `entry` on the shared timer, `limit` (the full `timeoutDuration`) from now.
   *
   * @internal
   */
  enqueue(entry: TimedEntry, limit: number): void {
    this.queue.push(entry);
    if (this.queueTimer === undefined) this.queueTimer = this.clock.setTimeout(this.onQueueTimer, limit);
  }

  /** Cancels the shared timer (on shutdown); pending calls keep their outcome. */
  dispose(): void {
    // Stryker disable next-line ConditionalExpression: clearing no timer does nothing
    if (this.queueTimer !== undefined) this.clock.clearTimeout(this.queueTimer);
    this.queueTimer = undefined;
  }

  private readonly onQueueTimer = (): void => {
    this.queueTimer = undefined;
    const now = this.clock.now();
    const queue = this.queue;
    while (this.head < queue.length) {
      const attempt = queue[this.head];
      if (!attempt.settled && attempt.deadline > now) break;
      this.head++;
      // Stryker disable next-line ConditionalExpression: expire() returns at once for a settled entry
      if (!attempt.settled) attempt.expire();
    }
    this.compact();
    if (this.head < queue.length) {
      this.queueTimer = this.clock.setTimeout(this.onQueueTimer, queue[this.head].deadline - now);
    }
  };

  /** @internal Drops settled attempts from the front of the queue. */
  // Stryker disable next-line BlockStatement: trimming the queue only frees memory; the timer skips settled entries
  settled(): void {
    const queue = this.queue;
    // Stryker disable next-line ConditionalExpression: trimming less only keeps memory longer
    while (this.head < queue.length && queue[this.head].settled) this.head++;
    this.compact();
  }

  // Stryker disable all: emptying and compacting the queue only free memory; entries and their order stay
  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
  // Stryker restore all

  /** @internal Publishes a timeout; returns its error (`DeadlineExceededError` when the deadline was the limit). */
  timedOut(byDeadline: boolean, limit: number): Error {
    const error = byDeadline
      ? new DeadlineExceededError(this.name, `no time left within the request deadline`)
      : new TimeoutExceededError(this.name, limit);
    // Stryker disable next-line ConditionalExpression: no listener, nothing emitted either way
    if (this.timeoutStream.active) this.timeoutStream.emit({ name: this.name, kind: 'timeout', error });
    return error;
  }

  /** @internal True when a call now would fail at once: the request's deadline has passed or the request was aborted. */
  refusesAtOnce(): boolean {
    const parent = policyScope();
    return (
      parent !== undefined &&
      parent.deadline !== Number.POSITIVE_INFINITY &&
      (parent.deadline <= this.clock.now() || parent.aborted)
    );
  }

  /** @internal Publishes a call that settled within its limit, as failed or successful. */
  finished(error: unknown, failed: boolean): void {
    if (failed) {
      // Stryker disable next-line ConditionalExpression: no listener, nothing emitted either way
      if (this.errorStream.active) this.errorStream.emit({ name: this.name, kind: 'failed', error });
    } else if (this.successStream.active) {
      this.successStream.emit({ name: this.name, kind: 'successful' });
    }
  }
}

/**
 * Lets a composed pipeline act on a time-limited attempt's outcome inside
 * the limiter's own promise, instead of chaining another one.
 */
export interface AttemptObserver<R> {
  /** The callee's own promise settled (also when that is after a timeout). */
  calleeSettled(): void;
  /** What the attempt resolves with when the callee returned `value` in time, at clock time `end` (may throw or return a promise). */
  fulfilled(value: R, end?: number): unknown;
  /** What the attempt resolves with when it failed with `error`, a timeout included, at `end` when read (may throw or return a promise). */
  rejected(error: unknown, end?: number): unknown;
}

/** One attempt racing its expiry; a class rather than closures keeps the per-call cost flat. */
class TimedAttempt<A, R> implements TimedEntry, ScopeOnDemand {
  private resolve!: (value: unknown) => void;
  private reject!: (error: unknown) => void;
  timer: TimerHandle;
  settled = false;

  constructor(
    private readonly limiter: TimeLimiter,
    readonly deadline: number,
    /** The attempt's own context; none when it runs outside every scope (`attemptContext: 'auto'`) until a policy asks. */
    private scope: ResilienceContext | undefined,
    private readonly limit: number,
    private readonly byDeadline: boolean,
    private readonly observer: AttemptObserver<R> | undefined,
    private readonly context: ((fn: () => Error) => Error) | undefined,
  ) {}

  start(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<unknown> {
    const promise = new Promise<unknown>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    let pending: R | PromiseLike<R>;
    try {
      pending = this.scope === undefined ? runAsAttempt(this, next, arg) : contextStorage.run(this.scope, next, arg);
    } catch (error) {
      this.onRejected(error);
      return promise;
    }
    Promise.resolve(pending).then(
      (value) => this.onFulfilled(value),
      (error) => this.onRejected(error),
    );
    return promise;
  }

  /** The attempt's scope, made when a policy inside its synchronous part needs one (a bulkhead wait, a nested limit). */
  scopeOnDemand(): ResilienceContext {
    this.scope ??= new ResilienceContext(this.limiter.clock, this.deadline, DEFAULT_DEADLINE_HEADER, undefined, false);
    return this.scope;
  }

  expire(): void {
    // Stryker disable next-line ConditionalExpression: the queue skips settled attempts; finish() clears an own timer
    if (this.settled) return;
    this.settled = true;
    const error =
      this.context === undefined
        ? this.limiter.timedOut(this.byDeadline, this.limit)
        : this.context(() => this.limiter.timedOut(this.byDeadline, this.limit));
    if (this.limiter.config.cancelRunningFuture) this.scope?.abort(error);
    // A timer runs in the context of whoever armed it: an observer continues the call in its caller's.
    const parent = this.scope?.parent;
    if (parent === undefined) contextStorage.exit(failAttempt, this, error);
    else contextStorage.run(parent, failAttempt, this, error);
  }

  private onFulfilled(value: R): void {
    this.scope?.dispose();
    this.observer?.calleeSettled();
    if (this.settled) return;
    this.finish();
    const now = this.limiter.clock.now();
    // Timers fire after I/O that is already due: a result past the limit may beat its timer, yet is a timeout.
    if (now > this.deadline) return this.fail(this.limiter.timedOut(this.byDeadline, this.limit), now);
    this.limiter.finished(undefined, false);
    if (this.observer === undefined) {
      this.resolve(value);
      return;
    }
    try {
      this.resolve(this.observer.fulfilled(value, now));
    } catch (error) {
      this.reject(error);
    }
  }

  private onRejected(error: unknown): void {
    this.scope?.dispose();
    this.observer?.calleeSettled();
    if (this.settled) return;
    this.finish();
    const now = this.limiter.clock.now();
    // A refusal at the limit stays one: the method never ran, so no outcome is unknown.
    if (now > this.deadline && !isRefusal(error))
      return this.fail(this.limiter.timedOut(this.byDeadline, this.limit), now);
    this.limiter.finished(error, true);
    this.fail(error, now);
  }

  /** Settles the attempt with `error` (at clock time `now`, when read), or with what the observer makes of it. */
  fail(error: unknown, now?: number): void {
    if (this.observer === undefined) {
      this.reject(error);
      return;
    }
    try {
      this.resolve(this.observer.rejected(error, now));
    } catch (mapped) {
      this.reject(mapped);
    }
  }

  private finish(): void {
    this.settled = true;
    // Stryker disable next-line ConditionalExpression: trimming the queue only frees memory
    if (this.timer !== undefined) this.limiter.clock.clearTimeout(this.timer);
    else this.limiter.settled();
  }
}

/** Continues a timed-out attempt; module-level so handing it to another context allocates nothing. */
function failAttempt(attempt: TimedAttempt<unknown, unknown>, error: unknown): void {
  attempt.fail(error);
}
