import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { CircuitBreakerPolicy } from '../circuit-breaker/circuit-breaker-policy';
import type { CircuitBreakerStateTransitionEvent } from '../circuit-breaker/circuit-breaker.events';
import { Clock } from '../clock';
import { Unsubscribe } from '../events';
import { InstanceCatalog, ObservedInstance } from './instance-catalog';
import {
  BREAKER_TRANSITION,
  BUDGET_EXHAUSTED,
  BUDGET_RECOVERED,
  BULKHEAD_RECOVERED,
  BULKHEAD_SATURATED,
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
 * happens, never once per call: every circuit breaker transition, and the
 * start and end of each episode of retry-budget denials and of bulkhead
 * saturation, with the instance name. Module option `logging`.
 */
@Injectable()
export class ResilienceEventLogger implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('ResilienceModule');
  private readonly options: ResolvedLoggingOptions;
  private readonly subscriptions: Unsubscribe[] = [];
  private readonly episodes: Array<Episode<unknown>> = [];

  constructor(private readonly catalog: InstanceCatalog) {
    this.options = readLoggingOptions(catalog.registry.options.extras.logging);
  }

  /** Starts watching every instance (unless `logging` is off). */
  onApplicationBootstrap(): void {
    if (this.options.enabled) this.subscriptions.push(this.catalog.watch((observed) => this.bind(observed)));
  }

  /** Stops watching and drops pending episode ends. */
  onModuleDestroy(): void {
    for (const unsubscribe of this.subscriptions) unsubscribe();
    this.subscriptions.length = 0;
    for (const episode of this.episodes) episode.dispose();
    this.episodes.length = 0;
  }

  private bind(observed: ObservedInstance): void {
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
          (onActivity) => {
            const stopSuccesses = retry.onSuccess(onActivity);
            const stopErrors = retry.onError(onActivity);
            return () => {
              stopSuccesses();
              stopErrors();
            };
          },
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
    }
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
