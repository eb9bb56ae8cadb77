import { AsyncLocalStorage } from 'node:async_hooks';
import { EventTap, InstanceSnapshot, SpanEventSink, tapStream, TelemetryLog } from '../../kernel/telemetry';
import { BULKHEAD_RECOVERED, BULKHEAD_SATURATED } from './bulkhead.messages';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
import { Clock, TimerHandle } from '../../kernel/clock';
import { contextStorage, policyScope, ResilienceContext } from '../../kernel/context';
import { BulkheadFullError, DeadlineExceededError, refusalError } from '../../kernel/errors';
import { EventStream, EventSubscriber, Unsubscribe } from '../../kernel/events';
import { changedSettings, ConfigChangedEvent, publishConfigChange } from '../../kernel/config-change';
import { AttemptFunction } from '../../kernel/policy';
import { executeThrough, soloPipeline } from '../../engine/execute';
import { Pipeline } from '../../decorators/return-kind';
import { callerCancellation, ExecuteOptions } from '../../kernel/cancellation';
import { refusal } from '../../kernel/refusal';
import { Observable } from 'rxjs';
import { BulkheadConfig } from './bulkhead.config';
import { BoundedObservable } from '../../engine/observable/bulkhead.operator';
import { NO_PERMIT } from '../../engine/layers';
import type {
  BulkheadCallFinishedEvent,
  BulkheadCallPermittedEvent,
  BulkheadCallRejectedEvent,
  BulkheadCallWaitedEvent,
} from './bulkhead.events';

/** A point-in-time view of a bulkhead's permits and queue. */
export interface BulkheadMetrics {
  /** Permits free right now. */
  readonly availableConcurrentCalls: number;
  /** The configured `maxConcurrentCalls`. */
  readonly maxAllowedConcurrentCalls: number;
  /** Calls waiting for a permit. */
  readonly queueDepth: number;
}

interface Waiter {
  /** The waiting call's async context and queueing time, kept only while someone listens to waits. */
  waited: { readonly context: (fn: () => void) => void; readonly since: number } | undefined;
  prev: Waiter | undefined;
  next: Waiter | undefined;
  queued: boolean;
  grant: () => void;
  fail: (error: unknown) => void;
  timer: TimerHandle;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * A semaphore bulkhead with a bounded, FIFO wait queue: at most
 * `maxConcurrentCalls` calls run at once, at most `queueCapacity` wait for a
 * permit, each for at most `maxWaitDuration` (and never past the request
 * deadline). Everyone else gets {@link BulkheadFullError} at once.
 * `maxConcurrentCalls: 0` refuses every call at once, without waiting.
 *
 * A caller that has cancelled (its request scope, or `execute(fn, { signal })`)
 * gets no permit, and one that cancels while it waits leaves the queue at
 * once: either rejects with the caller's `AbortError` (`callerAbortError`),
 * reported by `onCallRejected` with the reason `aborted`. A request deadline
 * that passes in the queue still rejects with `DeadlineExceededError`.
 */
export class BulkheadPolicy {
  private readonly permittedEvents = new EventStream<BulkheadCallPermittedEvent>();
  private readonly rejectedEvents = new EventStream<BulkheadCallRejectedEvent>();
  private readonly finishedEvents = new EventStream<BulkheadCallFinishedEvent>();
  private readonly waitedEvents = new EventStream<BulkheadCallWaitedEvent>();
  private readonly configEvents = new EventStream<ConfigChangedEvent<BulkheadConfig>>();

  /** Fires when a call gets a permit. */
  readonly onCallPermitted: EventSubscriber<BulkheadCallPermittedEvent> = this.permittedEvents.subscribe;
  /** Fires when a call is refused or leaves the queue without a permit. */
  readonly onCallRejected: EventSubscriber<BulkheadCallRejectedEvent> = this.rejectedEvents.subscribe;
  /** Same as {@link BulkheadPolicy.onCallRejected}, under the registry's name for it. */
  readonly onBulkheadRejected: EventSubscriber<BulkheadCallRejectedEvent> = this.onCallRejected;
  /** Fires when a permitted call finishes and releases its permit. */
  readonly onCallFinished: EventSubscriber<BulkheadCallFinishedEvent> = this.finishedEvents.subscribe;
  /** Fires when a call that waited in the queue gets its permit, in that call's own async context. */
  readonly onCallWaited: EventSubscriber<BulkheadCallWaitedEvent> = this.waitedEvents.subscribe;
  /** Fires when its settings change (`CONFIG_CHANGED`). */
  readonly onConfigChanged: EventSubscriber<ConfigChangedEvent<BulkheadConfig>> = this.configEvents.subscribe;

  private settings: Readonly<BulkheadConfig>;
  private queueCapacity = 0;
  private retryAfterMs: number | undefined;
  private readonly permittedEvent: BulkheadCallPermittedEvent;
  private available: number;
  private head: Waiter | undefined;
  private tail: Waiter | undefined;
  private depth = 0;

  /**
   * @param name - the instance name, carried by its errors and events
   * @param config - resolved settings (durations in ms)
   * @param clock - the source of time for wait limits
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    config: BulkheadConfig,
    private readonly clock: Clock,
    /** The key this instance serves, for an instance used per key (`key` on a decorator, `{ key }` on a registry getter); else undefined. */
    readonly key?: string,
  ) {
    this.settings = this.adopt(config);
    this.available = config.maxConcurrentCalls;
    this.permittedEvent = Object.freeze({ name, key });
  }

  /**
   * @internal Runs with `config` from calls that start now on. The calls in
   * flight keep their permits and count against the new limit (none is
   * admitted until they are under it); a larger limit hands its new permits
   * to the calls waiting first. Publishes `CONFIG_CHANGED`; returns its
   * event, or undefined when nothing differs.
   */
  reconfigure(config: BulkheadConfig): ConfigChangedEvent<BulkheadConfig> | undefined {
    const before = this.settings;
    const changed = changedSettings(before, config);
    if (changed.length === 0) return undefined;
    this.settings = this.adopt(config);
    this.available += config.maxConcurrentCalls - before.maxConcurrentCalls;
    while (this.available > 0 && this.head !== undefined) {
      this.available--;
      this.release();
    }
    return publishConfigChange(this.configEvents, 'bulkhead', this, before, this.settings, changed);
  }

  /** Freezes `config` and derives the queue's capacity and the refusal's retry hint from it. */
  private adopt(config: BulkheadConfig): Readonly<BulkheadConfig> {
    // With no permit at all, waiting could only end in a refusal: refuse at once.
    const waits = config.maxWaitDuration > 0 && config.maxConcurrentCalls > 0;
    this.queueCapacity = waits ? (config.queueCapacity ?? config.maxConcurrentCalls) : 0;
    // Every current waiter is served or gone within maxWaitDuration, so that is when room is likely again.
    this.retryAfterMs = config.maxWaitDuration > 0 ? config.maxWaitDuration : undefined;
    return Object.freeze({ ...config });
  }

  /** The settings this bulkhead runs with. */
  get config(): Readonly<BulkheadConfig> {
    return this.settings;
  }

  /** Free permits, the permit limit and the number of waiting calls. */
  get metrics(): BulkheadMetrics {
    return {
      availableConcurrentCalls: Math.max(this.available, 0),
      maxAllowedConcurrentCalls: this.settings.maxConcurrentCalls,
      queueDepth: this.depth,
    };
  }

  /** @internal Its events on the telemetry channel, under Resilience4j's event type names. */
  tapEvents(tap: EventTap): Unsubscribe[] {
    const into: Unsubscribe[] = [];
    tapStream(into, tap, 'CALL_PERMITTED', this.onCallPermitted);
    tapStream(into, tap, 'CALL_REJECTED', this.onCallRejected);
    tapStream(into, tap, 'CALL_FINISHED', this.onCallFinished);
    tapStream(into, tap, 'CONFIG_CHANGED', this.onConfigChanged);
    return into;
  }

  /** @internal Its settings and permits, for the status endpoints. */
  snapshot(): InstanceSnapshot {
    return { config: this.config, metrics: this.metrics };
  }

  /** @internal Its span events: each wait for a permit, and each call refused. */
  traceEvents(trace: SpanEventSink): Unsubscribe[] {
    return [
      this.onCallWaited(({ name, waitMs }) =>
        trace.event(E.bulkheadWaited, { [A.policy]: 'bulkhead', [A.instance]: name, [A.bulkheadWaitMs]: waitMs }),
      ),
      this.onCallRejected(({ name, reason, error }) =>
        trace.failure(
          E.bulkheadRejected,
          { [A.policy]: 'bulkhead', [A.instance]: name, [A.bulkheadReason]: reason },
          error,
        ),
      ),
    ];
  }

  /** @internal What it logs: the start and end of each episode of saturation. */
  logEvents(log: TelemetryLog): Unsubscribe[] {
    const rejected = log.episode<string>(
      (onActivity) => this.onCallFinished(onActivity),
      (reason) => log.warn(BULKHEAD_SATURATED(this.name, this.config.maxConcurrentCalls, reason)),
      (count, ms) => log.log(BULKHEAD_RECOVERED(this.name, count, ms)),
    );
    // A waiter whose own deadline or signal fired did not find the bulkhead full.
    return [
      this.onCallRejected(
        (event) => (event.reason === 'queue-full' || event.reason === 'wait-timeout') && rejected(event.reason),
      ),
    ];
  }

  /** The engine over this policy alone, made on the first `execute`. */
  private solo: Pipeline | undefined;

  /**
   * Runs `fn` once a permit is free; rejects with {@link BulkheadFullError} when none is. `fn` receives the attempt's signal; `options.signal` lets a caller
   * outside any request scope cancel the call.
   */
  execute<R>(fn: AttemptFunction<R>, options?: ExecuteOptions): Promise<R> {
    return executeThrough((this.solo ??= soloPipeline({ bulkhead: this }, this.clock)), this.clock, fn, options);
  }

  /**
   * @internal The engine's queued path: runs `next(arg)` holding a permit,
   * waiting in the queue when all are taken. The permit is released however
   * the call ends. A caller that has cancelled gets no permit: it rejects
   * with its `AbortError`.
   */
  async callQueued<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    const cancelled = callerCancellation(contextStorage.getStore());
    if (cancelled !== undefined) throw this.cancelled(cancelled);
    let started = this.tryEnter();
    let attempt: ResilienceContext | undefined;
    // A free permit implies an empty queue: release() hands permits to waiters first.
    if (started === NO_PERMIT) {
      // The attempt's scope (made now when it entered none): past the wait its synchronous part is over, so the
      // method runs in it, where currentSignal() finds the attempt's signal.
      attempt = policyScope();
      await this.enqueue();
      started = this.entered();
    }
    try {
      return await (attempt === undefined ? next(arg) : contextStorage.run(attempt, next, arg));
    } finally {
      this.exit(started);
    }
  }

  /**
   * @internal Runs each subscription of `source` holding a permit, from subscribe
   * (after waiting in the queue when all are taken) to its completion, error
   * or unsubscribe. A refusal is an error notification on subscribe.
   */
  observe<T>(source: Observable<T>): Observable<T> {
    return new BoundedObservable(this, source);
  }

  /**
   * @internal Takes a free permit without waiting. Returns the entry time to pass to
   * {@link BulkheadPolicy.exit} (NaN when no one measures it), or
   * `NO_PERMIT` when every permit is taken (nothing was taken then).
   */
  tryEnter(): number {
    // Below zero after the limit was lowered under the calls in flight.
    if (this.available <= 0) return NO_PERMIT;
    this.available--;
    return this.entered();
  }

  /** @internal Gives back the permit taken by {@link BulkheadPolicy.tryEnter} (or {@link BulkheadPolicy.call}). */
  exit(started: number): void {
    this.release();
    if (this.finishedEvents.active && !Number.isNaN(started)) {
      this.finishedEvents.emit({ name: this.name, key: this.key, durationMs: this.clock.now() - started });
    }
  }

  /** @internal Marks a permit handed over from the queue as in use; returns what {@link BulkheadPolicy.exit} takes. */
  entered(): number {
    // Stryker disable next-line ConditionalExpression: no listener, nothing emitted either way
    if (this.permittedEvents.active) this.permittedEvents.emit(this.permittedEvent);
    return this.finishedEvents.active ? this.clock.now() : Number.NaN;
  }

  private enqueue(): Promise<void> {
    return new Promise<void>((grant, fail) => this.queueForPermit(grant, fail));
  }

  /**
   * @internal Queues for a permit: `grant` is called when one is handed
   * over, `fail` when the wait runs out (or its signal fires). Throws the
   * refusal when the caller may not wait at all. Returns the place in the
   * queue, for {@link BulkheadPolicy.leaveQueue}.
   */
  queueForPermit(grant: () => void, fail: (error: unknown) => void): object {
    if (this.depth >= this.queueCapacity) {
      throw this.rejected(this.fullError('queue-full'));
    }
    let signal: AbortSignal | undefined;
    const ctx = policyScope();
    if (ctx !== undefined) {
      if (ctx.remaining() === 0) throw this.rejected(this.deadlineError());
      // Only a call that has to wait pays for creating the scope's signal. It aborts when the request
      // deadline passes or the attempt's time limit fires, so the wait's own timer is maxWaitDuration alone.
      signal = ctx.signal;
      if (signal.aborted) throw this.abortError(ctx);
    }
    const waiter: Waiter = {
      waited: this.waitedEvents.active ? { context: AsyncLocalStorage.snapshot(), since: this.clock.now() } : undefined,
      prev: this.tail,
      next: undefined,
      queued: true,
      grant,
      fail,
      timer: undefined,
      signal,
      onAbort: undefined,
    };
    if (this.tail === undefined) this.head = waiter;
    else this.tail.next = waiter;
    this.tail = waiter;
    this.depth++;
    waiter.timer = this.clock.setTimeout(() => this.expire(waiter), this.settings.maxWaitDuration);
    if (signal !== undefined) {
      const scope = ctx as ResilienceContext;
      const onAbort = (): void => {
        // Stryker disable next-line ConditionalExpression: unlink removes this listener, so it runs only while queued
        if (!waiter.queued) return;
        this.unlink(waiter);
        waiter.fail(this.abortError(scope));
      };
      waiter.onAbort = onAbort;
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: unlink removes the listener; a signal aborts only once
      signal.addEventListener('abort', onAbort, { once: true });
    }
    return waiter;
  }

  /** @internal Leaves the queue without a permit and without an event (the caller gave up). */
  leaveQueue(place: object): void {
    const waiter = place as Waiter;
    // Stryker disable next-line ConditionalExpression: callers drop their place once served or failed
    if (waiter.queued) this.unlink(waiter);
  }

  private release(): void {
    const waiter = this.head;
    if (waiter === undefined || this.available < 0) {
      this.available++;
      return;
    }
    this.unlink(waiter);
    const waited = waiter.waited;
    // Told in the waiting call's context: the permit is handed over from whichever call released it.
    if (waited !== undefined)
      waited.context(() =>
        this.waitedEvents.emit({ name: this.name, key: this.key, waitMs: this.clock.now() - waited.since }),
      );
    waiter.grant();
  }

  private expire(waiter: Waiter): void {
    // Stryker disable next-line ConditionalExpression: unlink clears this timer, so it fires only while queued
    if (waiter.queued) this.leave(waiter, this.fullError('wait-timeout'));
  }

  private fullError(reason: BulkheadFullError['reason']): BulkheadFullError {
    return refusalError(
      this.settings.writableStackTraceEnabled !== false,
      BulkheadFullError,
      this.name,
      reason,
      this.retryAfterMs,
    );
  }

  private leave(waiter: Waiter, error: BulkheadFullError | DeadlineExceededError): void {
    this.unlink(waiter);
    waiter.fail(this.rejected(error));
  }

  private unlink(waiter: Waiter): void {
    // Stryker disable next-line BooleanLiteral: once unlinked, no timer, listener or caller reads the flag
    waiter.queued = false;
    if (waiter.prev === undefined) this.head = waiter.next;
    else waiter.prev.next = waiter.next;
    if (waiter.next === undefined) this.tail = waiter.prev;
    else waiter.next.prev = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.depth--;
    this.clock.clearTimeout(waiter.timer);
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }

  /**
   * The rejection (reported) of a call whose scope `ctx` aborted: the
   * deadline's error when its deadline passed, the caller's `AbortError`
   * when its caller cancelled, else a `BulkheadFullError` (`aborted`).
   */
  private abortError(ctx: ResilienceContext): BulkheadFullError | DeadlineExceededError | DOMException {
    const reason = ctx.reason;
    if (reason instanceof DeadlineExceededError) return this.rejected(this.deadlineError());
    const cancelled = callerCancellation(ctx);
    if (cancelled !== undefined) return this.cancelled(cancelled);
    return this.rejected(this.fullError('aborted'));
  }

  /**
   * @internal The rejection of a call whose caller cancelled before it got
   * a permit: the caller's `AbortError`, reported with the reason `aborted`.
   */
  cancelled(error: DOMException): DOMException {
    // Stryker disable next-line ConditionalExpression: no listener, nothing emitted either way
    if (this.rejectedEvents.active)
      this.rejectedEvents.emit({ name: this.name, key: this.key, reason: 'aborted', error });
    return error;
  }

  private deadlineError(): DeadlineExceededError {
    return new DeadlineExceededError(this.name, 'no bulkhead permit became free before the deadline');
  }

  private rejected<E extends BulkheadFullError | DeadlineExceededError>(error: E): E {
    refusal(error);
    // Stryker disable next-line ConditionalExpression: no listener, nothing emitted either way
    if (this.rejectedEvents.active) {
      const reason = error instanceof BulkheadFullError ? error.reason : 'deadline';
      this.rejectedEvents.emit({ name: this.name, key: this.key, reason, error });
    }
    return error;
  }
}
