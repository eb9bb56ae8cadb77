import { Clock } from '../../kernel/clock';
import {
  errorText,
  EventTap,
  HealthReport,
  InstanceSnapshot,
  onEither,
  SpanEventSink,
  tapStream,
  TelemetryLog,
} from '../../kernel/telemetry';
import type { RateLimiterHealth, RateLimiterHealthStatus } from './rate-limiter.health';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
import { instancePlace } from '../../config/config.messages';
import { Duration } from '../../config/duration';
import { contextStorage, policyScope, ResilienceContext } from '../../kernel/context';
import { DeadlineExceededError, RateLimitedError, refusalError } from '../../kernel/errors';
import { EventStream, EventSubscriber, Unsubscribe } from '../../kernel/events';
import { AttemptFunction } from '../../kernel/policy';
import { executeThrough, soloPipeline } from '../../engine/execute';
import { Pipeline } from '../../decorators/return-kind';
import { ExecuteOptions, callerAbortError, callerCancellation } from '../../kernel/cancellation';
import { refusal } from '../../kernel/refusal';
import { RATE_LIMITER_SCHEMA, RateLimitedCallOutcome, RateLimiterConfig } from './rate-limiter.config';
import { applyOverrides } from '../../config/schema';
import { changedSettings, ConfigChangedEvent, publishConfigChange } from '../../kernel/config-change';
import {
  BAD_PERMITS,
  RATE_LIMITER_STORE_ANSWERING,
  RATE_LIMITER_STORE_FAILING,
  RESERVE_ON_SHARED,
  STORE_TIMED_OUT,
  STORE_UNAVAILABLE,
} from './rate-limiter.messages';
import { RateLimiterStore, RateLimiterStoreAnswer } from './rate-limiter-store';
import type {
  RateLimiterAcquiredEvent,
  RateLimiterDrainedEvent,
  RateLimiterRefusedEvent,
  RateLimiterStoreFailureEvent,
  RateLimiterWaitEvent,
} from './rate-limiter.events';

/** A point-in-time view of a rate limiter, with Resilience4j's names. */
export interface RateLimiterMetrics {
  /** Permits left in the current period; negative while permits of later periods are reserved by waiting callers. */
  readonly availablePermissions: number;
  /** Callers waiting for a reserved permit (or, shared, for the store's answer). */
  readonly numberOfWaitingThreads: number;
}

/** {@link RateLimiterMetrics} and the details Resilience4j's `AtomicRateLimiterMetrics` adds. */
export interface RateLimiterDetailedMetrics extends RateLimiterMetrics {
  /** ms a caller asking for one permit now would wait (0: none). */
  readonly msToWait: number;
  /** The current period, counted from the instance's creation. */
  readonly cycle: number;
}

const NANOS_PER_MS = 1e6;
const REFUSED = -1;

const TRUE = Promise.resolve(true);
const FALSE = Promise.resolve(false);
const granted = (): boolean => true;
/** `acquirePermission`'s answer to a rejection: false for a refusal, the error for anything else. */
function refusedAsFalse(error: unknown): boolean {
  if (error instanceof RateLimitedError || error instanceof DeadlineExceededError) return false;
  throw error;
}

/**
 * A rate limiter with Resilience4j's `AtomicRateLimiter` semantics: time
 * since the instance was created is cut into periods of
 * `limitRefreshPeriod`; each period starts with `limitForPeriod` permits
 * (unused ones do not carry over). A caller without a free permit reserves
 * one of a later period when it can wait for it within `timeoutDuration`
 * (a wait of exactly `timeoutDuration` included) and before the request
 * deadline, and waits on the clock; otherwise it is refused at once, as
 * Resilience4j's non-blocking `reservePermission` refuses, with
 * {@link RateLimitedError} (`retryAfterMs`: time until the next period) or,
 * when only the deadline stood in the way, {@link DeadlineExceededError}.
 *
 * A caller that has cancelled (its request scope, or `execute(fn, { signal })`)
 * takes no permit and rejects with its `AbortError` (`callerAbortError`).
 * One that cancels while it waits for a reserved permit stops waiting at
 * once, rejects with that `AbortError`, and gives the reserved permits back
 * (to the store, when shared, through `RateLimiterStore.release`): later
 * callers can have them. Resilience4j's `AtomicRateLimiter` has no way to
 * give a reserved permit back; a thread interrupted while it waits keeps it
 * charged.
 *
 * With `shared: true` the periods and permits live in a
 * {@link RateLimiterStore}, one atomic step per acquire, so every process
 * using the store shares one limit; `metrics` then estimate from this
 * process's last answer from the store.
 */
export class RateLimiterPolicy {
  private readonly acquiredEvents = new EventStream<RateLimiterAcquiredEvent>();
  private readonly waitEvents = new EventStream<RateLimiterWaitEvent>();
  private readonly refusedEvents = new EventStream<RateLimiterRefusedEvent>();
  private readonly drainedEvents = new EventStream<RateLimiterDrainedEvent>();
  private readonly storeFailureEvents = new EventStream<RateLimiterStoreFailureEvent>();
  private readonly configEvents = new EventStream<ConfigChangedEvent<RateLimiterConfig>>();

  /** Fires when a caller gets its permits (after any wait). */
  readonly onSuccess: EventSubscriber<RateLimiterAcquiredEvent> = this.acquiredEvents.subscribe;
  /** A caller starts waiting for permits it reserved in a later period (told in the caller's own context). */
  readonly onWait: EventSubscriber<RateLimiterWaitEvent> = this.waitEvents.subscribe;
  /** Fires when a caller is refused. */
  readonly onFailure: EventSubscriber<RateLimiterRefusedEvent> = this.refusedEvents.subscribe;
  /** Same as {@link RateLimiterPolicy.onFailure}, under the name the other policies use for refusals. */
  readonly onCallNotPermitted: EventSubscriber<RateLimiterRefusedEvent> = this.onFailure;
  /** Fires when the permits left in a period are drained. */
  readonly onDrained: EventSubscriber<RateLimiterDrainedEvent> = this.drainedEvents.subscribe;
  /** Fires when a shared instance's store fails or does not answer in time (the module logs it). */
  readonly onStoreFailure: EventSubscriber<RateLimiterStoreFailureEvent> = this.storeFailureEvents.subscribe;
  /** Fires when its settings change (`CONFIG_CHANGED`), `changeLimitForPeriod` and `changeTimeoutDuration` included. */
  readonly onConfigChanged: EventSubscriber<ConfigChangedEvent<RateLimiterConfig>> = this.configEvents.subscribe;

  private settings: Readonly<RateLimiterConfig>;
  private limit: number;
  private timeoutNs: number;
  private periodNs: number;
  private origin: number;
  private readonly singlePermit: RateLimiterAcquiredEvent;
  /** The name the store keeps this limiter's permits under. */
  private readonly storeName: string;
  private cycle = 0;
  private permits: number;
  private waiting = 0;
  // Shared instances: the store's last answer, and when (on this clock) its period ends.
  private sharedPermits: number;
  private sharedPeriodEndsAt = Number.NEGATIVE_INFINITY;

  /**
   * @param name - the instance name, carried by its errors and events (and the store key when shared)
   * @param config - resolved settings (durations in ms)
   * @param clock - the source of time; periods count from its reading now
   * @param store - where a `shared` instance keeps its permits
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    config: RateLimiterConfig,
    private readonly clock: Clock,
    private store?: RateLimiterStore,
    /** The key this instance serves, for an instance used per key (`key` on a decorator, `{ key }` on a registry getter); else undefined. */
    readonly key?: string,
  ) {
    this.settings = Object.freeze({ ...config });
    this.limit = config.limitForPeriod;
    this.periodNs = Math.round(config.limitRefreshPeriod * NANOS_PER_MS);
    this.timeoutNs = Math.round(config.timeoutDuration * NANOS_PER_MS);
    this.origin = clock.now();
    this.permits = config.limitForPeriod;
    this.sharedPermits = config.limitForPeriod;
    this.singlePermit = Object.freeze({ name, key, numberOfPermits: 1 });
    // Each key of a shared limiter has its own limit in the store.
    this.storeName = key === undefined ? name : `${name}\u0000${key}`;
  }

  /** The settings this rate limiter runs with (a new object after each change). */
  get config(): Readonly<RateLimiterConfig> {
    return this.settings;
  }

  /** @internal True when it has a `drainPermissionsOnResult` to offer each permitted call's outcome to. */
  get drains(): boolean {
    return this.settings.drainPermissionsOnResult !== undefined;
  }

  /** True when the permits are kept in the module's `rateLimiterStore`. */
  get shared(): boolean {
    return this.store !== undefined;
  }

  /** Permits left in the current period and callers waiting. */
  get metrics(): RateLimiterMetrics {
    const { availablePermissions, numberOfWaitingThreads } = this.detailedMetrics;
    return { availablePermissions, numberOfWaitingThreads };
  }

  /** {@link RateLimiterPolicy.metrics} plus the wait for one permit and the current period. */
  get detailedMetrics(): RateLimiterDetailedMetrics {
    const nowNs = this.nanos();
    const cycle = Math.floor(nowNs / this.periodNs);
    let available: number;
    if (this.store === undefined) {
      available =
        cycle === this.cycle ? this.permits : Math.min(this.permits + (cycle - this.cycle) * this.limit, this.limit);
    } else {
      const now = this.clock.now();
      const periodMs = this.periodNs / NANOS_PER_MS;
      available =
        now < this.sharedPeriodEndsAt
          ? this.sharedPermits
          : Math.min(
              this.sharedPermits + (1 + Math.floor((now - this.sharedPeriodEndsAt) / periodMs)) * this.limit,
              this.limit,
            );
    }
    return {
      availablePermissions: available,
      numberOfWaitingThreads: this.waiting,
      msToWait: this.nanosToWait(1, available, nowNs, cycle) / NANOS_PER_MS,
      cycle,
    };
  }

  /** Sets `limitForPeriod`; the current period keeps its permits, later ones get the new limit (as Resilience4j). */
  changeLimitForPeriod(limitForPeriod: number): void {
    this.change({ limitForPeriod });
  }

  /** Sets `timeoutDuration` (ms or a duration string) for callers from now on. */
  changeTimeoutDuration(timeoutDuration: Duration): void {
    this.change({ timeoutDuration });
  }

  /**
   * @internal Runs with `config` from calls that start now on. The current
   * period keeps its permits and its end; the periods after it have the new
   * limit and length. `store` is where a `shared` config keeps its permits.
   * Publishes `CONFIG_CHANGED`; returns its event, or undefined when nothing differs.
   */
  reconfigure(
    config: RateLimiterConfig,
    store: RateLimiterStore | undefined = this.store,
  ): ConfigChangedEvent<RateLimiterConfig> | undefined {
    const before = this.settings;
    const changed = changedSettings(before, config);
    if (changed.length === 0) return undefined;
    const periodNs = Math.round(config.limitRefreshPeriod * NANOS_PER_MS);
    if (periodNs !== this.periodNs) {
      const cycle = Math.floor(this.nanos() / this.periodNs);
      if (cycle !== this.cycle) this.refresh(cycle);
      // Periods of the new length count from the end of the current one, which is cycle -1 until then.
      this.origin += ((cycle + 1) * this.periodNs) / NANOS_PER_MS;
      this.cycle = -1;
      this.periodNs = periodNs;
    }
    this.settings = Object.freeze({ ...config });
    this.limit = config.limitForPeriod;
    this.timeoutNs = Math.round(config.timeoutDuration * NANOS_PER_MS);
    this.store = config.shared ? store : undefined;
    return publishConfigChange(this.configEvents, 'rateLimiter', this, before, this.settings, changed);
  }

  /** Applies `patch` to its settings, checked as the options are. */
  private change(patch: object): void {
    const place = instancePlace('rateLimiter', 'instance', this.name);
    this.reconfigure(applyOverrides(RATE_LIMITER_SCHEMA, this.settings, patch, place, () => undefined));
  }

  /** @internal Its events on the telemetry channel, under Resilience4j's event type names. */
  tapEvents(tap: EventTap): Unsubscribe[] {
    const into: Unsubscribe[] = [];
    tapStream(into, tap, 'SUCCESSFUL_ACQUIRE', this.onSuccess);
    tapStream(into, tap, 'FAILED_ACQUIRE', this.onFailure);
    tapStream(into, tap, 'DRAINED', this.onDrained);
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
      this.onWait(({ name, waitMs }) =>
        trace.event(E.rateLimiterWaited, {
          [A.policy]: 'rate_limiter',
          [A.instance]: name,
          [A.rateLimiterWaitMs]: waitMs,
        }),
      ),
      this.onFailure(({ name, error }) =>
        trace.failure(E.rateLimiterRejected, { [A.policy]: 'rate_limiter', [A.instance]: name }, error),
      ),
    ];
  }

  /** @internal What it logs, when shared: the start and end of each episode of store failures, with the store's own text. */
  logEvents(log: TelemetryLog): Unsubscribe[] {
    if (!this.shared) return [];
    const failed = log.episode<RateLimiterStoreFailureEvent>(
      (onActivity) => onEither(this.onSuccess, this.onFailure, onActivity),
      (first) => log.warn(RATE_LIMITER_STORE_FAILING(this.name, errorText(first.error), first.failedOpen)),
      (count, ms) => log.log(RATE_LIMITER_STORE_ANSWERING(this.name, count, ms)),
    );
    return [this.onStoreFailure((event) => failed(event))];
  }

  /** @internal Its row in the health check of rate limiters, with `registerHealthIndicator`: its health and permits. */
  healthReport(): HealthReport | undefined {
    if (!this.config.registerHealthIndicator) return undefined;
    const { availablePermissions, numberOfWaitingThreads, msToWait } = this.detailedMetrics;
    let status: RateLimiterHealthStatus = 'UNKNOWN';
    if (availablePermissions > 0 || numberOfWaitingThreads === 0) status = 'UP';
    else if (msToWait > this.config.timeoutDuration)
      status = this.config.allowHealthIndicatorToFail ? 'DOWN' : 'RATE_LIMITED';
    const row: RateLimiterHealth = { status, availablePermissions, numberOfWaitingThreads };
    return { check: 'rateLimiters', row };
  }

  /** The engine over this policy alone, made on the first `execute`. */
  private solo: Pipeline | undefined;

  /**
   * Runs `fn` once a permit is granted; rejects with {@link RateLimitedError} when none comes in time. `fn` receives the attempt's signal; `options.signal` lets a caller
   * outside any request scope cancel the call.
   */
  execute<R>(fn: AttemptFunction<R>, options?: ExecuteOptions): Promise<R> {
    return executeThrough((this.solo ??= soloPipeline({ rateLimiter: this }, this.clock)), this.clock, fn, options);
  }

  /**
   * @internal Gives back the permit of a call that ended with no outcome:
   * nothing started, or its caller cancelled it while it ran.
   */
  releasePermit(): void {
    this.giveBack(1);
  }

  /**
   * @internal Takes a free permit of the current period without waiting; false when
   * there is none (nothing is reserved then) or the instance is shared.
   *
   * @param now - the clock's reading, when the caller has just taken one
   */
  tryAcquire(now = this.clock.now()): boolean {
    if (this.store !== undefined) return false;
    const cycle = Math.floor(Math.round((now - this.origin) * NANOS_PER_MS) / this.periodNs);
    if (cycle !== this.cycle) this.refresh(cycle);
    if (this.permits < 1) return false;
    this.permits--;
    if (this.acquiredEvents.active) this.acquiredEvents.emit(this.singlePermit);
    return true;
  }

  /**
   * @internal Resolves once `permits` are granted, after waiting for reserved ones if
   * need be; rejects with {@link RateLimitedError} (or
   * {@link DeadlineExceededError}) at once when they cannot come in time.
   * A caller that has cancelled, or cancels while it waits, rejects with its
   * `AbortError` and holds no permit.
   */
  waitForPermission(permits = 1): Promise<void> {
    this.checkPermits(permits);
    const scope = contextStorage.getStore();
    const cancelled = callerCancellation(scope);
    if (cancelled !== undefined) return Promise.reject(cancelled);
    if (this.store !== undefined) return this.acquireShared(permits, scope);
    const nowNs = this.nanos();
    const waitMs = this.reserveWithin(permits, nowNs);
    if (waitMs === REFUSED) return Promise.reject(this.localRefusal(permits, nowNs));
    return waitMs === 0 ? Promise.resolve() : this.sleep(waitMs, permits, scope);
  }

  /**
   * Resolves `true` once `permits` are granted, after waiting for reserved
   * ones if need be, or `false` at once when they cannot come in time
   * (Resilience4j's `acquirePermission`); a cancelled caller's `AbortError`
   * rejects, and it holds no permit.
   */
  acquirePermission(permits = 1): Promise<boolean> {
    this.checkPermits(permits);
    const scope = contextStorage.getStore();
    const cancelled = callerCancellation(scope);
    if (cancelled !== undefined) return Promise.reject(cancelled);
    if (this.store !== undefined) return this.acquireShared(permits, scope).then(granted, refusedAsFalse);
    const nowNs = this.nanos();
    const waitMs = this.reserveWithin(permits, nowNs);
    if (waitMs === REFUSED) {
      // The answer is false: an error is built only for a listener that receives it.
      if (this.refusedEvents.active) this.localRefusal(permits, nowNs);
      return FALSE;
    }
    return waitMs === 0 ? TRUE : this.sleep(waitMs, permits, scope).then(granted, refusedAsFalse);
  }

  /**
   * Resilience4j's `reservePermission`: reserves `permits` when they come
   * within `timeoutDuration` and returns the ms to wait for them (0: now),
   * or -1 when they do not (nothing reserved). The caller does the waiting.
   * Not for shared instances (the store answers asynchronously).
   */
  reservePermission(permits = 1): number {
    this.checkPermits(permits);
    if (this.store !== undefined) throw new Error(RESERVE_ON_SHARED(this.name));
    const nowNs = this.nanos();
    const waitNs = this.reserve(permits, nowNs, this.timeoutNs);
    if (waitNs === REFUSED) {
      // The answer is -1: an error is built only for a listener that receives it.
      if (this.refusedEvents.active) this.refused(permits, this.limitedError(nowNs));
      return REFUSED;
    }
    this.acquired(permits);
    return waitNs / NANOS_PER_MS;
  }

  /** Drains the permits left in the current period (Resilience4j's `drainPermissions`); reservations stand. */
  drainPermissions(): Promise<void> {
    if (this.store !== undefined) {
      return this.storeCall(0, true).then((answer) => {
        if (answer !== undefined && this.drainedEvents.active)
          this.drainedEvents.emit({ name: this.name, key: this.key, numberOfPermits: answer.drained });
      });
    }
    const cycle = Math.floor(this.nanos() / this.periodNs);
    if (cycle !== this.cycle) this.refresh(cycle);
    const drained = Math.max(this.permits, 0);
    this.permits -= drained;
    if (this.drainedEvents.active)
      this.drainedEvents.emit({ name: this.name, key: this.key, numberOfPermits: drained });
    return Promise.resolve();
  }

  /** @internal Offers a permitted call's outcome to `drainPermissionsOnResult`. */
  drainIfNeeded(failed: boolean, value: unknown): void {
    const predicate = this.settings.drainPermissionsOnResult;
    if (predicate === undefined) return;
    const outcome: RateLimitedCallOutcome = failed ? { failed, error: value } : { failed, result: value };
    let drain = false;
    try {
      drain = predicate(outcome) === true;
    } catch {
      // a broken predicate must not change the outcome of the call it looks at
    }
    if (drain) this.drainPermissions().catch(() => undefined);
  }

  /** Elapsed ns since creation, whole: Resilience4j's periods are whole nanoseconds. */
  private nanos(): number {
    return Math.round((this.clock.now() - this.origin) * NANOS_PER_MS);
  }

  private refresh(cycle: number): void {
    this.permits = Math.min(this.permits + (cycle - this.cycle) * this.limit, this.limit);
    this.cycle = cycle;
  }

  /** ns until `permits` are free given `available` now (0 when they are). */
  private nanosToWait(permits: number, available: number, nowNs: number, cycle: number): number {
    if (available >= permits) return 0;
    const toNextCycle = (cycle + 1) * this.periodNs - nowNs;
    const fullCycles = Math.max(0, Math.ceil((permits - available - this.limit) / this.limit));
    return fullCycles * this.periodNs + toNextCycle;
  }

  /** Reserves `permits` when they come within `limitNs`; returns the ns to wait, or REFUSED. */
  private reserve(permits: number, nowNs: number, limitNs: number): number {
    const cycle = Math.floor(nowNs / this.periodNs);
    if (cycle !== this.cycle) this.refresh(cycle);
    const waitNs = this.nanosToWait(permits, this.permits, nowNs, cycle);
    if (waitNs > limitNs) return REFUSED;
    this.permits -= permits;
    return waitNs;
  }

  /** Reserves within `timeoutDuration` and the request deadline; returns the ms to wait, or `REFUSED` with nothing reserved. */
  private reserveWithin(permits: number, nowNs: number): number {
    const scope = policyScope();
    const remainingMs = scope === undefined ? Number.POSITIVE_INFINITY : scope.aborted ? 0 : scope.remaining();
    // The wait must end strictly before the deadline, or the call behind it has no time left.
    const deadlineNs =
      remainingMs === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : Math.ceil(remainingMs * NANOS_PER_MS) - 1;
    const waitNs = this.reserve(permits, nowNs, Math.min(this.timeoutNs, deadlineNs));
    if (waitNs !== REFUSED) {
      if (waitNs === 0) this.acquired(permits);
      return waitNs / NANOS_PER_MS;
    }
    return REFUSED;
  }

  /** The refusal of a local reservation made at `nowNs`: the deadline's when `timeoutDuration` alone would have allowed the wait. */
  private get stackTraces(): boolean {
    return this.settings.writableStackTraceEnabled !== false;
  }

  private localRefusal(permits: number, nowNs: number): RateLimitedError | DeadlineExceededError {
    const wantedNs = this.nanosToWait(permits, this.permits, nowNs, this.cycle);
    return this.refused(permits, wantedNs <= this.timeoutNs ? this.deadlineError() : this.limitedError(nowNs));
  }

  private async acquireShared(permits: number, scope: ResilienceContext | undefined): Promise<void> {
    const answer = await this.storeCall(permits, false, scope);
    // Failing open: the store could not answer, the call goes ahead.
    if (answer === undefined) return this.acquired(permits);
    if (!answer.reserved) {
      const error =
        answer.waitMs <= this.settings.timeoutDuration
          ? this.deadlineError()
          : new RateLimitedError(this.name, answer.nextPeriodInMs);
      throw this.refused(permits, error);
    }
    if (answer.waitMs === 0) return this.acquired(permits);
    // The store's answer took some of the time left; the wait must still end before the deadline.
    if (scope !== undefined && answer.waitMs >= scope.remaining()) throw this.refused(permits, this.deadlineError());
    return this.sleep(answer.waitMs, permits, scope);
  }

  /**
   * One acquire (or drain) in the store, bounded by `storeTimeout` and the
   * request deadline. `undefined` when the store failed and the instance
   * fails open; throws the refusal when it fails closed. A caller in `scope`
   * that cancels meanwhile stops waiting at once with its `AbortError`;
   * what the store reserves for it afterwards is given back.
   */
  private storeCall(
    permits: number,
    drain: boolean,
    scope: ResilienceContext | undefined = contextStorage.getStore(),
  ): Promise<RateLimiterStoreAnswer | undefined> {
    const store = this.store as RateLimiterStore;
    const remainingMs = scope === undefined ? Number.POSITIVE_INFINITY : scope.aborted ? 0 : scope.remaining();
    if (remainingMs === 0) return Promise.reject(this.refused(permits, this.deadlineError()));
    const byDeadline = remainingMs < this.settings.storeTimeout;
    const limitMs = byDeadline ? remainingMs : this.settings.storeTimeout;
    const limit = this.limit;
    const limitRefreshPeriodMs = this.periodNs / NANOS_PER_MS;
    this.waiting++;
    return new Promise((resolve, reject) => {
      let settled = false;
      const timer = this.clock.setTimeout(() => fail(new Error(STORE_TIMED_OUT(limitMs)), byDeadline), limitMs);
      const onAbort = (): void => {
        settled = true;
        this.waiting--;
        this.clock.clearTimeout(timer);
        reject(callerAbortError(scope!.reason));
      };
      scope?.watch(onAbort);
      const fail = (cause: unknown, deadline: boolean): void => {
        if (settled) return;
        settled = true;
        this.waiting--;
        this.clock.clearTimeout(timer);
        scope?.unwatch(onAbort);
        if (deadline) {
          reject(this.refused(permits, this.deadlineError()));
          return;
        }
        const failOpen = this.settings.failOpen;
        if (this.storeFailureEvents.active)
          this.storeFailureEvents.emit({ name: this.name, key: this.key, error: cause, failedOpen: failOpen });
        if (failOpen) resolve(undefined);
        // The store's own text stays in `cause` and the log: clients read the message.
        else
          reject(
            this.refused(
              permits,
              new RateLimitedError(this.name, undefined, { cause, message: STORE_UNAVAILABLE(this.name) }),
            ),
          );
      };
      store
        .acquire({
          name: this.storeName,
          permits,
          limitForPeriod: limit,
          limitRefreshPeriodMs,
          timeoutMs: Math.min(this.settings.timeoutDuration, Math.max(0, remainingMs - 1e-6)),
          drain,
        })
        .then(
          (answer) => {
            if (settled) {
              // The caller gave up on this acquire: permits it took now are given back, never charged late.
              if (answer.reserved) this.releaseShared(permits, limit);
              return;
            }
            settled = true;
            this.waiting--;
            this.clock.clearTimeout(timer);
            scope?.unwatch(onAbort);
            this.sharedPermits = answer.availablePermissions;
            this.sharedPeriodEndsAt = this.clock.now() + answer.nextPeriodInMs;
            resolve(answer);
          },
          (error: unknown) => fail(error, false),
        );
    });
  }

  /**
   * Waits `waitMs` for `permits` reserved of a later period. Under a scope,
   * its cancellation ends the wait at once: the permits go back and the
   * wait rejects with the `AbortError` caused by the scope's reason.
   */
  private sleep(waitMs: number, permits: number, scope: ResilienceContext | undefined): Promise<void> {
    this.waiting++;
    if (this.waitEvents.active) this.waitEvents.emit({ name: this.name, key: this.key, waitMs });
    if (scope === undefined)
      return new Promise<void>((resolve) => {
        this.clock.setTimeout(() => {
          this.waiting--;
          this.acquired(permits);
          resolve();
        }, waitMs);
      });
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.clock.clearTimeout(timer);
        this.waiting--;
        this.giveBack(permits);
        reject(callerAbortError(scope.reason));
      };
      const timer = this.clock.setTimeout(() => {
        scope.unwatch(onAbort);
        this.waiting--;
        this.acquired(permits);
        resolve();
      }, waitMs);
      scope.watch(onAbort);
    });
  }

  /** Gives back `permits` reserved by a caller that stopped waiting for them. */
  private giveBack(permits: number): void {
    if (this.store !== undefined) {
      this.releaseShared(permits, this.limit);
      return;
    }
    const cycle = Math.floor(this.nanos() / this.periodNs);
    if (cycle !== this.cycle) this.refresh(cycle);
    this.permits = Math.min(this.permits + permits, this.limit);
  }

  /** Gives `permits` back to the store, when it can take them; its failure changes nothing for the caller. */
  private releaseShared(permits: number, limitForPeriod: number): void {
    const store = this.store as RateLimiterStore;
    if (store.release === undefined) return;
    const limitRefreshPeriodMs = this.periodNs / NANOS_PER_MS;
    Promise.resolve()
      .then(() => store.release?.({ name: this.storeName, permits, limitForPeriod, limitRefreshPeriodMs }))
      .catch(() => undefined);
  }

  private checkPermits(permits: number): void {
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError(BAD_PERMITS(this.name, permits));
  }

  private acquired(permits: number): void {
    if (this.acquiredEvents.active)
      this.acquiredEvents.emit(
        permits === 1 ? this.singlePermit : { name: this.name, key: this.key, numberOfPermits: permits },
      );
  }

  private refused<E extends RateLimitedError | DeadlineExceededError>(permits: number, error: E): E {
    refusal(error);
    if (this.refusedEvents.active)
      this.refusedEvents.emit({ name: this.name, key: this.key, numberOfPermits: permits, error });
    return error;
  }

  private limitedError(nowNs: number): RateLimitedError {
    const cycle = Math.floor(nowNs / this.periodNs);
    return refusalError(
      this.stackTraces,
      RateLimitedError,
      this.name,
      ((cycle + 1) * this.periodNs - nowNs) / NANOS_PER_MS,
    );
  }

  private deadlineError(): DeadlineExceededError {
    return refusalError(
      this.stackTraces,
      DeadlineExceededError,
      this.name,
      'no rate limiter permit comes before the deadline',
    );
  }
}
