import { Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import type { HealthIndicatorService } from '@nestjs/terminus';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import type { CircuitBreakerState } from '../policies/circuit-breaker/circuit-breaker.events';
import { Unsubscribe } from '../kernel/events';
import { LoadShedder } from '../features/load-shedding/load-shedder';
import { RateLimiterPolicy } from '../policies/rate-limiter/rate-limiter.policy';
import { FallbackShare, FallbackShareCounts } from './fallback-share';
import { InstanceCatalog } from './instance-catalog';
import { FALLBACK_SHARE_NOT_CONFIGURED, LOAD_SHEDDING_NOT_CONFIGURED } from './observability.messages';
import { readHealthOptions, ResolvedHealthOptions } from './observability.options';
import { loadOptionalPeer } from '../kernel/optional-peer';
import { TERMINUS } from './observability.peers';
import { Outbox } from '../features/outbox/outbox';
import { OutboxHealthData, outboxHealth, OutboxHealthOptions } from './outbox-observability';

/**
 * A breaker's health, as Resilience4j's health indicator reports it: `UP`
 * when CLOSED; `DOWN` when OPEN and `allowHealthIndicatorToFail`, else
 * `CIRCUIT_OPEN`; `CIRCUIT_HALF_OPEN`; `UNKNOWN` in the manual states.
 */
export type CircuitBreakerHealthStatus = 'UP' | 'DOWN' | 'CIRCUIT_OPEN' | 'CIRCUIT_HALF_OPEN' | 'UNKNOWN';

/** What the health check reports of one breaker (rates in percent, -1 below `minimumNumberOfCalls`). */
export interface CircuitBreakerHealth {
  /** The breaker's health, mapped from its state as Resilience4j maps it. */
  readonly status: CircuitBreakerHealthStatus;
  /** The breaker's current state. */
  readonly state: CircuitBreakerState;
  /** Failed calls in percent of the calls in the window; -1 below `minimumNumberOfCalls`. */
  readonly failureRate: number;
  /** Slow calls in percent of the calls in the window; -1 below `minimumNumberOfCalls`. */
  readonly slowCallRate: number;
  /** The configured `failureRateThreshold`, in percent. */
  readonly failureRateThreshold: number;
  /** The configured `slowCallRateThreshold`, in percent. */
  readonly slowCallRateThreshold: number;
  /** Calls in the sliding window. */
  readonly bufferedCalls: number;
  /** Calls in the window recorded as failures. */
  readonly failedCalls: number;
  /** Calls in the window longer than `slowCallDurationThreshold`. */
  readonly slowCalls: number;
  /** Calls in the window both slow and failed. */
  readonly slowFailedCalls: number;
  /** Calls refused since the current window began. */
  readonly notPermittedCalls: number;
}

/**
 * A rate limiter's health, as Resilience4j's `RateLimitersHealthIndicator`
 * reports it: `UP` while it has permits or no one waits; `RATE_LIMITED`
 * (`DOWN` with `allowHealthIndicatorToFail`) while callers wait and a new
 * one would wait longer than `timeoutDuration`; else `UNKNOWN`.
 */
export type RateLimiterHealthStatus = 'UP' | 'DOWN' | 'RATE_LIMITED' | 'UNKNOWN';

/** What the health check reports of one rate limiter. */
export interface RateLimiterHealth {
  /** The rate limiter's health, as described at {@link RateLimiterHealthStatus}. */
  readonly status: RateLimiterHealthStatus;
  /** Permits left in the current period; negative while waiting callers hold reservations on later periods. */
  readonly availablePermissions: number;
  /** Callers waiting for a reserved permit (Resilience4j's name). */
  readonly numberOfWaitingThreads: number;
}

/** The data of {@link ResilienceHealthIndicator.checkRateLimiters}: each registered rate limiter by name. */
export interface RateLimitersHealthData {
  /** Each rate limiter that sets `registerHealthIndicator`, by name (`name#2`… for repeated names). */
  readonly instances: Readonly<Record<string, RateLimiterHealth>>;
}

/** A terminus health indicator result: `{ [key]: { status: 'up' | 'down', …data } }`. */
export type ResilienceHealthResult<Key extends string, Data extends object> = Record<
  Key,
  { status: 'up' | 'down' } & Data
>;

/** The data of {@link ResilienceHealthIndicator.check}: each registered breaker by name. */
export interface CircuitBreakersHealthData {
  /** Each breaker that sets `registerHealthIndicator`, by name (`name#2`… for repeated names). */
  readonly instances: Readonly<Record<string, CircuitBreakerHealth>>;
}

/** The data of {@link ResilienceHealthIndicator.checkFallbacks}. */
export interface FallbackShareHealthData extends FallbackShareCounts {
  /** The configured threshold, in percent. */
  readonly threshold: number;
  /** The configured window the counts cover, in ms. */
  readonly windowMs: number;
  /** The configured number of calls below which the check stays up whatever the share. */
  readonly minimumNumberOfCalls: number;
  /** Counts per `@Fallback` method (`Class.method`). */
  readonly methods: Readonly<Record<string, FallbackShareCounts>>;
}

/** The data of {@link ResilienceHealthIndicator.checkOverload}. */
export interface LoadSheddingHealthData {
  /** The concurrency limit in force (`null` without one). */
  readonly limit: number | null;
  /** Requests admitted and not yet answered. */
  readonly inflight: number;
  /** The event loop's delay over the last sampling period, in ms. */
  readonly eventLoopDelayMs: number;
}

const HEALTH_OF: Readonly<Record<CircuitBreakerState, (breaker: CircuitBreakerPolicy) => CircuitBreakerHealthStatus>> =
  {
    CLOSED: () => 'UP',
    OPEN: (breaker) => (breaker.config.allowHealthIndicatorToFail ? 'DOWN' : 'CIRCUIT_OPEN'),
    HALF_OPEN: () => 'CIRCUIT_HALF_OPEN',
    DISABLED: () => 'UNKNOWN',
    FORCED_OPEN: () => 'UNKNOWN',
    METRICS_ONLY: () => 'UNKNOWN',
  };

/**
 * A health indicator for `@nestjs/terminus` 11 (an optional peer, loaded on
 * the first check). Provided and exported by `ResilienceModule`.
 *
 * `check()` reports the circuit breakers whose config sets
 * `registerHealthIndicator`, mapped as Resilience4j maps them; it is down
 * only while a breaker with `allowHealthIndicatorToFail` is OPEN.
 * `checkFallbacks()` is down while the share of calls answered by a
 * fallback reaches module option `health.fallbackShare.threshold`.
 *
 * @example
 * ```ts
 * @Controller('health')
 * class HealthController {
 *   constructor(private readonly health: HealthCheckService, private readonly resilience: ResilienceHealthIndicator) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.resilience.check(), () => this.resilience.checkFallbacks()]);
 *   }
 * }
 * ```
 */
@Injectable()
export class ResilienceHealthIndicator implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly options: ResolvedHealthOptions;
  private breakers: CircuitBreakerPolicy[] = [];
  private rateLimiters: RateLimiterPolicy[] = [];
  private readonly subscriptions: Unsubscribe[] = [];
  private fallbackShare: FallbackShare | undefined;
  private indicators: HealthIndicatorService | undefined;

  /** @internal */
  constructor(
    private readonly catalog: InstanceCatalog,
    private readonly shedder: LoadShedder,
    @Optional() private readonly outbox?: Outbox,
  ) {
    this.options = readHealthOptions(catalog.registry.options.extras.health);
  }

  /** Collects the breakers (declared ones included) and, if configured, starts counting fallbacks. */
  onApplicationBootstrap(): void {
    const shareOptions = this.options.fallbackShare;
    const share = shareOptions && new FallbackShare(this.catalog.registry.clock, shareOptions.windowMs);
    this.fallbackShare = share;
    this.subscriptions.push(
      this.catalog.watch(
        (observed) => {
          if (observed.policy === 'circuitBreaker') this.breakers.push(observed.instance);
          else if (observed.policy === 'rateLimiter') this.rateLimiters.push(observed.instance);
          else if (observed.policy === 'fallback' && share !== undefined)
            this.subscriptions.push(share.track(observed.instance, observed.instance.onCall));
          else if (observed.policy === 'cache' && share !== undefined)
            this.subscriptions.push(share.trackCache(observed.instance));
        },
        // An evicted undeclared name is no longer checked.
        (evicted) => {
          this.breakers = this.breakers.filter((b) => b !== evicted.instance);
          this.rateLimiters = this.rateLimiters.filter((l) => l !== evicted.instance);
        },
      ),
    );
  }

  /** Stops watching and counting. */
  onModuleDestroy(): void {
    for (const unsubscribe of this.subscriptions) unsubscribe();
    this.subscriptions.length = 0;
  }

  /**
   * The circuit breakers' health under `key`: down when a breaker with
   * `allowHealthIndicatorToFail` is OPEN, else up; each breaker's status,
   * state and window under `instances`.
   */
  check<const Key extends string = 'circuitBreakers'>(
    key: Key = 'circuitBreakers' as Key,
  ): ResilienceHealthResult<Key, CircuitBreakersHealthData> {
    const session = this.service().check(key);
    // No prototype: a breaker may be named `__proto__` or `constructor`.
    const instances = Object.create(null) as Record<string, CircuitBreakerHealth>;
    let down = false;
    for (const breaker of this.breakers) {
      if (!breaker.config.registerHealthIndicator) continue;
      const health = describe(breaker);
      down ||= health.status === 'DOWN';
      // A method's own breaker made from overrides shares its instance's name.
      let label = breaker.name;
      for (let n = 2; label in instances; n++) label = `${breaker.name}#${n}`;
      instances[label] = health;
    }
    const data: CircuitBreakersHealthData = { instances };
    return down ? session.down({ ...data }) : session.up({ ...data });
  }

  /**
   * The rate limiters' health under `key` (those whose config sets
   * `registerHealthIndicator`): down while one with
   * `allowHealthIndicatorToFail` is DOWN, else up; each one's status and
   * metrics under `instances`.
   */
  checkRateLimiters<const Key extends string = 'rateLimiters'>(
    key: Key = 'rateLimiters' as Key,
  ): ResilienceHealthResult<Key, RateLimitersHealthData> {
    const session = this.service().check(key);
    const instances = Object.create(null) as Record<string, RateLimiterHealth>;
    let down = false;
    for (const limiter of this.rateLimiters) {
      if (!limiter.config.registerHealthIndicator) continue;
      const health = describeRateLimiter(limiter);
      down ||= health.status === 'DOWN';
      let label = limiter.name;
      for (let n = 2; label in instances; n++) label = `${limiter.name}#${n}`;
      instances[label] = health;
    }
    const data: RateLimitersHealthData = { instances };
    return down ? session.down({ ...data }) : session.up({ ...data });
  }

  /**
   * The share of calls to `@Fallback` methods answered by a fallback over
   * the window, under `key`: down when at least `minimumNumberOfCalls` calls
   * were made and the share reached `threshold`.
   *
   * @throws Error when module option `health.fallbackShare` is not set
   */
  checkFallbacks<const Key extends string = 'fallbacks'>(
    key: Key = 'fallbacks' as Key,
  ): ResilienceHealthResult<Key, FallbackShareHealthData> {
    const options = this.options.fallbackShare;
    if (options === undefined || this.fallbackShare === undefined) throw new Error(FALLBACK_SHARE_NOT_CONFIGURED);
    const session = this.service().check(key);
    const snapshot = this.fallbackShare.snapshot();
    const data: FallbackShareHealthData = {
      calls: snapshot.calls,
      fallbacks: snapshot.fallbacks,
      share: snapshot.share,
      threshold: options.threshold,
      windowMs: options.windowMs,
      minimumNumberOfCalls: options.minimumNumberOfCalls,
      methods: snapshot.methods,
    };
    const down = snapshot.calls >= options.minimumNumberOfCalls && snapshot.share >= options.threshold;
    return down ? session.down({ ...data }) : session.up({ ...data });
  }

  /**
   * The load shedder's view, under `key`, for readiness probes: down while it
   * refuses `normal` requests (the event loop lags past its threshold, or
   * the requests in flight have reached the share of the limit `normal` may use).
   *
   * @throws Error when module option `loadShedding` is not set
   */
  checkOverload<const Key extends string = 'loadShedding'>(
    key: Key = 'loadShedding' as Key,
  ): ResilienceHealthResult<Key, LoadSheddingHealthData> {
    if (this.catalog.registry.options.extras.loadShedding === undefined) throw new Error(LOAD_SHEDDING_NOT_CONFIGURED);
    const session = this.service().check(key);
    const limit = this.shedder.limit;
    const data: LoadSheddingHealthData = {
      limit: Number.isFinite(limit) ? limit : null,
      inflight: this.shedder.inflight,
      eventLoopDelayMs: this.shedder.eventLoopDelayMs,
    };
    return this.shedder.overloaded ? session.down({ ...data }) : session.up({ ...data });
  }

  /**
   * The outbox's health under `key`: down when the oldest pending event is
   * older than `maxLag` (the relay is not keeping up, or cannot publish),
   * or more than `maxParked` events are parked.
   *
   * @throws Error when module option `outbox` is not set, or an option is invalid
   */
  async checkOutbox<const Key extends string = 'outbox'>(
    options: OutboxHealthOptions,
    key: Key = 'outbox' as Key,
  ): Promise<ResilienceHealthResult<Key, OutboxHealthData>> {
    const { down, data } = await outboxHealth(this.outbox, options);
    const session = this.service().check(key);
    return down ? session.down({ ...data }) : session.up({ ...data });
  }

  private service(): HealthIndicatorService {
    // Stateless in terminus 11, so one of our own serves; loading it here keeps terminus optional.
    this.indicators ??= new (loadOptionalPeer(TERMINUS, 'ResilienceHealthIndicator').HealthIndicatorService)();
    return this.indicators;
  }
}

function describe(breaker: CircuitBreakerPolicy): CircuitBreakerHealth {
  const m = breaker.metrics;
  return {
    status: HEALTH_OF[breaker.state](breaker),
    state: breaker.state,
    failureRate: m.failureRate,
    slowCallRate: m.slowCallRate,
    failureRateThreshold: breaker.config.failureRateThreshold,
    slowCallRateThreshold: breaker.config.slowCallRateThreshold,
    bufferedCalls: m.numberOfBufferedCalls,
    failedCalls: m.numberOfFailedCalls,
    slowCalls: m.numberOfSlowCalls,
    slowFailedCalls: m.numberOfSlowFailedCalls,
    notPermittedCalls: m.numberOfNotPermittedCalls,
  };
}

function describeRateLimiter(limiter: RateLimiterPolicy): RateLimiterHealth {
  const { availablePermissions, numberOfWaitingThreads, msToWait } = limiter.detailedMetrics;
  let status: RateLimiterHealthStatus = 'UNKNOWN';
  if (availablePermissions > 0 || numberOfWaitingThreads === 0) status = 'UP';
  else if (msToWait > limiter.config.timeoutDuration)
    status = limiter.config.allowHealthIndicatorToFail ? 'DOWN' : 'RATE_LIMITED';
  return { status, availablePermissions, numberOfWaitingThreads };
}
