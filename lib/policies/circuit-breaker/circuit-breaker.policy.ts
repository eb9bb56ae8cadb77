import { Clock, TimerHandle } from '../../kernel/clock';
import {
  EventTap,
  HealthReport,
  InstanceSnapshot,
  SpanEventSink,
  tapStream,
  TelemetryLog,
} from '../../kernel/telemetry';
import { CircuitBreakerHealth, HEALTH_OF } from './circuit-breaker.health';
import { BREAKER_TRANSITION } from './circuit-breaker.messages';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
import { OutcomeHistograms } from '../../kernel/duration-histogram';
import { ErrorMatcher } from '../../config/error-matcher';
import { httpStatusOf } from '../../kernel/error-status';
import { BulkheadFullError, CallNotPermittedError, refusalError } from '../../kernel/errors';
import { EventStream, EventSubscriber, Unsubscribe } from '../../kernel/events';
import { changedSettings, ConfigChangedEvent, publishConfigChange } from '../../kernel/config-change';
import { exponentialInterval, randomizedInterval } from '../../kernel/interval-function';
import { AttemptFunction } from '../../kernel/policy';
import { executeThrough, soloPipeline } from '../../engine/execute';
import { Pipeline } from '../../decorators/return-kind';
import { refusal } from '../../kernel/refusal';
import { ExecuteOptions, isCancellation } from '../../kernel/cancellation';
import { Observable } from 'rxjs';
import { CircuitBreakerConfig } from './circuit-breaker.config';
import {
  CircuitBreakerCallNotPermittedEvent,
  CircuitBreakerErrorEvent,
  CircuitBreakerFailureRateExceededEvent,
  CircuitBreakerIgnoredErrorEvent,
  CircuitBreakerResetEvent,
  CircuitBreakerSlowCallRateExceededEvent,
  CircuitBreakerState,
  CircuitBreakerStateTransitionEvent,
  CircuitBreakerSuccessEvent,
} from './circuit-breaker.events';
import { GuardedObservable } from '../../engine/observable/circuit-breaker.operator';
import { CircuitBreakerFleetHooks } from './circuit-breaker.fleet-hooks';
import { IllegalStateTransitionError } from './illegal-state-transition.error';
import { CountSlidingWindow, SlidingWindow, createSlidingWindow } from './sliding-window';

/**
 * A snapshot of the breaker's current sliding window. Rates are in percent,
 * and -1 while the window holds fewer than `minimumNumberOfCalls` calls.
 */
export interface CircuitBreakerMetrics {
  /** Failed calls as a percentage of buffered calls, or -1 below the minimum. */
  readonly failureRate: number;
  /** Slow calls as a percentage of buffered calls, or -1 below the minimum. */
  readonly slowCallRate: number;
  /** Calls in the window. */
  readonly numberOfBufferedCalls: number;
  /** Calls in the window recorded as failures. */
  readonly numberOfFailedCalls: number;
  /** Calls in the window longer than `slowCallDurationThreshold`. */
  readonly numberOfSlowCalls: number;
  /** Calls in the window both slow and failed. */
  readonly numberOfSlowFailedCalls: number;
  /** Calls in the window recorded as successes. */
  readonly numberOfSuccessfulCalls: number;
  /** Calls in the window both slow and successful. */
  readonly numberOfSlowSuccessfulCalls: number;
  /** Calls refused since the current metrics began (as Resilience4j, they restart with each new window). */
  readonly numberOfNotPermittedCalls: number;
}

const SUCCESS = 0;
const FAILURE = 1;
const IGNORED = 2;
type Outcome = typeof SUCCESS | typeof FAILURE | typeof IGNORED;

const NO_EXCEPTIONS = new ErrorMatcher();

function matcherOf(entries: CircuitBreakerConfig['recordExceptions']): ErrorMatcher {
  // Most breakers list nothing; sharing one empty matcher keeps 10,000 of them small.
  // Stryker disable next-line ConditionalExpression: a new empty matcher matches the same errors; sharing only saves memory
  return entries.length === 0 ? NO_EXCEPTIONS : new ErrorMatcher(entries);
}

/** The manual transitions Resilience4j's state machine refuses; every other pair, same state included, is legal. */
function isIllegalTransition(from: CircuitBreakerState, to: CircuitBreakerState): boolean {
  if (to === 'HALF_OPEN') return from === 'CLOSED' || from === 'METRICS_ONLY';
  return to === 'OPEN' && from === 'METRICS_ONLY';
}

/**
 * True when `recordExceptions` names BulkheadFullError itself: the class, its
 * name (dotted or not), or a class standing for it (Resilience4j's
 * `BulkheadFullException`, as the options bind that name). A broader entry
 * such as `Error` does not count.
 */
function namesBulkheadFull(entries: CircuitBreakerConfig['recordExceptions']): boolean {
  return entries.some((e) =>
    typeof e === 'string'
      ? e.slice(e.lastIndexOf('.') + 1) === BulkheadFullError.name
      : e === BulkheadFullError ||
        (Object.getPrototypeOf(e) === BulkheadFullError && Object.hasOwn(e, Symbol.hasInstance)),
  );
}

/**
 * A circuit breaker with Resilience4j's state machine and defaults.
 *
 * CLOSED: every call runs and its outcome goes into a sliding window
 * (COUNT_BASED: the last `slidingWindowSize` calls; TIME_BASED: the last
 * `slidingWindowSize` seconds). Once the window holds `minimumNumberOfCalls`
 * calls, a failure rate or slow-call rate (slow: longer than
 * `slowCallDurationThreshold`) at or above its threshold opens the breaker.
 * OPEN: calls are refused with {@link CallNotPermittedError} until the wait
 * is over (strictly after it), then the breaker turns HALF_OPEN (on a timer
 * when `automaticTransitionFromOpenToHalfOpenEnabled`, else on the next
 * call). The wait is `waitDurationInOpenState`, grown by
 * `exponentialBackoffMultiplier` each time the breaker opens again without
 * having closed (`enableExponentialBackoff`, capped at
 * `exponentialMaxWaitDurationInOpenState`), or randomized by
 * `randomizedWaitFactor` (`enableRandomizedWait`), as Resilience4j's
 * `waitIntervalFunctionInOpenState`. HALF_OPEN: at most
 * `permittedNumberOfCallsInHalfOpenState` trial calls run, later callers are
 * refused at once; once `min(minimumNumberOfCalls, permittedNumberOfCallsInHalfOpenState)`
 * trials are recorded, their rates decide between OPEN and CLOSED.
 * `maxWaitDurationInHalfOpenState` (when positive) bounds that wait, then moves
 * to `transitionToStateAfterWaitDuration` (OPEN by default).
 *
 * Manual transitions follow Resilience4j: CLOSED → HALF_OPEN and
 * METRICS_ONLY → OPEN or HALF_OPEN throw {@link IllegalStateTransitionError};
 * a transition to the current state starts it afresh (a new window, a new
 * wait) without publishing a transition event.
 *
 * By default every error is a failure except one carrying an HTTP 4xx status
 * other than 408 and 429 (the dependency answered: a success) and a
 * {@link BulkheadFullError} (our own limit: ignored). A call's outcome is
 * recorded only in the state that admitted it, so a late answer from an
 * earlier state never counts as a half-open trial. A refusal's
 * `retryAfterMs` is the time left in OPEN; FORCED_OPEN and a busy HALF_OPEN
 * cannot know it and leave it undefined.
 *
 * A breaker with `shared` is fleet-wide (docs/fleet-breaker.md): it keeps
 * its own window, but once `quorum` replicas have opened it follows the
 * fleet into OPEN, stays OPEN after the wait until the replica holding the
 * probe lease has its verdict, and publishes its transitions made by hand
 * (`transitionToHalfOpenState()` aside). None of that touches a call.
 */
export class CircuitBreakerPolicy {
  private currentState: CircuitBreakerState = 'CLOSED';
  /** Bumped on every transition; a call records its outcome only if this has not moved since it was admitted. */
  private epoch = 0;
  /** The window of the current state; OPEN keeps the one it was opened with, DISABLED and FORCED_OPEN have none. */
  private window: SlidingWindow | undefined;
  private minimumCalls: number;
  private closedWindow!: SlidingWindow;
  private closedMinimumCalls!: number;
  private halfOpenWindow: CountSlidingWindow | undefined;
  private notPermittedCalls = 0;
  private halfOpenPermits = 0;
  private openUntil = 0;
  private openWait: number;
  /** Consecutive OPEN (and FORCED_OPEN) entries since the breaker last closed: the attempt of the open-state interval. */
  private openAttempts = 0;
  private halfOpenMinimumCalls!: number;
  // undefined while no state timer is set (TimerHandle admits it).
  private timer: TimerHandle;
  // Stryker disable next-line BooleanLiteral: entering METRICS_ONLY, the only state that reads it, sets it to false
  private thresholdsReported = false;
  private settings: CircuitBreakerConfig;
  private ignoreExceptions!: ErrorMatcher;
  private recordExceptions!: ErrorMatcher;
  private recordsBulkheadFull!: boolean;

  // Streams are made on first subscription: an unobserved breaker carries no listener state.
  private transitionEvents: EventStream<CircuitBreakerStateTransitionEvent> | undefined;
  private notPermittedEvents: EventStream<CircuitBreakerCallNotPermittedEvent> | undefined;
  private successEvents: EventStream<CircuitBreakerSuccessEvent> | undefined;
  private errorEvents: EventStream<CircuitBreakerErrorEvent> | undefined;
  private ignoredErrorEvents: EventStream<CircuitBreakerIgnoredErrorEvent> | undefined;
  private failureRateEvents: EventStream<CircuitBreakerFailureRateExceededEvent> | undefined;
  private slowCallRateEvents: EventStream<CircuitBreakerSlowCallRateExceededEvent> | undefined;
  private resetEvents: EventStream<CircuitBreakerResetEvent> | undefined;
  /** The fleet of a shared breaker: told of its transitions, asked before a probe. */
  private fleet: CircuitBreakerFleetHooks | undefined;
  /** The wait the fleet gave for the OPEN state being entered, in place of the breaker's own. */
  private fleetWait: number | undefined;
  private configEvents: EventStream<ConfigChangedEvent<CircuitBreakerConfig>> | undefined;
  /** Where each recorded call's duration also goes, by outcome (the metrics' histograms): no event is built for them. */
  private durationSinks: readonly OutcomeHistograms[] = [];

  /**
   * @param name - the instance name, carried by its errors and events
   * @param settings - resolved settings (durations in ms), as validated by the module's schema
   * @param clock - the source of time for durations, the open wait and timers
   * @param random - uniform [0, 1) source for the randomized open wait
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    settings: CircuitBreakerConfig,
    /** The time source for call durations, the open wait and its timers. */
    readonly clock: Clock,
    private readonly random: () => number = Math.random,
    /** The key this instance serves, for an instance used per key (`key` on a decorator, `{ key }` on a registry getter); else undefined. */
    readonly key?: string,
  ) {
    this.settings = this.adopt(settings);
    this.openWait = this.settings.waitDurationInOpenState;
    this.window = this.closedWindow;
    this.minimumCalls = this.closedMinimumCalls;
    // Stryker disable next-line ConditionalExpression: starting in CLOSED again only clears the empty window
    if (settings.initialState !== 'CLOSED') this.startIn(settings.initialState);
  }

  /**
   * @internal Runs with `settings` from calls that start now on, keeping its
   * state, its open wait and its window; a window of another type or size
   * starts empty. New thresholds are applied when the next call is recorded.
   * Publishes `CONFIG_CHANGED`; returns its event, or undefined when nothing differs.
   */
  reconfigure(settings: CircuitBreakerConfig): ConfigChangedEvent<CircuitBreakerConfig> | undefined {
    const before = this.settings;
    const oldWindow = this.closedWindow;
    const after = this.adopt(settings, before);
    const changed = changedSettings(before, after);
    if (changed.length === 0) return undefined;
    this.settings = after;
    const windowReset = this.closedWindow !== oldWindow;
    if (this.window === oldWindow) this.useWindow(this.closedWindow, this.closedMinimumCalls, false);
    else if (this.window !== undefined && this.window === this.halfOpenWindow)
      this.minimumCalls = this.halfOpenMinimumCalls;
    // The next half-open round gets a window of the new size.
    if (before.permittedNumberOfCallsInHalfOpenState !== after.permittedNumberOfCallsInHalfOpenState)
      this.halfOpenWindow = undefined;
    return publishConfigChange(this.configEvents, 'circuitBreaker', this, before, after, changed, windowReset);
  }

  /**
   * Normalizes `settings` and derives what calls read from them (window,
   * minimums, exception matchers); keeps the window of `previous` when its
   * type and size are the same. Returns the normalized settings.
   */
  private adopt(settings: CircuitBreakerConfig, previous?: CircuitBreakerConfig): CircuitBreakerConfig {
    // Half-open trials count against the minimum as written, as Resilience4j's forHalfOpen metrics read it.
    this.halfOpenMinimumCalls = Math.min(settings.minimumNumberOfCalls, settings.permittedNumberOfCallsInHalfOpenState);
    // As Resilience4j's CircuitBreakerConfig: a count-based window can never hold more calls than its size, and the config says so.
    if (settings.slidingWindowType === 'COUNT_BASED' && settings.minimumNumberOfCalls > settings.slidingWindowSize)
      settings = Object.freeze({ ...settings, minimumNumberOfCalls: settings.slidingWindowSize });
    if (
      previous === undefined ||
      previous.slidingWindowType !== settings.slidingWindowType ||
      previous.slidingWindowSize !== settings.slidingWindowSize
    )
      this.closedWindow = createSlidingWindow(settings.slidingWindowType, settings.slidingWindowSize);
    this.closedMinimumCalls = settings.minimumNumberOfCalls;
    this.ignoreExceptions = matcherOf(settings.ignoreExceptions);
    this.recordExceptions = matcherOf(settings.recordExceptions);
    this.recordsBulkheadFull = namesBulkheadFull(settings.recordExceptions);
    return settings;
  }

  /** The settings this breaker runs with. */
  get config(): Readonly<CircuitBreakerConfig> {
    return this.settings;
  }

  /** The current state. Reading it never moves the breaker (an expired OPEN turns HALF_OPEN on the next call or timer). */
  get state(): CircuitBreakerState {
    return this.currentState;
  }

  /**
   * @internal True while the breaker holds what a fresh one would not have:
   * OPEN before its wait ends, HALF_OPEN with its trials, or a state set by
   * hand (FORCED_OPEN, DISABLED, METRICS_ONLY). Such a breaker is never evicted.
   */
  get holdsState(): boolean {
    const state = this.currentState;
    if (state === 'CLOSED') return false;
    return state !== 'OPEN' || this.clock.now() <= this.openUntil;
  }

  /**
   * The wait of the current OPEN state in ms (of the last one, outside OPEN):
   * `waitDurationInOpenState`, grown or randomized when so configured.
   */
  get openWaitMs(): number {
    return this.openWait;
  }

  /** Rates and counts of the current sliding window. */
  get metrics(): CircuitBreakerMetrics {
    const window = this.window;
    if (window === undefined) {
      return {
        failureRate: -1,
        slowCallRate: -1,
        numberOfBufferedCalls: 0,
        numberOfFailedCalls: 0,
        numberOfSlowCalls: 0,
        numberOfSlowFailedCalls: 0,
        numberOfSuccessfulCalls: 0,
        numberOfSlowSuccessfulCalls: 0,
        numberOfNotPermittedCalls: this.notPermittedCalls,
      };
    }
    window.refresh(this.clock.now());
    const total = window.totalCalls;
    // minimumCalls is at least 1 wherever a window is kept, so an empty window is never rated.
    const rated = total >= this.minimumCalls;
    return {
      failureRate: rated ? (window.failedCalls * 100) / total : -1,
      slowCallRate: rated ? (window.slowCalls * 100) / total : -1,
      numberOfBufferedCalls: total,
      numberOfFailedCalls: window.failedCalls,
      numberOfSlowCalls: window.slowCalls,
      numberOfSlowFailedCalls: window.slowFailedCalls,
      numberOfSuccessfulCalls: total - window.failedCalls,
      numberOfSlowSuccessfulCalls: window.slowCalls - window.slowFailedCalls,
      numberOfNotPermittedCalls: this.notPermittedCalls,
    };
  }

  /** Subscribes to state transitions; returns the unsubscribe function. */
  get onStateTransition(): EventSubscriber<CircuitBreakerStateTransitionEvent> {
    return (this.transitionEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to refused calls; returns the unsubscribe function. */
  get onCallNotPermitted(): EventSubscriber<CircuitBreakerCallNotPermittedEvent> {
    return (this.notPermittedEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to calls recorded as successes; returns the unsubscribe function. */
  get onSuccess(): EventSubscriber<CircuitBreakerSuccessEvent> {
    return (this.successEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to calls recorded as failures; returns the unsubscribe function. */
  get onError(): EventSubscriber<CircuitBreakerErrorEvent> {
    return (this.errorEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to errors counted as neither success nor failure; returns the unsubscribe function. */
  get onIgnoredError(): EventSubscriber<CircuitBreakerIgnoredErrorEvent> {
    return (this.ignoredErrorEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to the failure rate reaching its threshold; returns the unsubscribe function. */
  get onFailureRateExceeded(): EventSubscriber<CircuitBreakerFailureRateExceededEvent> {
    return (this.failureRateEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to the slow-call rate reaching its threshold; returns the unsubscribe function. */
  get onSlowCallRateExceeded(): EventSubscriber<CircuitBreakerSlowCallRateExceededEvent> {
    return (this.slowCallRateEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to changes of its settings (`CONFIG_CHANGED`); returns the unsubscribe function. */
  get onConfigChanged(): EventSubscriber<ConfigChangedEvent<CircuitBreakerConfig>> {
    return (this.configEvents ??= new EventStream()).subscribe;
  }

  /** Subscribes to {@link CircuitBreakerPolicy.reset}; returns the unsubscribe function. */
  get onReset(): EventSubscriber<CircuitBreakerResetEvent> {
    return (this.resetEvents ??= new EventStream()).subscribe;
  }

  /**
   * @internal Adds the duration of each call the breaker records (when its
   * success, error or ignored-error event would be published) to the
   * histogram of its outcome, with nothing allocated per call; returns the undo.
   */
  recordDurationsInto(histograms: OutcomeHistograms): Unsubscribe {
    this.durationSinks = [...this.durationSinks, histograms];
    return () => {
      this.durationSinks = this.durationSinks.filter((sink) => sink !== histograms);
    };
  }

  /** @internal Its events on the telemetry channel, under Resilience4j's event type names. */
  tapEvents(tap: EventTap): Unsubscribe[] {
    const into: Unsubscribe[] = [];
    tapStream(into, tap, 'SUCCESS', this.onSuccess);
    tapStream(into, tap, 'ERROR', this.onError);
    tapStream(into, tap, 'IGNORED_ERROR', this.onIgnoredError);
    tapStream(into, tap, 'NOT_PERMITTED', this.onCallNotPermitted);
    tapStream(into, tap, 'STATE_TRANSITION', this.onStateTransition);
    tapStream(into, tap, 'RESET', this.onReset);
    tapStream(into, tap, 'FAILURE_RATE_EXCEEDED', this.onFailureRateExceeded);
    tapStream(into, tap, 'SLOW_CALL_RATE_EXCEEDED', this.onSlowCallRateExceeded);
    tapStream(into, tap, 'CONFIG_CHANGED', this.onConfigChanged);
    return into;
  }

  /** @internal Its state, settings and window, for the status endpoints. */
  snapshot(): InstanceSnapshot {
    return { state: this.state, config: this.config, metrics: this.metrics };
  }

  /** @internal Its span events: each refused call, with the state that refused it. */
  traceEvents(trace: SpanEventSink): Unsubscribe[] {
    return [
      this.onCallNotPermitted(({ name, state }) =>
        trace.event(E.circuitBreakerNotPermitted, {
          [A.policy]: 'circuit_breaker',
          [A.instance]: name,
          [A.circuitBreakerState]: state,
        }),
      ),
    ];
  }

  /** @internal What it logs: every transition (a warning when it opens), with the window it opened on. */
  logEvents(log: TelemetryLog): Unsubscribe[] {
    return [
      this.onStateTransition((event) => {
        const message = BREAKER_TRANSITION(
          event.name,
          event.from,
          event.to,
          event.to === 'OPEN' ? this.metrics : undefined,
          this.openWaitMs,
        );
        if (event.to === 'OPEN' || event.to === 'FORCED_OPEN') log.warn(message);
        else log.log(message);
      }),
    ];
  }

  /** @internal Its row in the health check of circuit breakers, with `registerHealthIndicator`: its health and window. */
  healthReport(): HealthReport | undefined {
    if (!this.config.registerHealthIndicator) return undefined;
    const m = this.metrics;
    const row: CircuitBreakerHealth = {
      status: HEALTH_OF[this.state](this.config.allowHealthIndicatorToFail),
      state: this.state,
      failureRate: m.failureRate,
      slowCallRate: m.slowCallRate,
      failureRateThreshold: this.config.failureRateThreshold,
      slowCallRateThreshold: this.config.slowCallRateThreshold,
      bufferedCalls: m.numberOfBufferedCalls,
      failedCalls: m.numberOfFailedCalls,
      slowCalls: m.numberOfSlowCalls,
      slowFailedCalls: m.numberOfSlowFailedCalls,
      notPermittedCalls: m.numberOfNotPermittedCalls,
    };
    return { check: 'circuitBreakers', row };
  }

  /** The engine over this policy alone, made on the first `execute`. */
  private solo: Pipeline | undefined;

  /**
   * Runs `fn` under the breaker; rejects with {@link CallNotPermittedError} when it is refused. `fn` receives the attempt's signal; `options.signal` lets a caller
   * outside any request scope cancel the call.
   */
  execute<R>(fn: AttemptFunction<R>, options?: ExecuteOptions): Promise<R> {
    return executeThrough((this.solo ??= soloPipeline({ circuitBreaker: this }, this.clock)), this.clock, fn, options);
  }

  /**
   * @internal Runs each subscription of `source` as one call: refused on subscribe
   * (an error notification) when the breaker does not permit it; recorded
   * when the subscription ends, with its duration from subscribe to the
   * first value (or to the end, when none came). An error is classified as
   * for a call; completion, or an unsubscribe after a value, is a success;
   * an unsubscribe before any value records nothing and gives the
   * permission back.
   */
  observe<T>(source: Observable<T>): Observable<T> {
    return new GuardedObservable(this, source);
  }

  /**
   * @internal The epoch a call permitted now belongs to; pass it to
   * {@link CircuitBreakerPolicy.recordCall} so a result arriving after a
   * state change is not counted in the new state.
   */
  get callEpoch(): number {
    return this.epoch;
  }

  /**
   * @internal Records a call permitted by {@link CircuitBreakerPolicy.tryAcquirePermission}:
   * the epoch and clock time it started at, and how it ended (`outcome` is
   * the error when `failed`, else the result). Its duration runs to `end`
   * when given (an Observable's first value), else to now; `now`, when the
   * caller has just read the clock, saves reading it again. A `recordResult`
   * that throws is recorded as the call's error and its exception rethrown.
   */
  recordCall(epoch: number, start: number, failed: boolean, outcome: unknown, end?: number, now?: number): void {
    if (failed && isCancellation(outcome)) {
      // A cancelled attempt has no outcome: nothing is recorded or published, and its permission goes back.
      if (epoch === this.epoch) this.releasePermission();
      return;
    }
    if (failed) {
      this.complete(epoch, start, this.classifyError(outcome), outcome, end, now);
      return;
    }
    let classified: Outcome;
    try {
      classified = this.classifyResult(outcome);
    } catch (predicateError) {
      // As Resilience4j: a throwing recordResult is recorded as the call's error, then thrown, so no permit is lost.
      this.complete(epoch, start, this.classifyError(predicateError), predicateError, end, now);
      throw predicateError;
    }
    this.complete(epoch, start, classified, outcome, end, now);
  }

  /** @internal The error for a call {@link CircuitBreakerPolicy.tryAcquirePermission} refused. */
  notPermittedError(): CallNotPermittedError {
    return refusal(
      refusalError(
        this.config.writableStackTraceEnabled !== false,
        CallNotPermittedError,
        this.name,
        this.currentState,
        this.retryAfterMs(),
      ),
    );
  }

  /**
   * @internal Asks for permission to make one call. True in CLOSED, DISABLED and
   * METRICS_ONLY; in OPEN once the wait is over, strictly (turning HALF_OPEN); in
   * HALF_OPEN while trial permits are left. A refusal is counted and
   * published. A permitted call must end with {@link CircuitBreakerPolicy.onResult}
   * or {@link CircuitBreakerPolicy.releasePermission}.
   */
  tryAcquirePermission(): boolean {
    switch (this.currentState) {
      case 'CLOSED':
      case 'METRICS_ONLY':
      case 'DISABLED':
        return true;
      case 'OPEN':
        if (this.clock.now() > this.openUntil && (this.fleet === undefined || this.fleet.mayProbe())) {
          this.transition('HALF_OPEN');
          return this.tryAcquirePermission();
        }
        break;
      case 'HALF_OPEN':
        if (this.halfOpenPermits > 0) {
          this.halfOpenPermits--;
          return true;
        }
        break;
      // Stryker disable next-line ConditionalExpression: FORCED_OPEN refuses like any state not listed
      case 'FORCED_OPEN':
        break;
    }
    this.notPermittedCalls++;
    if (this.notPermittedEvents?.active)
      this.notPermittedEvents.emit({ name: this.name, key: this.key, state: this.currentState });
    return false;
  }

  /** @internal Like {@link CircuitBreakerPolicy.tryAcquirePermission}, but throws {@link CallNotPermittedError} on refusal. */
  acquirePermission(): void {
    if (!this.tryAcquirePermission()) throw this.notPermittedError();
  }

  /**
   * @internal Gives back a permission whose call will not be recorded. Only HALF_OPEN
   * counts permits, and entering HALF_OPEN resets them, so a permission given
   * back in another state changes nothing.
   */
  releasePermission(): void {
    if (this.halfOpenPermits < this.settings.permittedNumberOfCallsInHalfOpenState) this.halfOpenPermits++;
  }

  /**
   * @internal Records the outcome of a call made under {@link CircuitBreakerPolicy.tryAcquirePermission}:
   * `error` when it threw (classified by the exception lists), else `result`
   * (checked with `recordResult`). The outcome goes into the current state.
   */
  onResult(durationMs: number, error: unknown, result?: unknown): void {
    if (error !== undefined) {
      this.record(this.epoch, this.clock.now(), durationMs, this.classifyError(error), error);
      return;
    }
    let classified: Outcome;
    try {
      classified = this.classifyResult(result);
    } catch (predicateError) {
      this.record(this.epoch, this.clock.now(), durationMs, this.classifyError(predicateError), predicateError);
      throw predicateError;
    }
    this.record(this.epoch, this.clock.now(), durationMs, classified, result);
  }

  /** Refuses every call until another transition. */
  transitionToForcedOpenState(): void {
    this.transitionByHand('FORCED_OPEN');
  }

  /** Permits every call and records nothing until another transition. */
  transitionToDisabledState(): void {
    this.transitionByHand('DISABLED');
  }

  /** Permits every call and records it in a fresh window, publishing threshold events but never opening. */
  transitionToMetricsOnlyState(): void {
    this.transitionByHand('METRICS_ONLY');
  }

  /** Closes the breaker with an empty window (also when it is CLOSED already). */
  transitionToClosedState(): void {
    this.transitionByHand('CLOSED');
  }

  /**
   * Opens the breaker for its next open-state wait (restarting the wait when
   * it is OPEN already); throws {@link IllegalStateTransitionError} in METRICS_ONLY.
   */
  transitionToOpenState(): void {
    this.transitionByHand('OPEN');
  }

  /**
   * Starts a round of `permittedNumberOfCallsInHalfOpenState` trial calls;
   * throws {@link IllegalStateTransitionError} in CLOSED and METRICS_ONLY.
   */
  transitionToHalfOpenState(): void {
    this.transitionByHand('HALF_OPEN');
  }

  /** Returns to a fresh CLOSED state: empty window, no timers, counters at zero. */
  reset(): void {
    this.resetHere();
    this.fleet?.changedByHand('CLOSED', 0, true);
  }

  /**
   * @internal Makes this breaker fleet-wide: `hooks` hear its transitions
   * and decide whether it may probe once OPEN's wait is over.
   */
  joinFleet(hooks: CircuitBreakerFleetHooks): void {
    this.fleet = hooks;
  }

  /**
   * @internal Moves to `to` because the fleet did, without telling the
   * fleet back: OPEN for the `remainingMs` left of the fleet's wait, a
   * `reset` as {@link CircuitBreakerPolicy.reset}.
   */
  followFleet(to: CircuitBreakerState, remainingMs: number, reset: boolean): void {
    if (reset) {
      this.resetHere();
      return;
    }
    if (to === 'OPEN') this.fleetWait = remainingMs;
    this.transition(to);
  }

  /** @internal The fleet gave this replica the half-open probe: HALF_OPEN, if it is still OPEN. */
  probe(): void {
    if (this.currentState === 'OPEN') this.transition('HALF_OPEN');
  }

  private resetHere(): void {
    const from = this.currentState;
    this.enter('CLOSED');
    if (from !== 'CLOSED' && this.transitionEvents?.active)
      this.transitionEvents.emit({ name: this.name, key: this.key, from, to: 'CLOSED' });
    if (this.resetEvents?.active) this.resetEvents.emit({ name: this.name, key: this.key });
  }

  /** ms until calls may be admitted again; unknown (undefined) in FORCED_OPEN and while HALF_OPEN trials decide. */
  private retryAfterMs(): number | undefined {
    return this.currentState === 'OPEN' ? Math.max(0, this.openUntil - this.clock.now()) : undefined;
  }

  private classifyError(error: unknown): Outcome {
    if (this.ignoreExceptions.matches(error)) return IGNORED;
    const resilience4j = this.settings.exceptionRules === 'resilience4j';
    if (!resilience4j && error instanceof BulkheadFullError && !this.recordsBulkheadFull) return IGNORED;
    // As Resilience4j: with a list, only the listed errors are failures, a timeout included.
    if (!this.recordExceptions.empty) return this.recordExceptions.matches(error) ? FAILURE : SUCCESS;
    if (resilience4j) return FAILURE;
    const status = httpStatusOf(error);
    return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429
      ? SUCCESS
      : FAILURE;
  }

  private classifyResult(result: unknown): Outcome {
    const recordResult = this.settings.recordResult;
    return recordResult !== undefined && recordResult(result) ? FAILURE : SUCCESS;
  }

  private complete(
    epoch: number,
    start: number,
    outcome: Outcome,
    value: unknown,
    end: number | undefined,
    reading: number | undefined,
  ): void {
    const now = reading ?? this.clock.now();
    this.record(epoch, now, (end ?? now) - start, outcome, value);
  }

  private record(epoch: number, now: number, durationMs: number, outcome: Outcome, value: unknown): void {
    if (this.currentState === 'DISABLED') return;
    const sinks = this.durationSinks;
    for (let i = 0; i < sinks.length; i++) sinks[i][outcome].add(durationMs);
    if (outcome === SUCCESS) {
      if (this.successEvents?.active) this.successEvents.emit({ name: this.name, key: this.key, durationMs });
    } else if (outcome === FAILURE) {
      if (this.errorEvents?.active) this.errorEvents.emit({ name: this.name, key: this.key, durationMs, error: value });
    } else if (this.ignoredErrorEvents?.active) {
      this.ignoredErrorEvents.emit({ name: this.name, key: this.key, durationMs, error: value });
    }
    if (epoch !== this.epoch) return;
    if (outcome === IGNORED) {
      this.releasePermission();
      return;
    }
    const window = this.window;
    if (window === undefined) return;
    window.record(now, durationMs, outcome === FAILURE, durationMs > this.settings.slowCallDurationThreshold);
    if (window.totalCalls < this.minimumCalls) return;
    switch (this.currentState) {
      case 'CLOSED':
        if (this.exceedsThresholds(window)) {
          this.publishExceeded(window);
          this.transition('OPEN');
          this.fleet?.opened(this.openWait);
        }
        break;
      case 'HALF_OPEN':
        // As Resilience4j's HalfOpenState: the trials decide without a threshold-exceeded event.
        this.decide(this.exceedsThresholds(window) ? 'OPEN' : 'CLOSED');
        break;
      case 'METRICS_ONLY':
        // As Resilience4j: reported once per stay in METRICS_ONLY, not on every call above the threshold.
        if (!this.thresholdsReported && this.exceedsThresholds(window)) {
          this.thresholdsReported = true;
          this.publishExceeded(window);
        }
        break;
    }
  }

  private exceedsThresholds(window: SlidingWindow): boolean {
    const total = window.totalCalls;
    return (
      (window.failedCalls * 100) / total >= this.settings.failureRateThreshold ||
      (window.slowCalls * 100) / total >= this.settings.slowCallRateThreshold
    );
  }

  private publishExceeded(window: SlidingWindow): void {
    const total = window.totalCalls;
    const failureRate = (window.failedCalls * 100) / total;
    const slowCallRate = (window.slowCalls * 100) / total;
    if (failureRate >= this.settings.failureRateThreshold && this.failureRateEvents?.active) {
      this.failureRateEvents.emit({ name: this.name, key: this.key, failureRate });
    }
    if (slowCallRate >= this.settings.slowCallRateThreshold && this.slowCallRateEvents?.active) {
      this.slowCallRateEvents.emit({ name: this.name, key: this.key, slowCallRate });
    }
  }

  private transitionByHand(to: CircuitBreakerState): void {
    const from = this.currentState;
    if (isIllegalTransition(from, to)) throw new IllegalStateTransitionError(this.name, from, to);
    this.transition(to);
    this.fleet?.changedByHand(to, this.openWait, false);
  }

  /** Ends a half-open round in `to`, and tells the fleet. */
  private decide(to: CircuitBreakerState): void {
    this.transition(to);
    this.fleet?.decided(to, this.openWait);
  }

  /** OPEN's wait is over (on its timer): HALF_OPEN, unless the fleet holds this replica OPEN. */
  private afterOpenWait(): void {
    if (this.fleet === undefined || this.fleet.mayProbe()) this.transition('HALF_OPEN');
  }

  /** Enters `to` afresh; a transition to the current state is internal and not published, as in Resilience4j. */
  private transition(to: CircuitBreakerState): void {
    const from = this.currentState;
    this.enter(to);
    if (from !== to && this.transitionEvents?.active)
      this.transitionEvents.emit({ name: this.name, key: this.key, from, to });
  }

  /** The wait of the `attempt`-th consecutive OPEN: Resilience4j's `waitIntervalFunctionInOpenState`. */
  private nextOpenWait(attempt: number): number {
    const settings = this.settings;
    if (settings.enableExponentialBackoff) {
      return exponentialInterval(
        settings.waitDurationInOpenState,
        settings.exponentialBackoffMultiplier,
        attempt,
        settings.exponentialMaxWaitDurationInOpenState,
      );
    }
    if (settings.enableRandomizedWait) {
      return randomizedInterval(
        Math.floor(settings.waitDurationInOpenState),
        settings.randomizedWaitFactor,
        this.random,
      );
    }
    return settings.waitDurationInOpenState;
  }

  /** Starts a new breaker in `initialState`, as the first of its kind (Resilience4j's attempt 1), without an event. */
  private startIn(state: CircuitBreakerState): void {
    if (state === 'HALF_OPEN') this.openAttempts = 1;
    this.enter(state);
  }

  /** Sets up `to` from scratch: its window, permits, deadline and timer. */
  private enter(to: CircuitBreakerState): void {
    // Stryker disable next-line ConditionalExpression: clearing no timer does nothing
    if (this.timer !== undefined) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
    // Stryker disable next-line UpdateOperator: the epoch is only compared for equality, so any change marks the new state
    this.epoch++;
    this.currentState = to;
    const settings = this.settings;
    switch (to) {
      case 'CLOSED':
      case 'METRICS_ONLY':
        this.openAttempts = 0;
        this.closedWindow.clear();
        this.useWindow(this.closedWindow, this.closedMinimumCalls);
        this.thresholdsReported = false;
        break;
      case 'OPEN': {
        // The window it opened with stays readable, as in Resilience4j.
        const attempt = ++this.openAttempts;
        const wait = (this.openWait = this.fleetWait ?? this.nextOpenWait(attempt));
        this.fleetWait = undefined;
        this.openUntil = this.clock.now() + wait;
        if (settings.automaticTransitionFromOpenToHalfOpenEnabled) {
          this.schedule(() => this.afterOpenWait(), wait);
        }
        break;
      }
      case 'HALF_OPEN': {
        const permitted = settings.permittedNumberOfCallsInHalfOpenState;
        const window = (this.halfOpenWindow ??= new CountSlidingWindow(permitted));
        window.clear();
        this.useWindow(window, this.halfOpenMinimumCalls);
        this.halfOpenPermits = permitted;
        if (settings.maxWaitDurationInHalfOpenState > 0) {
          const next = settings.transitionToStateAfterWaitDuration;
          this.schedule(() => this.decide(next), settings.maxWaitDurationInHalfOpenState);
        }
        break;
      }
      case 'FORCED_OPEN':
        this.openAttempts++;
        this.useWindow(undefined, 0);
        break;
      case 'DISABLED':
        this.openAttempts = 0;
        this.useWindow(undefined, 0);
        break;
    }
  }

  private useWindow(window: SlidingWindow | undefined, minimumCalls: number, newMetrics = true): void {
    this.window = window;
    this.minimumCalls = minimumCalls;
    if (newMetrics) this.notPermittedCalls = 0;
  }

  private schedule(callback: () => void, ms: number): void {
    const timer = this.clock.setTimeout(callback, ms);
    // A breaker waiting to turn half-open must not keep the process alive.
    (timer as { unref?: () => void } | undefined)?.unref?.();
    this.timer = timer;
  }
}
