import { AsyncLocalStorage } from 'node:async_hooks';
import { Observable } from 'rxjs';
import { Clock } from '../../kernel/clock';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { EventStream, EventSubscriber } from '../../kernel/events';
import { changedSettings, ConfigChangedEvent, publishConfigChange, sameSetting } from '../../kernel/config-change';
import { AttemptFunction, executeUnder } from '../../kernel/policy';
import { callerAbortError, ExecuteOptions } from '../../kernel/cancellation';
import { RetryBudget, RetryBudgetConfig } from '../../kernel/retry-budget';
import { HedgeConfig, quantileOf } from './hedge.config';
import { HedgeAttempt, HedgeRun } from './hedge-run';
import { HedgedObservable } from './hedge.operator';
import { LatencyWindow } from './latency-window';
import type { HedgeBudgetDeniedEvent, HedgeEvent, HedgeWinnerEvent } from './hedge.events';

/** Counters of a hedge instance. */
export interface HedgeMetrics {
  /** Hedges started (attempts beyond the first). */
  hedged: number;
  /** Calls answered by a hedge rather than by their first attempt. */
  winner: number;
  /** Attempts cancelled because another attempt of their call answered first. */
  cancelled: number;
  /** Hedges the retry budget refused. */
  budgetDenied: number;
}

/**
 * Sends another copy of a slow call after `delay` with no answer, up to
 * `maxHedgedAttempts` copies, and takes the first answer; the other
 * attempts' signals are aborted. A failed attempt hands over to the next at
 * once. Every hedge withdraws a token from a retry budget, so hedging never
 * adds more load than the budget's ratio allows. Each attempt runs in its own
 * scope under the caller's, so the request deadline bounds every one of
 * them and `currentSignal()` inside an attempt is that attempt's signal.
 *
 * A caller that has cancelled (its request scope, or `execute(fn, { signal })`)
 * starts nothing. One that cancels while the call runs ends it at once: the
 * hedge timer stops, every running attempt's signal is aborted, no hedge
 * starts, and the call rejects with the error of the last attempt that
 * reached the method when one failed, else with the caller's `AbortError`
 * (`callerAbortError`); later answers are dropped. A cancellation's own
 * `AbortError` is never handed over to a hedge.
 *
 * The instance of one key (`@Hedge(name, { key })`, `registry.hedge(name, { key })`)
 * keeps latencies and a budget of its own, and its events carry `key`.
 *
 * Its settings change while it runs through `registry.reconfigure('hedge', name, patch)`
 * and `registry.applyOptions`: a call runs under the settings in force when it started.
 */
export class HedgePolicy {
  private settings: HedgeConfig;
  private latencies?: LatencyWindow;
  private budgetOf: () => RetryBudget;
  private readonly counters: HedgeMetrics = { hedged: 0, winner: 0, cancelled: 0, budgetDenied: 0 };
  private readonly hedgeStream = new EventStream<HedgeEvent>();
  private readonly winnerStream = new EventStream<HedgeWinnerEvent>();
  private readonly deniedStream = new EventStream<HedgeBudgetDeniedEvent>();
  private readonly configStream = new EventStream<ConfigChangedEvent<HedgeConfig>>();

  /** A hedge started. */
  readonly onHedge = this.hedgeStream.subscribe;
  /** A call that started a hedge got a successful answer. */
  readonly onWinner = this.winnerStream.subscribe;
  /** A hedge was refused by the retry budget. */
  readonly onBudgetDenied = this.deniedStream.subscribe;
  /** Its settings changed (`CONFIG_CHANGED`). */
  readonly onConfigChanged: EventSubscriber<ConfigChangedEvent<HedgeConfig>> = this.configStream.subscribe;

  /**
   * @param name - instance name
   * @param config - resolved settings
   * @param clock - time source for delays and latencies
   * @param budget - the retry budget hedges withdraw from, or what answers it when a hedge is due (a retry key's budget, which an eviction may replace)
   * @param refills - successful calls deposit into `budget` (false when it is a retry instance's, which refills it)
   * @param key - the key this instance serves, for an instance used per key
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    config: HedgeConfig,
    /** The time source for delays and latencies. */
    readonly clock: Clock,
    budget: RetryBudget | (() => RetryBudget),
    private refills: boolean,
    /** The key this instance serves, for an instance used per key (`key` on `@Hedge`, `{ key }` on `registry.hedge`); else undefined. */
    readonly key?: string,
  ) {
    this.settings = config;
    this.budgetOf = typeof budget === 'function' ? budget : () => budget;
    if (typeof config.delay === 'string')
      this.latencies = new LatencyWindow(config.latencyWindowSize, quantileOf(config.delay));
  }

  /** The resolved settings in force (durations in ms). */
  get config(): HedgeConfig {
    return this.settings;
  }

  /**
   * @internal Runs with `config` from calls that start now on; a call
   * already hedging goes on under the settings it started with. The
   * latencies known so far are kept (the latest of them, in a smaller
   * window); a percentile delay that follows a fixed one starts with none,
   * which the event says (`windowReset`). A budget of its own keeps its
   * tokens (down to a lower `maxTokens`); one given anew starts half full.
   * A `budget` that comes to name a retry instance draws from what
   * `retryBudget` answers for that name: its budget, or what answers it when
   * a hedge is due. Publishes `CONFIG_CHANGED`; returns its event, or
   * undefined when nothing differs.
   */
  reconfigure(
    config: HedgeConfig,
    retryBudget: (retry: string) => RetryBudget | (() => RetryBudget),
  ): ConfigChangedEvent<HedgeConfig> | undefined {
    const before = this.settings;
    const changed = changedSettings(before, config);
    if (changed.length === 0) return undefined;
    this.settings = config;
    const hadLatencies = this.latencies !== undefined;
    this.latencies =
      typeof config.delay === 'number'
        ? undefined
        : (this.latencies?.resized(config.latencyWindowSize, quantileOf(config.delay)) ??
          new LatencyWindow(config.latencyWindowSize, quantileOf(config.delay)));
    if (!sameSetting(before.budget, config.budget))
      this.drawFrom(typeof config.budget === 'string' ? retryBudget(config.budget) : config.budget);
    const windowReset = typeof config.delay === 'number' ? undefined : !hadLatencies;
    return publishConfigChange(this.configStream, 'hedge', this, before, config, changed, windowReset);
  }

  /**
   * Hedges draw from `budget` from now on: a budget of its own (settings: the
   * one it has, resized, or a new one), or a retry's (the budget, or what answers it).
   */
  private drawFrom(budget: RetryBudgetConfig | RetryBudget | (() => RetryBudget)): void {
    if (budget instanceof RetryBudget || typeof budget === 'function') {
      this.budgetOf = typeof budget === 'function' ? budget : () => budget;
      this.refills = false;
      return;
    }
    if (this.refills) {
      this.budgetOf().reconfigure(budget);
      return;
    }
    const own = new RetryBudget(budget);
    this.budgetOf = () => own;
    this.refills = true;
  }

  /** A snapshot of the counters. */
  get metrics(): HedgeMetrics {
    return { ...this.counters };
  }

  /** Tokens left in the budget hedges draw from. */
  get budgetTokens(): number {
    return this.budgetOf().tokens;
  }

  /** The delay before the next hedge now, in ms: the fixed one, or the percentile (`Infinity` until enough latencies are known). */
  get currentDelay(): number {
    return this.delayUnder(this.settings);
  }

  /**
   * @internal The delay before the next hedge now of a call that started under
   * `settings`: their fixed delay, or the percentile of the latencies known
   * (`Infinity` until enough are, or once the delay in force is fixed).
   */
  delayUnder(settings: HedgeConfig): number {
    const delay = settings.delay;
    return typeof delay === 'number' ? delay : (this.latencies?.percentile() ?? Number.POSITIVE_INFINITY);
  }

  /**
   * Runs `fn` hedged. `fn` receives the attempt's signal; `options.signal` lets a caller
   * outside any request scope cancel the call.
   */
  execute<R>(fn: AttemptFunction<R>, options?: ExecuteOptions): Promise<R> {
    return executeUnder(this, this.clock, fn, options);
  }

  /**
   * @internal Runs `next(arg)` hedged: each attempt calls `next(arg)` in its own scope.
   * A caller that has cancelled gets its `AbortError` and nothing runs; one
   * that cancels meanwhile ends the call at once (see {@link HedgePolicy}).
   */
  call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    const parent = contextStorage.getStore();
    if (parent?.aborted === true) return Promise.reject(callerAbortError(parent.reason));
    return new HedgedCall(this, next, arg, parent).start();
  }

  /**
   * @internal Runs each subscription of `source` hedged: a subscription that has
   * emitted nothing after the delay gets a second subscription beside it;
   * the first to emit (or complete) is kept and the others unsubscribed.
   */
  observe<T>(source: Observable<T>): Observable<T> {
    return new HedgedObservable(this, source);
  }

  /** @internal True while someone listens to the hedges or answers. */
  get observed(): boolean {
    return this.hedgeStream.active || this.winnerStream.active;
  }

  /** @internal Records how long an attempt took (or ran before it was cancelled). */
  recordLatency(ms: number): void {
    this.latencies?.record(ms);
  }

  /**
   * @internal Whether attempt `attempt` of a call under `parent` may start
   * now (the call has checked that its settings allow it): time is left
   * before the deadline, and the budget gives a token (counted and
   * published when it does not).
   */
  admitHedge(attempt: number, parent: ResilienceContext | undefined): boolean {
    if (parent !== undefined && (parent.aborted || parent.remaining() <= 0)) return false;
    if (!this.budgetOf().tryWithdraw()) {
      this.counters.budgetDenied++;
      if (this.deniedStream.active) this.deniedStream.emit({ name: this.name, key: this.key, attempt });
      return false;
    }
    return true;
  }

  /** @internal A hedge started. */
  hedged(attempt: number, waitedMs: number): void {
    this.counters.hedged++;
    if (this.hedgeStream.active) this.hedgeStream.emit({ name: this.name, key: this.key, attempt, waitedMs });
  }

  /**
   * @internal A call ended: attempt `attempt` answered it (`success`, or its
   * error ends the call), `cancelled` attempts were cut off, `started` were made.
   */
  answered(attempt: number, cancelled: number, started: number, success: boolean): void {
    if (success && this.refills) this.budgetOf().onSuccess();
    this.counters.cancelled += cancelled;
    if (!success || started === 1) return;
    if (attempt > 1) this.counters.winner++;
    if (this.winnerStream.active) this.winnerStream.emit({ name: this.name, key: this.key, attempt, cancelled });
  }
}

/** The state of one hedged call: its attempts, the hedge timer and the error to end with. */
class HedgedCall<A, R> extends HedgeRun {
  private done = false;
  private resolve!: (value: R) => void;
  private reject!: (error: unknown) => void;

  constructor(
    policy: HedgePolicy,
    private readonly next: (arg: A) => R | PromiseLike<R>,
    private readonly arg: A,
    parent: ResilienceContext | undefined,
  ) {
    super(policy, parent, policy.observed ? AsyncLocalStorage.snapshot() : undefined);
  }

  protected get decided(): boolean {
    return this.done;
  }

  start(): Promise<R> {
    const promise = new Promise<R>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    if (this.parent !== undefined) this.followParent(this.parent);
    this.launch();
    return promise;
  }

  protected cancelled(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.reject(error);
  }

  protected launch(): void {
    const attempt = this.newAttempt();
    let pending: R | PromiseLike<R>;
    try {
      pending = contextStorage.run(attempt.scope, this.next, this.arg);
    } catch (error) {
      this.failed(attempt, error);
      return;
    }
    Promise.resolve(pending).then(
      (value) => this.succeeded(attempt, value),
      (error: unknown) => this.failed(attempt, error),
    );
  }

  private succeeded(attempt: HedgeAttempt, value: R): void {
    this.settle(attempt);
    if (this.done) return;
    this.finish(attempt, true);
    this.resolve(value);
  }

  private failed(attempt: HedgeAttempt, error: unknown): void {
    this.settle(attempt);
    if (this.done) return;
    const end = this.failure(attempt, error);
    if (end === undefined) return;
    this.finish(attempt, false);
    this.reject(end.error);
  }

  /** Ends the call with `winner`'s outcome: the timer stops and every other running attempt is cancelled. */
  private finish(winner: HedgeAttempt, success: boolean): void {
    this.done = true;
    this.clearTimer();
    this.stopFollowing();
    const cancelled = this.cancelLosers(winner, this.policy.clock.now());
    this.policy.answered(winner.number, cancelled, this.attempts.length, success);
  }
}
