import { Clock, TimerHandle } from '../kernel/clock';
import { contextStorage, ResilienceContext, runAsAttempt, ScopeOnDemand } from '../kernel/context';
import { isCancellation } from '../kernel/cancellation';
import { isRefusal } from '../kernel/refusal';

/** What the shared timer of a time limiter expires: an attempt, or a time-limited subscription. */
export interface TimedEntry {
  /** When it expires; fixed while it is queued. */
  readonly deadline: number;
  /** True once it ended (in time or not): the timer skips it. */
  readonly settled: boolean;
  expire(): void;
  /** The queue let go of it (after expiring it, when it was due). */
  dequeued(): void;
}

/** What a time-limited attempt asks of its time limiter. */
export interface AttemptLimiter {
  readonly config: { readonly timeoutDuration: number; readonly cancelRunningFuture: boolean };
  readonly clock: Clock;
  /** Drops settled attempts from the front of its queue. */
  settled(): void;
  /** Publishes a timeout; returns its error. */
  timedOut(byDeadline: boolean, limit: number): Error;
  /** Publishes an attempt that settled within its limit. */
  finished(error: unknown, failed: boolean): void;
}

type Settle = (value: unknown) => void;

function ignore(): void {}

/**
 * One attempt racing its time limit; a class rather than closures keeps
 * the per-call cost flat. The engine's attempt extends it with what it
 * makes of the outcome ({@link TimedAttempt.fulfilled},
 * {@link TimedAttempt.rejected}), so one object carries the whole attempt.
 * The time limiter fills in the timing fields when it starts the attempt.
 */
export class TimedAttempt implements TimedEntry, ScopeOnDemand {
  limiter: AttemptLimiter | undefined = undefined;
  deadline = 0;
  /** The attempt's own context; none when it runs outside every scope (`attemptContext: 'auto'`) until a policy asks. */
  scope: ResilienceContext | undefined = undefined;
  limit = 0;
  /** The limit is the time left before the request deadline rather than the limiter's own `timeoutDuration`. */
  cutShort = false;
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
    if (isCancellation(error)) {
      // A cancelled attempt has no outcome to count: its caller is gone. A cancellation at the attempt's own limit
      // (the request deadline it was cut to, most often) is that limit passing, whichever timer of the instant fired
      // first.
      if (now < this.deadline) return this.fail(error, now);
      return this.fail(limiter.timedOut(this.byDeadline(), this.limit), now);
    }
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
    return this.cutShort;
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
