import { Clock } from '../kernel/clock';
import { callCancellable, callerCancellation, hasNoOutcome } from '../kernel/cancellation';
import { contextStorage, policyScopeOver, ResilienceContext } from '../kernel/context';
import {
  BreakerLayer,
  BulkheadLayer,
  FallbackLayer,
  NO_PERMIT,
  RateLimiterLayer,
  RetryLayer,
  StandardLayers,
  TimeLimiterLayer,
} from './layers';
import { TimedAttempt } from './timed-attempt';

/**
 * The engine: what one call through the standard policies means. It runs
 * a method under any of Fallback → Retry → CircuitBreaker → RateLimiter →
 * TimeLimiter → Bulkhead, Resilience4j's order, through their hooks
 * ({@link StandardLayers}), as one small state machine per attempt: the
 * synchronous checks (breaker permit, rate limiter permit, bulkhead permit)
 * run inline and the whole outcome is handled on a single promise. Every
 * promise path uses it: a decorated method, a code pipeline, one policy's
 * `execute`, and each run of standard layers in a custom order. Retrying,
 * waiting for a rate limiter or bulkhead permit and falling back take the
 * policies' own (slower) paths.
 */
export class StandardPipeline {
  readonly fallback?: FallbackLayer;
  readonly retry?: RetryLayer;
  readonly breaker?: BreakerLayer;
  readonly rateLimiter?: RateLimiterLayer;
  readonly limiter?: TimeLimiterLayer;
  readonly bulkhead?: BulkheadLayer;
  /** @internal Attempts whose calls are over, for later calls to reuse. */
  readonly spare: Attempt[] = [];

  /**
   * @param layers - the method's policies
   * @param invoke - calls the method itself with its argument array (or the engine of the layers further in)
   * @param clock - the clock the breaker measures durations on
   * @param invokeAnswersCancellation - `invoke` is an engine further in, which settles by itself when the
   *   caller cancels (with the last error of the method, when one failed): it is not raced against the cancellation
   */
  constructor(
    layers: StandardLayers,
    readonly invoke: (args: unknown[]) => unknown,
    readonly clock: Clock,
    invokeAnswersCancellation = false,
  ) {
    this.raced = invokeAnswersCancellation ? invoke : (args) => callCancellable(invoke, args);
    this.fallback = layers.fallback;
    this.retry = layers.retry;
    this.breaker = layers.circuitBreaker;
    this.rateLimiter = layers.rateLimiter;
    this.limiter = layers.timeLimiter;
    this.bulkhead = layers.bulkhead;
  }

  /** Runs one call of the method through every layer; a caller that has cancelled gets no attempt and takes no permit. */
  readonly run = (args: unknown[]): Promise<unknown> => {
    // Read once: a cancelled caller runs nothing, the retry stops for one, the time limit bounds the attempt by it.
    const caller = contextStorage.getStore();
    const cancelled = callerCancellation(caller);
    return cancelled === undefined ? this.attempt(args, true, caller) : Promise.reject(cancelled);
  };

  /** One attempt without retry or fallback; what the retry loop calls again. */
  private readonly retryAttempt = (args: unknown[]): Promise<unknown> =>
    this.attempt(args, false, contextStorage.getStore());

  /** One attempt, in the async-local scope `caller` (read by the caller, when a layer needs it). */
  private attempt(args: unknown[], first: boolean, caller: ResilienceContext | undefined): Promise<unknown> {
    const breaker = this.breaker;
    let epoch = 0;
    let start = 0;
    if (breaker !== undefined) {
      if (!breaker.tryAcquirePermission()) {
        const refusal = breaker.notPermittedError();
        return first ? settle(() => this.afterError(args, refusal)) : Promise.reject(refusal);
      }
      epoch = breaker.callEpoch;
      start = this.clock.now();
    }
    const run = this.spare.pop() ?? new Attempt(this);
    run.prepare(args, first, epoch, start);
    const rateLimiter = this.rateLimiter;
    if (rateLimiter !== undefined) {
      // One clock reading serves the breaker's timing, the rate limiter's period and the time limit.
      if (breaker === undefined) start = this.clock.now();
      // No free permit this period: wait for a reserved one (or the refusal), then go on.
      if (!rateLimiter.tryAcquire(start)) return run.waitForPermission(rateLimiter);
      run.limited = true;
      run.drains = rateLimiter.drains;
    }
    return this.enter(run, args, breaker !== undefined || rateLimiter !== undefined ? start : undefined, caller);
  }

  /**
   * @internal The rest of an attempt once it holds its breaker and rate limiter
   * permits: time limit, bulkhead, method. `now` is the clock reading the
   * attempt started with, when one was taken; `caller` the async-local scope
   * it runs in (read once with the other layers, when a time limit needs it).
   */
  enter(
    run: Attempt,
    args: unknown[],
    now: number | undefined,
    caller: ResilienceContext | undefined,
  ): Promise<unknown> {
    const bulkhead = this.bulkhead;
    const limiter = this.limiter;
    // Outside every caller's scope nothing can cancel the call: the method is called as it is.
    let next = caller === undefined ? this.invoke : this.raced;
    if (limiter !== undefined) {
      const parent = policyScopeOver(caller);
      // The time limiter sits outside the bulkhead: a call it refuses at once never takes a permit.
      if (bulkhead !== undefined && (parent === undefined || !limiter.refusesAtOnce(parent))) {
        run.permit = bulkhead.tryEnter();
        // No free permit: wait in the bulkhead's queue; it gives the permit back itself.
        if (run.permit === NO_PERMIT) next = this.queued;
      }
      return limiter.begin(next, args, run, now ?? this.clock.now(), parent);
    }
    if (bulkhead !== undefined) {
      run.permit = bulkhead.tryEnter();
      if (run.permit === NO_PERMIT) next = this.queued;
    }
    let pending: unknown;
    try {
      pending = next(args);
    } catch (error) {
      pending = Promise.reject(error);
    }
    return run.watch(pending);
  }

  /** Calls the method once the bulkhead's queue admits it; the bulkhead gives the permit back itself. */
  private readonly queued = (args: unknown[]): unknown => this.bulkhead!.callQueued(this.raced, args);

  /** Calls the method raced against its caller's cancellation ({@link callCancellable}), unless it answers the cancellation itself. */
  private readonly raced: (args: unknown[]) => unknown;

  /** @internal What a first attempt that returned `value` answers: the value, or a retry of it. */
  afterResult(args: unknown[], value: unknown): unknown {
    const retry = this.retry;
    if (retry === undefined) return value;
    let outcome: unknown;
    try {
      outcome = retry.continueAfterResult(this.retryAttempt, args, 1, value);
    } catch (error) {
      return this.fallBack(args, error);
    }
    return outcome instanceof Promise ? this.fallBackOnRejection(args, outcome) : outcome;
  }

  /** @internal What a first attempt that failed with `error` answers: a retry, a fallback, or the error. */
  afterError(args: unknown[], error: unknown): unknown {
    const retry = this.retry;
    if (retry === undefined) return this.fallBack(args, error);
    let retried: Promise<unknown>;
    try {
      retried = retry.continueAfterError(this.retryAttempt, args, 1, error);
    } catch (final) {
      return this.fallBack(args, final);
    }
    return this.fallBackOnRejection(args, retried);
  }

  private fallBack(args: unknown[], error: unknown): unknown {
    if (this.fallback === undefined) throw error;
    return this.fallback.recover(args, error);
  }

  private fallBackOnRejection(args: unknown[], outcome: Promise<unknown>): Promise<unknown> {
    const fallback = this.fallback;
    return fallback === undefined
      ? outcome
      : outcome.then(undefined, (error: unknown) => fallback.recover(args, error));
  }
}

/** Attempts a pipeline keeps for reuse; more than this in flight at once are left to the garbage collector as they end. */
const MAX_SPARE_ATTEMPTS = 64;

const NO_ARGS: unknown[] = [];

/**
 * The state of one attempt: the breaker epoch and start time to record it
 * under, and the bulkhead permit to give back when the method really ends.
 * It is also the time limiter's attempt, so a time-limited attempt is one
 * object. Once its call is over (the method settled, the attempt answered,
 * the time limiter's queue let go of it) the pipeline reuses it, so a
 * happy-path call allocates no attempt and no callbacks of its own.
 */
class Attempt extends TimedAttempt {
  permit = NO_PERMIT;
  /** The attempt holds a permit of a rate limiter with `drainPermissionsOnResult`, which sees its outcome. */
  drains = false;
  /** The attempt holds a rate-limiter permit, given back if it ends with no outcome. */
  limited = false;
  private args: unknown[] = NO_ARGS;
  private first = false;
  private epoch = 0;
  private startedAt = 0;

  constructor(private readonly pipeline: StandardPipeline) {
    super();
  }

  /** Sets the attempt up for one call: its arguments, whether it is the call's first, and the breaker epoch and start time to record it under. */
  prepare(args: unknown[], first: boolean, epoch: number, startedAt: number): void {
    this.args = args;
    this.first = first;
    this.epoch = epoch;
    this.startedAt = startedAt;
  }

  /** Waits for a permit `rateLimiter` reserved (or its refusal), then goes on with the attempt. */
  waitForPermission(rateLimiter: RateLimiterLayer): Promise<unknown> {
    return rateLimiter.waitForPermission().then(
      () => {
        this.limited = true;
        this.drains = rateLimiter.drains;
        return this.pipeline.enter(this, this.args, undefined, contextStorage.getStore());
      },
      (refusal: unknown) => {
        try {
          return this.rejected(refusal);
        } finally {
          this.recycle();
        }
      },
    );
  }

  /** What the attempt answers once the method's `pending` outcome settles (no time limiter in between). */
  watch(pending: unknown): Promise<unknown> {
    return Promise.resolve(pending).then(
      (value) => this.settledWith(value),
      (error) => this.failedWith(error),
    );
  }

  /** The method returned `value` (no time limiter in between). */
  settledWith(value: unknown): unknown {
    this.calleeSettled();
    try {
      return this.fulfilled(value);
    } finally {
      this.recycle();
    }
  }

  /** The method failed with `error` (no time limiter in between). */
  failedWith(error: unknown): unknown {
    this.calleeSettled();
    try {
      return this.rejected(error);
    } finally {
      this.recycle();
    }
  }

  protected override recycle(): void {
    this.clear();
    this.permit = NO_PERMIT;
    this.drains = false;
    this.limited = false;
    this.args = NO_ARGS;
    const spare = this.pipeline.spare;
    if (spare.length < MAX_SPARE_ATTEMPTS) spare.push(this);
  }

  override calleeSettled(): void {
    if (this.permit !== NO_PERMIT) {
      this.pipeline.bulkhead!.exit(this.permit);
      this.permit = NO_PERMIT;
    }
  }

  override fulfilled(value: unknown, end?: number): unknown {
    if (this.drains) this.pipeline.rateLimiter!.drainIfNeeded(false, value);
    const breaker = this.pipeline.breaker;
    if (breaker !== undefined) {
      try {
        breaker.recordCall(this.epoch, this.startedAt, false, value, end, end);
      } catch (predicateError) {
        // recordResult threw: the attempt failed with that error (as the nested breaker's call does).
        if (!this.first) throw predicateError;
        return this.pipeline.afterError(this.args, predicateError);
      }
    }
    return this.first ? this.pipeline.afterResult(this.args, value) : value;
  }

  override rejected(error: unknown, end?: number): unknown {
    if (this.limited && hasNoOutcome(error)) this.pipeline.rateLimiter!.releasePermit();
    else if (this.drains) this.pipeline.rateLimiter!.drainIfNeeded(true, error);
    this.pipeline.breaker?.recordCall(this.epoch, this.startedAt, true, error, end, end);
    if (!this.first) throw error;
    return this.pipeline.afterError(this.args, error);
  }
}

/** @internal A promise of what `outcome` returns or throws. */
export function settle(outcome: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(outcome());
  } catch (error) {
    return Promise.reject(error);
  }
}
