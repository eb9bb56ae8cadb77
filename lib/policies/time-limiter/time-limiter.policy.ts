import { AsyncLocalStorage } from 'node:async_hooks';
import { EventTap, InstanceSnapshot, SpanEventSink, tapStream } from '../../kernel/telemetry';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
import { Clock, TimerHandle } from '../../kernel/clock';
import { policyScope, ResilienceContext } from '../../kernel/context';
import { DeadlineExceededError, TimeoutExceededError } from '../../kernel/errors';
import { EventStream, EventSubscriber, Unsubscribe } from '../../kernel/events';
import { changedSettings, ConfigChangedEvent, publishConfigChange } from '../../kernel/config-change';
import { AttemptFunction } from '../../kernel/policy';
import { executeThrough, soloPipeline } from '../../engine/execute';
import { Pipeline } from '../../decorators/return-kind';
import { ExecuteOptions } from '../../kernel/cancellation';
import { refusal } from '../../kernel/refusal';
import { Observable } from 'rxjs';
import { ExpiryQueue } from './expiry-queue';
import { TimeLimiterConfig } from './time-limiter.config';
import { TimeLimitedObservable } from '../../engine/observable/time-limiter.operator';
import type { TimedEntry } from '../../engine/timed-attempt';
import { TimedAttempt } from '../../engine/timed-attempt';
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
  private readonly configStream = new EventStream<ConfigChangedEvent<TimeLimiterConfig>>();
  private settings: TimeLimiterConfig;
  /** The latest deadline in the shared queue: an attempt due before it cannot wait its turn there. */
  private lastQueuedDeadline = Number.NEGATIVE_INFINITY;
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
  /** Its settings changed (`CONFIG_CHANGED`). */
  readonly onConfigChanged: EventSubscriber<ConfigChangedEvent<TimeLimiterConfig>> = this.configStream.subscribe;

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
    config: TimeLimiterConfig,
    /** The time source for limits and deadlines, also used by its attempts. */
    readonly clock: Clock,
    /**
     * When an attempt runs in its own context (so that `currentSignal()`,
     * `remainingTime()` and `deadlineHeaders()` inside it see the attempt):
     * `'auto'` when it starts inside a request deadline or another scope,
     * `'always'` for every attempt.
     */
    readonly attemptContext: AttemptContextMode = 'auto',
    /** The key this instance serves, for an instance used per key (`key` on a decorator, `{ key }` on a registry getter); else undefined. */
    readonly key?: string,
  ) {
    this.settings = config;
    this.successEvent = Object.freeze({ name, key, kind: 'successful' });
  }

  /** The resolved settings (durations in ms). */
  get config(): TimeLimiterConfig {
    return this.settings;
  }

  /**
   * @internal Runs with `config` from calls that start now on; a call
   * already running keeps the limit it started with. Publishes
   * `CONFIG_CHANGED`; returns its event, or undefined when nothing differs.
   */
  reconfigure(config: TimeLimiterConfig): ConfigChangedEvent<TimeLimiterConfig> | undefined {
    const before = this.settings;
    const changed = changedSettings(before, config);
    if (changed.length === 0) return undefined;
    this.settings = config;
    return publishConfigChange(this.configStream, 'timeLimiter', this, before, config, changed);
  }

  /** @internal Its events on the telemetry channel, under Resilience4j's event type names. */
  tapEvents(tap: EventTap): Unsubscribe[] {
    const into: Unsubscribe[] = [];
    tapStream(into, tap, 'SUCCESS', this.onSuccess);
    tapStream(into, tap, 'ERROR', this.onError);
    tapStream(into, tap, 'TIMEOUT', this.onTimeout);
    tapStream(into, tap, 'CONFIG_CHANGED', this.onConfigChanged);
    return into;
  }

  /** @internal Its settings, for the status endpoints. */
  snapshot(): InstanceSnapshot {
    return { config: this.config };
  }

  /** @internal Its span events: each timeout, on the span of the call that timed out. */
  traceEvents(trace: SpanEventSink): Unsubscribe[] {
    return [
      this.onTimeoutInCallContext(({ name, error }) =>
        trace.failure(E.timeout, { [A.policy]: 'time_limiter', [A.instance]: name }, error),
      ),
    ];
  }

  /** The engine over this policy alone, made on the first `execute`. */
  private solo: Pipeline | undefined;

  /**
   * Runs `fn` within the time limit. `fn` receives the attempt's signal; `options.signal` lets a caller
   * outside any request scope cancel the call.
   */
  execute<R>(fn: AttemptFunction<R>, options?: ExecuteOptions): Promise<R> {
    return executeThrough((this.solo ??= soloPipeline({ timeLimiter: this }, this.clock)), this.clock, fn, options);
  }

  /**
   * @internal Starts `next(arg)` as the engine's `attempt`, at clock
   * reading `now`, under `parent` (the {@link policyScope} the engine read).
   */
  begin<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    attempt: TimedAttempt,
    now: number,
    parent: ResilienceContext | undefined,
  ): Promise<unknown> {
    const limit = this.attemptLimit(parent, now);
    if (limit < 0) {
      const error = refusal(this.timedOut(true, this.config.timeoutDuration));
      return attempt.refuse(error);
    }
    // Outside any scope, an attempt gets its own only when asked to: entering one costs every call (see attemptContext).
    const scope =
      parent === undefined && this.attemptContext === 'auto'
        ? undefined
        : ResilienceContext.forAttempt(this.clock, now + limit, parent);
    attempt.limiter = this;
    attempt.deadline = now + limit;
    attempt.scope = scope;
    attempt.limit = limit;
    // A listener of timeouts hears each in the context of its call, not of whoever armed the shared timer.
    if (this.callContextListeners > 0) attempt.context = AsyncLocalStorage.snapshot();
    attempt.cutShort = limit < this.settings.timeoutDuration;
    if (this.timesApart(limit, now + limit)) {
      attempt.armTimer(limit);
    } else {
      attempt.queued = true;
      this.enqueue(attempt, limit);
    }
    return attempt.start(next, arg);
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
   * @internal True when an entry of `limit`, due at `deadline`, is out of the
   * shared queue's order and gets a timer of its own: a limit cut short by
   * the request deadline, or one due before an entry already queued (after
   * `timeoutDuration` was shortened).
   */
  timesApart(limit: number, deadline: number): boolean {
    return limit < this.settings.timeoutDuration || deadline < this.lastQueuedDeadline;
  }

  /**
   * Expires `entry` on the shared timer, `limit` (the full `timeoutDuration`) from now.
   *
   * @internal
   */
  enqueue(entry: TimedEntry, limit: number): void {
    this.queue.push(entry);
    this.lastQueuedDeadline = entry.deadline;
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
    if (this.timeoutStream.active) this.timeoutStream.emit({ name: this.name, key: this.key, kind: 'timeout', error });
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
      if (this.errorStream.active) this.errorStream.emit({ name: this.name, key: this.key, kind: 'failed', error });
    } else {
      this.successfulCalls++;
      if (this.successStream.active) this.successStream.emit(this.successEvent);
    }
  }
}
