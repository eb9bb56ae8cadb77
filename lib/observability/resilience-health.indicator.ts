import { Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import type { HealthIndicatorService } from '@nestjs/terminus';
import type { CircuitBreakerHealth } from '../policies/circuit-breaker/circuit-breaker.health';
import type { PolicyTelemetry } from '../kernel/telemetry';
import { Unsubscribe } from '../kernel/events';
import { LoadShedder } from '../features/load-shedding/load-shedder';
import type { RateLimiterHealth } from '../policies/rate-limiter/rate-limiter.health';
import { FallbackShare, FallbackShareCounts } from './fallback-share';
import { InstanceCatalog, ObservedInstance } from './instance-catalog';
import { POLICY_SCHEMAS } from '../registry/resolve-options';
import type { RegistryPolicy } from '../registry/policy-instances';
import { FALLBACK_SHARE_NOT_CONFIGURED, LOAD_SHEDDING_NOT_CONFIGURED } from './observability.messages';
import { readHealthOptions, ResolvedHealthOptions } from './observability.options';
import { loadOptionalPeer } from '../kernel/optional-peer';
import { TERMINUS } from './observability.peers';
import { Outbox } from '../features/outbox/outbox';
import { OutboxHealthData, outboxHealth, OutboxHealthOptions } from './outbox-observability';

/** The data of {@link ResilienceHealthIndicator.checkRateLimiters}: each registered rate limiter by name. */
export interface RateLimitersHealthData {
  /**
   * Each rate limiter that sets `registerHealthIndicator`, by name (`name#2`…
   * for repeated names); one used per key counts its keys under `keys`.
   */
  readonly instances: Readonly<Record<string, RateLimiterHealth & { readonly keys?: KeysHealth }>>;
}

/**
 * The keys of an instance used per key, in its health row: how many are
 * kept and how many are in each status, never which (a key is request
 * data: a tenant, a host). The status endpoints, behind their guards, list
 * them.
 */
export interface KeysHealth {
  /** Keys kept now. */
  readonly kept: number;
  /** How many of them are in each status (`UP`, `CIRCUIT_OPEN`, …). */
  readonly statuses: Readonly<Record<string, number>>;
}

/** A terminus health indicator result: `{ [key]: { status: 'up' | 'down', …data } }`. */
export type ResilienceHealthResult<Key extends string, Data extends object> = Record<
  Key,
  { status: 'up' | 'down' } & Data
>;

/** The data of {@link ResilienceHealthIndicator.check}: each registered breaker by name. */
export interface CircuitBreakersHealthData {
  /**
   * Each breaker that sets `registerHealthIndicator`, by name (`name#2`… for
   * repeated names); a breaker used per key counts its keys under `keys`.
   */
  readonly instances: Readonly<Record<string, CircuitBreakerHealth & { readonly keys?: KeysHealth }>>;
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
  /** The instances that may report to a health check (those whose telemetry channel gives a `healthReport`). */
  private reporting: ObservedInstance[] = [];
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
          const channel: PolicyTelemetry = observed.instance;
          if (channel.healthReport !== undefined) this.reporting.push(observed);
          if (share !== undefined && channel.countAnswers !== undefined)
            this.subscriptions.push(
              share.track({ name: observed.name, countAnswers: channel.countAnswers.bind(channel) }),
            );
        },
        // An evicted undeclared name is no longer checked.
        (evicted) => {
          this.reporting = this.reporting.filter((o) => o.instance !== evicted.instance);
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
   * `allowHealthIndicatorToFail` is OPEN (the breaker of one of its keys
   * included), else up; each breaker's status, state and window under
   * `instances`, with the count of its keys in each status when it is used
   * per key.
   */
  check<const Key extends string = 'circuitBreakers'>(
    key: Key = 'circuitBreakers' as Key,
  ): ResilienceHealthResult<Key, CircuitBreakersHealthData> {
    return this.checkRows<Key, CircuitBreakerHealth>('circuitBreakers', key);
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
    return this.checkRows<Key, RateLimiterHealth>('rateLimiters', key);
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

  /**
   * The rows of health check `check` under `key`, each instance's by its
   * name (`name#2`… for repeated names: a method's own instance made from
   * overrides shares its instance's name); down when one is DOWN.
   */
  private checkRows<Key extends string, Row extends { readonly status: string }>(
    check: string,
    key: Key,
  ): ResilienceHealthResult<Key, { readonly instances: Readonly<Record<string, Row & { keys?: KeysHealth }>> }> {
    const session = this.service().check(key);
    // No prototype: an instance may be named `__proto__` or `constructor`.
    const instances = Object.create(null) as Record<string, Row & { keys?: KeysHealth }>;
    let down = false;
    for (const observed of this.reporting) {
      const channel: PolicyTelemetry = observed.instance;
      const report = channel.healthReport?.();
      if (report === undefined || report.check !== check) continue;
      down ||= report.row.status === 'DOWN';
      let label = observed.name;
      for (let n = 2; label in instances; n++) label = `${observed.name}#${n}`;
      const keys = observed.derived ? undefined : this.keysOf(observed);
      if (keys !== undefined) down ||= (keys.statuses.DOWN ?? 0) > 0;
      instances[label] = (keys === undefined ? report.row : { ...report.row, keys }) as Row & { keys?: KeysHealth };
    }
    const data = { instances };
    return down ? session.down({ ...data }) : session.up({ ...data });
  }

  /** How many keys of the named instance `observed` are kept, and in each status; undefined when it has none. */
  private keysOf(observed: ObservedInstance): KeysHealth | undefined {
    // Only the registry's policies have keys (not fallbacks, caches, or a kind it does not make).
    if (!Object.prototype.hasOwnProperty.call(POLICY_SCHEMAS, observed.policy)) return undefined;
    const kept = this.catalog.registry.keys(observed.policy as RegistryPolicy, observed.name);
    if (kept.size === 0) return undefined;
    const statuses = Object.create(null) as Record<string, number>;
    for (const instance of kept.values()) {
      const channel: PolicyTelemetry = instance;
      const status = channel.healthReport?.()?.row.status;
      if (status !== undefined) statuses[status] = (statuses[status] ?? 0) + 1;
    }
    return { kept: kept.size, statuses };
  }

  private service(): HealthIndicatorService {
    // Stateless in terminus 11, so one of our own serves; loading it here keeps terminus optional.
    this.indicators ??= new (loadOptionalPeer(TERMINUS, 'ResilienceHealthIndicator').HealthIndicatorService)();
    return this.indicators;
  }
}
