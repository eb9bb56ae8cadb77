import { AsyncLocalStorage } from 'node:async_hooks';
import { Clock, TimerHandle } from '../../kernel/clock';
import { contextStorage, policyScope, ResilienceContext, runAsAttempt, ScopeOnDemand } from '../../kernel/context';
import { DeadlineExceededError, TimeoutExceededError } from '../../kernel/errors';
import { EventStream, Unsubscribe } from '../../kernel/events';
import { AttemptFunction, executeUnder } from '../../kernel/policy';
import { ExecuteOptions, isCancellation } from '../../kernel/cancellation';
import { isRefusal, refusal } from '../../kernel/refusal';
import { Observable } from 'rxjs';
import { ExpiryQueue } from './expiry-queue';
import { TimeLimiterConfig } from './time-limiter.config';
import { TimedEntry, TimeLimitedObservable } from './time-limiter.operator';
import type { TimeLimiterEvent } from './time-limiter.events';

/**
 * When a time-limited attempt runs in a context of its own (see
 * {@link TimeLimiter.attemptContext}): `'auto'` or `'always'`.
 */
export type AttemptContextMode = 'auto' | 'always';

/**
 * Bounds each call by `min(timeoutDuration, remaining request deadline)`.
 * The call runs in its own context, so `currentSignal()` inside it is the
 * attempt's signal, aborted on timeout when `cancelRunningFuture` is true.
 *
 * Calls limited by `timeoutDuration` alone expire in the order they start,
 * so they share one timer over a FIFO queue instead of arming a timer each;
 * only calls cut short by a request deadline get a timer of their own.
 */
export class TimeLimiter {
  private readonly successStream = new EventStream<TimeLimiterEvent>();
  private readonly errorStream = new EventStream<TimeLimiterEvent>();
  private readonly timeoutStream = new EventStream<TimeLimiterEvent>();
  private readonly queue = new ExpiryQueue();
  /** The one event every call that finished in time publishes: it never varies, so it is built once. */
  private readonly successEvent: TimeLimiterEvent;
  // undefined while the queue is empty (TimerHandle admits it).
  private queueTimer: TimerHandle;

  /** A call finished in time. */
  readonly onSuccess = this.successStream.subscribe;
  /** A call failed in time. */
  readonly onError = this.errorStream.subscribe;
  /** A call ran out of time (its own limit or the deadline). */
  readonly onTimeout = this.timeoutStream.subscribe;

  private callContextListeners = 0;

  /** @internal Calls that finished in time, counted as their {@link TimeLimiter.onSuccess} events are: what metrics read. */
  successfulCalls = 0;
  /** @internal Calls that failed in time, counted as their {@link TimeLimiter.onError} events are. */
  failedCalls = 0;
  /** @internal Calls that ran out of time, counted as their {@link TimeLimiter.onTimeout} events are. */
  timedOutCalls = 0;

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
  ) {
    this.successEvent = Object.freeze({ name, kind: 'successful' });
  }

  /**
   * Runs `fn` within the time limit. `fn` receives the attempt's signal; `options.signal` lets a caller
   * outside any request scope cancel the call.
   */
  execute<R>(fn: AttemptFunction<R>, options?: ExecuteOptions): Promise<R> {
    return executeUnder(this, this.clock, fn, options);
  }

  /** @internal Runs `next(arg)` within the time limit. */
  call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R>;
  /**
   * Runs `next(arg)` within the time limit as `attempt`, which settles with
   * what it makes of the outcome, saving a composed pipeline a promise per call.
   *
   * @internal
   */
  call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt: TimedAttempt): Promise<unknown>;
  call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A, attempt?: TimedAttempt): Promise<unknown> {
    return this.begin(next, arg, attempt, this.clock.now(), policyScope());
  }

  /**
   * @internal Starts `next(arg)` as `attempt` (or an attempt of its own),
   * at clock reading `now`, under `parent` (the {@link policyScope} the
   * caller read): a composed pipeline that read both already passes them on.
   */
  begin<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    attempt: TimedAttempt | undefined,
    now: number,
    parent: ResilienceContext | undefined,
  ): Promise<unknown> {
    const limit = this.attemptLimit(parent, now);
    if (limit < 0) {
      const error = refusal(this.timedOut(true, this.config.timeoutDuration));
      return attempt === undefined ? Promise.reject(error) : attempt.refuse(error);
    }
    // Outside any scope, an attempt gets its own only when asked to: entering one costs every call (see attemptContext).
    const scope =
      parent === undefined && this.attemptContext === 'auto'
        ? undefined
        : ResilienceContext.forAttempt(this.clock, now + limit, parent);
    const timed = attempt ?? new TimedAttempt();
    timed.limiter = this;
    timed.deadline = now + limit;
    timed.scope = scope;
    timed.limit = limit;
    // A listener of timeouts hears each in the context of its call, not of whoever armed the shared timer.
    if (this.callContextListeners > 0) timed.context = AsyncLocalStorage.snapshot();
    // A limit cut short by the request deadline is out of the queue's order: it gets a timer of its own.
    if (limit < this.config.timeoutDuration) {
      timed.armTimer(limit);
    } else {
      timed.queued = true;
      this.enqueue(timed, limit);
    }
    return timed.start(next, arg);
  }

  /**
   * @internal Runs each subscription of `source` within the time limit: the first
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
    for (let entry = queue.peek(); entry !== undefined; entry = queue.peek()) {
      if (!entry.settled && entry.deadline > now) {
        this.queueTimer = this.clock.setTimeout(this.onQueueTimer, entry.deadline - now);
        return;
      }
      queue.shift();
      // Stryker disable next-line ConditionalExpression: expire() returns at once for a settled entry
      if (!entry.settled) entry.expire();
      // Last: an attempt whose call is over may be reused from here on.
      entry.dequeued();
    }
  };

  /** @internal Drops settled entries from the front of the queue. */
  // Stryker disable next-line BlockStatement: trimming the queue only frees memory; the timer skips settled entries
  settled(): void {
    const queue = this.queue;
    // Stryker disable next-line ConditionalExpression: trimming less only keeps memory longer
    for (let entry = queue.peek(); entry !== undefined && entry.settled; entry = queue.peek()) {
      queue.shift();
      entry.dequeued();
    }
  }

  /** @internal Publishes a timeout; returns its error (`DeadlineExceededError` when the deadline was the limit). */
  timedOut(byDeadline: boolean, limit: number): Error {
    const error = byDeadline
      ? new DeadlineExceededError(this.name, `no time left within the request deadline`)
      : new TimeoutExceededError(this.name, limit);
    this.timedOutCalls++;
    // Stryker disable next-line ConditionalExpression: no listener, nothing emitted either way
    if (this.timeoutStream.active) this.timeoutStream.emit({ name: this.name, kind: 'timeout', error });
    return error;
  }

  /** @internal True when a call now, under `parent` (its {@link policyScope}), would fail at once: the request's deadline has passed or the request was aborted. */
  refusesAtOnce(parent: ResilienceContext | undefined = policyScope()): boolean {
    return (
      parent !== undefined &&
      parent.deadline !== Number.POSITIVE_INFINITY &&
      (parent.deadline <= this.clock.now() || parent.aborted)
    );
  }

  /** @internal Publishes a call that settled within its limit, as failed or successful. */
  finished(error: unknown, failed: boolean): void {
    if (failed) {
      this.failedCalls++;
      // Stryker disable next-line ConditionalExpression: no listener, nothing emitted either way
      if (this.errorStream.active) this.errorStream.emit({ name: this.name, kind: 'failed', error });
    } else {
      this.successfulCalls++;
      if (this.successStream.active) this.successStream.emit(this.successEvent);
    }
  }
}

type Settle = (value: unknown) => void;

function ignore(): void {}

/**
 * @internal One attempt racing its expiry; a class rather than closures
 * keeps the per-call cost flat. A composed pipeline extends it with what it
 * makes of the outcome ({@link TimedAttempt.fulfilled},
 * {@link TimedAttempt.rejected}), so one object carries the whole attempt.
 * The limiter fills in the timing fields when it starts the attempt.
 */
export class TimedAttempt implements TimedEntry, ScopeOnDemand {
  limiter: TimeLimiter | undefined = undefined;
  deadline = 0;
  /** The attempt's own context; none when it runs outside every scope (`attemptContext: 'auto'`) until a policy asks. */
  scope: ResilienceContext | undefined = undefined;
  limit = 0;
  /** Runs a function in the async context of the attempt's call; only while a listener needs timeouts there. */
  context: ((fn: () => Error) => Error) | undefined = undefined;
  timer: TimerHandle = undefined;
  settled = false;
  /** On the limiter's shared queue, which may still read it. */
  queued = false;
  /** The callee settled and the attempt answered: past this, only the queue may still hold it. */
  private done = false;
  private resolve: Settle = ignore;
  private reject: Settle = ignore;
  // Made once per attempt object: a pipeline that reuses its attempts makes no callbacks per call.
  private readonly onCalleeFulfilled = (value: unknown): void => this.onFulfilled(value);
  private readonly onCalleeRejected = (error: unknown): void => this.onRejected(error);
  // The executor of the promise the caller awaits, also made once: it hands the resolvers straight to the attempt.
  private readonly takeResolvers = (resolve: Settle, reject: Settle): void => {
    this.resolve = resolve;
    this.reject = reject;
  };

  /** The callee's own promise settled (also when that is after a timeout). */
  calleeSettled(): void {}

  /** What the attempt resolves with when the callee returned `value` in time, at clock time `end` (may throw or return a promise). */
  fulfilled(value: unknown, _end?: number): unknown {
    return value;
  }

  /** What the attempt resolves with when it failed with `error`, a timeout included, at `end` when read (may throw or return a promise). */
  rejected(error: unknown, _end?: number): unknown {
    throw error;
  }

  /** Expires the attempt on a timer of its own, `ms` from now (a limit cut short by the request deadline). */
  armTimer(ms: number): void {
    this.timer = this.limiter!.clock.setTimeout(() => this.expire(), ms);
  }

  start<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<unknown> {
    const promise = new Promise<unknown>(this.takeResolvers);
    let pending: R | PromiseLike<R>;
    try {
      pending = this.scope === undefined ? runAsAttempt(this, next, arg) : contextStorage.run(this.scope, next, arg);
    } catch (error) {
      this.onRejected(error);
      return promise;
    }
    // A method's own promise needs no wrapping: Promise.resolve would hand back the same one.
    (pending instanceof Promise ? pending : Promise.resolve(pending)).then(
      this.onCalleeFulfilled,
      this.onCalleeRejected,
    );
    return promise;
  }

  /** The attempt's scope, made when a policy inside its synchronous part needs one (a bulkhead wait, a nested limit). */
  scopeOnDemand(): ResilienceContext {
    this.scope ??= ResilienceContext.forAttempt(this.limiter!.clock, this.deadline, undefined);
    return this.scope;
  }

  expire(): void {
    // Stryker disable next-line ConditionalExpression: the queue skips settled attempts; finish() clears an own timer
    if (this.settled) return;
    this.settled = true;
    const limiter = this.limiter!;
    const error =
      this.context === undefined
        ? limiter.timedOut(this.byDeadline(), this.limit)
        : this.context(() => limiter.timedOut(this.byDeadline(), this.limit));
    if (limiter.config.cancelRunningFuture) this.scope?.abort(error);
    // A timer runs in the context of whoever armed it: an observer continues the call in its caller's.
    const parent = this.scope?.parent;
    if (parent === undefined) contextStorage.exit(failAttempt, this, error);
    else contextStorage.run(parent, failAttempt, this, error);
  }

  /**
   * Ends an attempt refused before it started (no time left): what
   * {@link TimedAttempt.rejected} makes of `error`.
   */
  refuse(error: unknown): Promise<unknown> {
    this.calleeSettled();
    try {
      return Promise.resolve(this.rejected(error));
    } catch (mapped) {
      return Promise.reject(mapped);
    } finally {
      this.answered();
    }
  }

  /** The queue let go of the attempt. */
  dequeued(): void {
    this.queued = false;
    if (this.done) this.recycle();
  }

  /**
   * Nothing of its call refers to the attempt any more (its callee settled,
   * it answered, and it left the queue): a pipeline may reuse the object.
   */
  protected recycle(): void {}

  /** Clears what one call left on the attempt, for the next call to reuse it. */
  protected clear(): void {
    this.scope = undefined;
    this.context = undefined;
    this.timer = undefined;
    this.settled = false;
    this.done = false;
    this.resolve = ignore;
    this.reject = ignore;
  }

  private answered(): void {
    this.done = true;
    if (!this.queued) this.recycle();
  }

  private onFulfilled(value: unknown): void {
    this.scope?.dispose();
    this.calleeSettled();
    if (!this.settled) this.answer(value);
    this.answered();
  }

  private answer(value: unknown): void {
    this.finish();
    const limiter = this.limiter!;
    const now = limiter.clock.now();
    // Timers fire after I/O that is already due: a result past the limit may beat its timer, yet is a timeout.
    if (now > this.deadline) return this.fail(limiter.timedOut(this.byDeadline(), this.limit), now);
    limiter.finished(undefined, false);
    try {
      this.resolve(this.fulfilled(value, now));
    } catch (error) {
      this.reject(error);
    }
  }

  private onRejected(error: unknown): void {
    this.scope?.dispose();
    this.calleeSettled();
    if (!this.settled) this.answerError(error);
    this.answered();
  }

  private answerError(error: unknown): void {
    this.finish();
    const limiter = this.limiter!;
    const now = limiter.clock.now();
    // A cancelled attempt has no outcome to count: its caller is gone.
    if (isCancellation(error)) return this.fail(error, now);
    // A refusal at the limit stays one: the method never ran, so no outcome is unknown.
    if (now > this.deadline && !isRefusal(error))
      return this.fail(limiter.timedOut(this.byDeadline(), this.limit), now);
    limiter.finished(error, true);
    this.fail(error, now);
  }

  /** Settles the attempt with `error` (at clock time `now`, when read), or with what {@link TimedAttempt.rejected} makes of it. */
  fail(error: unknown, now?: number): void {
    try {
      this.resolve(this.rejected(error, now));
    } catch (mapped) {
      this.reject(mapped);
    }
  }

  /** Whether the attempt's limit was the time left before the request deadline rather than its own `timeoutDuration`. */
  private byDeadline(): boolean {
    return this.limit < this.limiter!.config.timeoutDuration;
  }

  private finish(): void {
    this.settled = true;
    // Stryker disable next-line ConditionalExpression: trimming the queue only frees memory
    if (this.timer !== undefined) this.limiter!.clock.clearTimeout(this.timer);
    else this.limiter!.settled();
  }
}

/** Continues a timed-out attempt; module-level so handing it to another context allocates nothing. */
function failAttempt(attempt: TimedAttempt, error: unknown): void {
  attempt.fail(error);
}
