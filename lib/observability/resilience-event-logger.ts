import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import type { CircuitBreakerStateTransitionEvent } from '../policies/circuit-breaker/circuit-breaker.events';
import { Clock } from '../kernel/clock';
import type { ConfigChangedEvent } from '../kernel/config-change';
import { IdempotencyStoreUnavailableError } from '../kernel/errors';
import { EventSubscriber, Unsubscribe } from '../kernel/events';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import type { RateLimiterStoreFailureEvent } from '../policies/rate-limiter/rate-limiter.events';
import { InstanceCatalog, ObservedInstance } from './instance-catalog';
import {
  BREAKER_TRANSITION,
  BUDGET_EXHAUSTED,
  BUDGET_RECOVERED,
  BULKHEAD_RECOVERED,
  BULKHEAD_SATURATED,
  CONFIG_CHANGED,
  IDEMPOTENCY_STORE_ANSWERING,
  IDEMPOTENCY_STORE_FAILING,
  RATE_LIMITER_STORE_ANSWERING,
  RATE_LIMITER_STORE_FAILING,
} from './observability.messages';
import { readLoggingOptions, ResolvedLoggingOptions } from './observability.options';

/**
 * A run of events (budget denials, bulkhead rejections) reported twice: at
 * the first one, and at the first sign of activity (`watchActivity`) once
 * none has happened for `quietMs`, with the count. However many calls are
 * refused, that is two log lines per episode, and no timer is needed: the
 * activity listener exists only while an episode lasts.
 */
class Episode<T> {
  private count = 0;
  private startedAt = 0;
  private lastAt = 0;
  private stopWatching: Unsubscribe | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly quietMs: number,
    private readonly watchActivity: (onActivity: () => void) => Unsubscribe,
    private readonly onStart: (first: T) => void,
    private readonly onEnd: (count: number, durationMs: number) => void,
  ) {}

  hit(detail: T): void {
    const now = this.clock.now();
    this.lastAt = now;
    this.count++;
    if (this.stopWatching !== undefined) return;
    this.startedAt = now;
    this.onStart(detail);
    this.stopWatching = this.watchActivity(this.activity);
  }

  dispose(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
  }

  private readonly activity = (): void => {
    if (this.clock.now() - this.lastAt < this.quietMs) return;
    this.dispose();
    this.onEnd(this.count, this.lastAt - this.startedAt);
    this.count = 0;
  };
}

/**
 * Logs, through Nest's `Logger`, what an operator needs to see as it
 * happens, never once per call: every circuit breaker transition, every
 * change of an instance's settings (one line naming the keys), and the
 * start and end of each episode of retry-budget denials, of bulkhead
 * saturation and of store failures (a shared rate limiter's, the
 * idempotency store's), with the instance name. A store's own error text is
 * logged here and never sent to clients. Module option `logging`.
 */
@Injectable()
export class ResilienceEventLogger implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('ResilienceModule');
  private readonly options: ResolvedLoggingOptions;
  private readonly subscriptions: Unsubscribe[] = [];
  private readonly episodes: Array<Episode<unknown>> = [];

  /** @internal */
  constructor(
    private readonly catalog: InstanceCatalog,
    private readonly idempotency: IdempotencyRegistry,
  ) {
    this.options = readLoggingOptions(catalog.registry.options.extras.logging);
  }

  /** Starts watching every instance and the idempotency store (unless `logging` is off). */
  onApplicationBootstrap(): void {
    if (!this.options.enabled) return;
    this.subscriptions.push(this.catalog.watch((observed) => this.bind(observed)));
    this.watchIdempotencyStore();
  }

  /** Stops watching and drops pending episode ends. */
  onModuleDestroy(): void {
    for (const unsubscribe of this.subscriptions) unsubscribe();
    this.subscriptions.length = 0;
    for (const episode of this.episodes) episode.dispose();
    this.episodes.length = 0;
  }

  private bind(observed: ObservedInstance): void {
    // A method's own instances follow their name's change: the name's shared instance logs it, once. Caches are not reconfigured.
    if (observed.policy !== 'fallback' && observed.policy !== 'cache' && !observed.derived)
      this.subscriptions.push(
        observed.instance.onConfigChanged((event: ConfigChangedEvent) => this.logger.log(CONFIG_CHANGED(event))),
      );
    const clock = this.catalog.registry.clock;
    const quiet = this.options.quietPeriodMs;
    switch (observed.policy) {
      case 'circuitBreaker': {
        const breaker = observed.instance;
        this.subscriptions.push(breaker.onStateTransition((event) => this.transition(breaker, event)));
        break;
      }
      case 'retry': {
        const retry = observed.instance;
        if (retry.config.budget === undefined) break;
        const episode = new Episode<void>(
          clock,
          quiet,
          (onActivity) => onEither(retry.onSuccess, retry.onError, onActivity),
          () => this.logger.warn(BUDGET_EXHAUSTED(retry.name)),
          (count, ms) => this.logger.log(BUDGET_RECOVERED(retry.name, count, ms)),
        );
        this.episodes.push(episode as Episode<unknown>);
        this.subscriptions.push(retry.onRetryStopped((event) => event.reason === 'budget' && episode.hit()));
        break;
      }
      case 'bulkhead': {
        const bulkhead = observed.instance;
        const episode = new Episode<string>(
          clock,
          quiet,
          (onActivity) => bulkhead.onCallFinished(onActivity),
          (reason) => this.logger.warn(BULKHEAD_SATURATED(bulkhead.name, bulkhead.config.maxConcurrentCalls, reason)),
          (count, ms) => this.logger.log(BULKHEAD_RECOVERED(bulkhead.name, count, ms)),
        );
        this.episodes.push(episode as Episode<unknown>);
        // A waiter whose own deadline or signal fired did not find the bulkhead full.
        this.subscriptions.push(
          bulkhead.onCallRejected(
            (event) => (event.reason === 'queue-full' || event.reason === 'wait-timeout') && episode.hit(event.reason),
          ),
        );
        break;
      }
      case 'rateLimiter': {
        const limiter = observed.instance;
        if (!limiter.shared) break;
        const episode = new Episode<RateLimiterStoreFailureEvent>(
          clock,
          quiet,
          (onActivity) => onEither(limiter.onSuccess, limiter.onFailure, onActivity),
          (first) =>
            this.logger.warn(RATE_LIMITER_STORE_FAILING(limiter.name, errorText(first.error), first.failedOpen)),
          (count, ms) => this.logger.log(RATE_LIMITER_STORE_ANSWERING(limiter.name, count, ms)),
        );
        this.episodes.push(episode as Episode<unknown>);
        this.subscriptions.push(limiter.onStoreFailure((event) => episode.hit(event)));
        break;
      }
    }
  }

  /** One episode for the idempotency store: every failure before anything ran, or while settling a key. */
  private watchIdempotencyStore(): void {
    const episode = new Episode<IdempotencyStoreUnavailableError>(
      this.catalog.registry.clock,
      this.options.quietPeriodMs,
      (onActivity) => this.idempotency.onOutcome(onActivity),
      (first) =>
        this.logger.warn(
          IDEMPOTENCY_STORE_FAILING(first.message, first.cause === undefined ? undefined : errorText(first.cause)),
        ),
      (count, ms) => this.logger.log(IDEMPOTENCY_STORE_ANSWERING(count, ms)),
    );
    this.episodes.push(episode as Episode<unknown>);
    this.subscriptions.push(
      this.idempotency.onOutcome(({ error }) => {
        if (error instanceof IdempotencyStoreUnavailableError) episode.hit(error);
      }),
    );
  }

  private transition(breaker: CircuitBreakerPolicy, event: CircuitBreakerStateTransitionEvent): void {
    const message = BREAKER_TRANSITION(
      event.name,
      event.from,
      event.to,
      event.to === 'OPEN' ? breaker.metrics : undefined,
      breaker.openWaitMs,
    );
    if (event.to === 'OPEN' || event.to === 'FORCED_OPEN') this.logger.warn(message);
    else this.logger.log(message);
  }
}

/** An error's own text, for the log. */
function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Subscribes `listener` to two event streams; the returned function unsubscribes it from both. */
function onEither<A, B>(
  first: EventSubscriber<A>,
  second: EventSubscriber<B>,
  listener: (event: A | B) => void,
): Unsubscribe {
  const stopFirst = first(listener);
  const stopSecond = second(listener);
  return () => {
    stopFirst();
    stopSecond();
  };
}
