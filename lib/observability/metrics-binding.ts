import { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import { CachePolicy } from '../policies/cache/cache.policy';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import type { CircuitBreakerState } from '../policies/circuit-breaker/circuit-breaker.events';
import { Unsubscribe } from '../kernel/events';
import { countReportedCalls, FallbackPolicy } from '../policies/fallback/fallback.policy';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { RateLimiterPolicy } from '../policies/rate-limiter/rate-limiter.policy';
import { RetryPolicy } from '../policies/retry/retry.policy';
import { TimeLimiter } from '../policies/time-limiter/time-limiter.policy';
import { DurationHistogram, OutcomeHistograms } from '../kernel/duration-histogram';
import { ObservedInstance, watchInstances } from './instance-catalog';
import type { RegistryPolicy } from '../registry/policy-instances';
import type { LruEntry } from '../registry/instance-lru';
import { attachCollectors, Collector, Emit, FamilyDefinition } from './metric-family';
import { DEFAULT_BUCKETS, DEFAULT_PER_KEY_SERIES, MetricsRegistry } from './observability.options';

const family = (
  name: string,
  type: FamilyDefinition['type'],
  help: string,
  combine: FamilyDefinition['combine'] = 'sum',
): FamilyDefinition => ({
  name,
  type,
  help,
  combine,
});

/**
 * Every series family, by what it measures. The `resilience4j_*` ones carry
 * the names, labels and label values of Resilience4j's Micrometer binding
 * as exported to Prometheus, so its dashboards and alerts work unchanged;
 * the `resilience4nest_*` ones are this module's own. Samples of several
 * instances (or applications) with the same labels are added up, except
 * the rates, where the highest is kept.
 */
export const METRIC_FAMILIES = {
  circuitBreakerState: family(
    'resilience4j_circuitbreaker_state',
    'gauge',
    'The states of the circuit breaker (1 in the current state, else 0)',
  ),
  circuitBreakerCalls: family(
    'resilience4j_circuitbreaker_calls_seconds',
    'histogram',
    'Duration of the calls the circuit breaker recorded, by outcome',
  ),
  circuitBreakerNotPermitted: family(
    'resilience4j_circuitbreaker_not_permitted_calls_total',
    'counter',
    'Total number of not permitted calls',
  ),
  circuitBreakerFailureRate: family(
    'resilience4j_circuitbreaker_failure_rate',
    'gauge',
    'The failure rate of the circuit breaker (percent, -1 below minimumNumberOfCalls)',
    'max',
  ),
  circuitBreakerSlowCallRate: family(
    'resilience4j_circuitbreaker_slow_call_rate',
    'gauge',
    'The slow call rate of the circuit breaker (percent, -1 below minimumNumberOfCalls)',
    'max',
  ),
  circuitBreakerBufferedCalls: family(
    'resilience4j_circuitbreaker_buffered_calls',
    'gauge',
    'The number of buffered calls stored in the sliding window',
  ),
  circuitBreakerSlowCalls: family(
    'resilience4j_circuitbreaker_slow_calls',
    'gauge',
    'The number of slow calls in the sliding window',
  ),
  retryCalls: family(
    'resilience4j_retry_calls_total',
    'counter',
    'The number of calls, by whether they succeeded and were retried',
  ),
  bulkheadAvailable: family(
    'resilience4j_bulkhead_available_concurrent_calls',
    'gauge',
    'The number of available permissions',
  ),
  bulkheadMaxAllowed: family(
    'resilience4j_bulkhead_max_allowed_concurrent_calls',
    'gauge',
    'The maximum number of available permissions',
  ),
  rateLimiterAvailable: family(
    'resilience4j_ratelimiter_available_permissions',
    'gauge',
    'The number of available permissions',
  ),
  rateLimiterWaiting: family('resilience4j_ratelimiter_waiting_threads', 'gauge', 'The number of waiting threads'),
  timeLimiterCalls: family(
    'resilience4j_timelimiter_calls_total',
    'counter',
    'The number of time-limited calls, by outcome (timeout includes an expired request deadline)',
  ),
  retryBudgetDenied: family(
    'resilience4nest_retry_budget_denied_total',
    'counter',
    'Retries the retry budget denied (the original error propagated)',
  ),
  fallbackCalls: family(
    'resilience4nest_fallback_calls_total',
    'counter',
    'Calls answered by a fallback, by the error class whose handler answered',
  ),
  fallbackGuardedCalls: family(
    'resilience4nest_fallback_guarded_calls_total',
    'counter',
    'Calls of methods with a fallback, however answered (the denominator of the fallback share)',
  ),
  bulkheadRejected: family(
    'resilience4nest_bulkhead_rejected_total',
    'counter',
    'Calls that left the bulkhead without a permit',
  ),
  bulkheadQueueDepth: family('resilience4nest_bulkhead_queue_depth', 'gauge', 'Calls waiting for a bulkhead permit'),
  injectedFaults: family(
    'resilience4nest_injected_faults_total',
    'counter',
    'Faults injected on purpose (module option faultInjection), by instance name and kind',
  ),
  idempotencyRequests: family(
    'resilience4nest_idempotency_requests_total',
    'counter',
    'Requests with an idempotency key, by outcome',
  ),
  cacheCalls: family(
    'resilience4nest_cache_calls_total',
    'counter',
    'Calls through a cache, by how they were answered: hit (stored, not called), miss (called), stale (the last known good after a failure), coalesced (shared a concurrent call)',
  ),
  hedgeCalls: family(
    'resilience4nest_hedge_calls_total',
    'counter',
    'Hedged attempts started, calls a hedge answered, and attempts cancelled because another answered first',
  ),
} as const satisfies Record<string, FamilyDefinition>;

const STATES: readonly CircuitBreakerState[] = [
  'CLOSED',
  'OPEN',
  'HALF_OPEN',
  'DISABLED',
  'FORCED_OPEN',
  'METRICS_ONLY',
];
// Resilience4j's Micrometer binding labels states with the enum name in lower case.
const STATE_LABELS = STATES.map((s) => s.toLowerCase());
const CALL_KINDS = ['successful', 'failed', 'ignored'] as const;
const CACHE_RESULTS = ['hit', 'miss', 'stale', 'coalesced'] as const;

/** Options of {@link ResilienceMetricsBinding}. */
export interface MetricsBindingOptions {
  /** The prom-client registry to register in. */
  readonly registry: MetricsRegistry;
  /** Upper bounds, in seconds, of the call-duration buckets. Default: prom-client's. */
  readonly buckets?: readonly number[];
  /** Fallback policies to count (the module passes those of every decorated method). */
  readonly fallbacks?: readonly FallbackPolicy[];
  /** Subscribes to the calls of the method a fallback policy guards; without it the guarded-calls series is left out. */
  readonly countCalls?: (policy: FallbackPolicy, onCall: () => void) => Unsubscribe;
  /** Where outcomes of `@Idempotent` methods are announced (the module passes its `IdempotencyRegistry`). */
  readonly idempotency?: Pick<IdempotencyRegistry, 'onOutcome'>;
  /**
   * Besides the series of each instance name (every key added in), series
   * labelled `key` for the `perKeySeries` most used keys of each name and
   * `key="other"` for the rest, so their number stays bounded. Default false.
   */
  readonly perKey?: boolean;
  /** How many keys of each name get series of their own with `perKey`. Default 20. */
  readonly perKeySeries?: number;
}

/** No key is shown on its own without `perKey`. */
const NO_KEYS: ReadonlySet<string> = new Set();

/** The `key` label of the keys of a name that have no series of their own. */
const OTHER_KEYS = 'other';

/** The counts of the evicted keys (and undeclared names) of one name, kept so that no counter goes down. */
interface RetiredCounts {
  readonly policy: string;
  readonly name: string;
  /** The `key` label they are shown under with `perKey` (none for an evicted undeclared name). */
  readonly keyed: boolean;
  readonly calls: OutcomeHistograms;
  notPermitted: number;
  readonly retry: [number, number, number, number, number];
  bulkheadRejected: number;
  readonly timeLimiter: [number, number, number];
  /** Hedged, winner, cancelled. */
  readonly hedge: [number, number, number];
}

interface BreakerSeries {
  readonly breaker: CircuitBreakerPolicy;
  readonly calls: OutcomeHistograms;
  notPermitted: number;
}

interface BulkheadSeries {
  readonly bulkhead: BulkheadPolicy;
  rejected: number;
}

/** A time limiter and its own counts when the binding first saw it. */
interface TimeLimiterSeries {
  readonly limiter: TimeLimiter;
  readonly successful: number;
  readonly failed: number;
  readonly timeout: number;
}

interface FallbackSeries {
  readonly policy: FallbackPolicy;
  readonly byKind: Map<string, number>;
  /** Calls of the guarded method, when they can be counted (`counted`); with `own`, the policy's count when the binding first saw it. */
  calls: number;
  readonly counted: boolean;
  /** The calls are the policy's own count (see {@link countReportedCalls}), read at scrape time. */
  readonly own: boolean;
}

/**
 * The Prometheus series of one registry's instances (and the given fallback
 * policies), in a prom-client registry. Counters the policies keep are read
 * at scrape time; only call durations and counts no policy keeps are
 * recorded as events happen, each a few numeric operations. Instances made
 * later are bound as they appear. {@link ResilienceMetricsBinding.close}
 * removes the application's series; families other applications still
 * use stay registered.
 *
 * @example
 * ```ts
 * const binding = new ResilienceMetricsBinding(registry, { registry: promClient.register });
 * // … on shutdown
 * binding.close();
 * ```
 */
export class ResilienceMetricsBinding {
  private readonly breakers = new Map<CircuitBreakerPolicy, BreakerSeries>();
  private readonly retries = new Set<RetryPolicy>();
  private readonly bulkheads = new Map<BulkheadPolicy, BulkheadSeries>();
  private readonly limiters = new Map<TimeLimiter, TimeLimiterSeries>();
  private readonly rateLimiters = new Set<RateLimiterPolicy>();
  /** Counts of evicted instances, by policy and name. */
  private readonly retired = new Map<string, RetiredCounts>();
  /** Each instance's subscriptions, dropped when it is evicted. */
  private readonly own = new Map<object, Unsubscribe[]>();
  private readonly registry: ResilienceRegistry;
  private readonly perKey: boolean;
  private readonly perKeySeries: number;
  private readonly fallbacks: FallbackSeries[] = [];
  private readonly idempotency = new Map<string, number>();
  private readonly subscriptions: Unsubscribe[] = [];
  private readonly boundsMs: Float64Array;
  private readonly leLabels: readonly string[];
  private readonly countCalls: MetricsBindingOptions['countCalls'];
  private readonly faults: ResilienceRegistry['faults'];
  private readonly detach: () => void;
  private readonly hedges: ResilienceRegistry['hedges'];
  private readonly caches: CachePolicy[] = [];
  private closed = false;

  /**
   * @param registry - the instances to report on
   * @param options - the prom-client registry and histogram buckets
   * @throws Error when a family's name is taken in the prom-client registry by a metric of someone else
   */
  constructor(registry: ResilienceRegistry, options: MetricsBindingOptions) {
    const buckets = options.buckets ?? DEFAULT_BUCKETS;
    this.boundsMs = Float64Array.from(buckets, (s) => s * 1000);
    this.leLabels = buckets.map(String);
    this.countCalls = options.countCalls;
    this.faults = registry.faults;
    this.hedges = registry.hedges;
    this.registry = registry;
    this.perKey = options.perKey ?? false;
    this.perKeySeries = options.perKeySeries ?? DEFAULT_PER_KEY_SERIES;
    // Attached before subscribing, so a name clash leaves nothing subscribed.
    this.detach = attachCollectors(options.registry, this.collectors(), buckets);
    this.subscriptions.push(
      watchInstances(registry, options.fallbacks ?? [], (observed) => this.bind(observed), {
        keys: true,
        evicted: (observed) => this.unbind(observed),
      }),
    );
    // A hedge's counters are read at scrape time; those of an evicted key are kept under its name.
    this.subscriptions.push(
      registry.onHedgeEvicted((hedge) => {
        const m = hedge.metrics;
        const counts = this.retiredOf('hedging', hedge.name, true).hedge;
        counts[0] += m.hedged;
        counts[1] += m.winner;
        counts[2] += m.cancelled;
      }),
    );
    if (options.idempotency !== undefined) {
      // Counted by outcome only, a fixed set of values: never by key or method, so the series stay few.
      this.subscriptions.push(
        options.idempotency.onOutcome(
          ({ outcome }) => void this.idempotency.set(outcome, (this.idempotency.get(outcome) ?? 0) + 1),
        ),
      );
    }
  }

  /** Unsubscribes from every instance and removes this application's series. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const unsubscribe of this.subscriptions) unsubscribe();
    this.subscriptions.length = 0;
    for (const unsubscribes of this.own.values()) for (const unsubscribe of unsubscribes) unsubscribe();
    this.own.clear();
    this.detach();
  }

  /** An evicted instance: its counters are added to its name's retired counts, its gauges dropped. */
  private unbind(observed: ObservedInstance): void {
    if (observed.policy === 'fallback' || observed.policy === 'cache') return;
    for (const unsubscribe of this.own.get(observed.instance) ?? []) unsubscribe();
    this.own.delete(observed.instance);
    const retired = this.retiredOf(observed.policy, observed.instance.name, observed.key !== undefined);
    switch (observed.policy) {
      case 'circuitBreaker': {
        const series = this.breakers.get(observed.instance);
        if (series === undefined) return;
        this.breakers.delete(observed.instance);
        retired.notPermitted += series.notPermitted;
        for (let k = 0; k < CALL_KINDS.length; k++) addHistogram(retired.calls[k], series.calls[k]);
        return;
      }
      case 'retry': {
        if (!this.retries.delete(observed.instance)) return;
        const m = observed.instance.metrics;
        const counts = [
          m.successfulCallsWithoutRetry,
          m.successfulCallsWithRetry,
          m.failedCallsWithoutRetry,
          m.failedCallsWithRetry,
          m.budgetDenied,
        ];
        for (let i = 0; i < counts.length; i++) retired.retry[i] += counts[i];
        return;
      }
      case 'bulkhead': {
        const series = this.bulkheads.get(observed.instance);
        if (series === undefined) return;
        this.bulkheads.delete(observed.instance);
        retired.bulkheadRejected += series.rejected;
        return;
      }
      case 'timeLimiter': {
        const series = this.limiters.get(observed.instance);
        if (series === undefined) return;
        this.limiters.delete(observed.instance);
        const limiter = series.limiter;
        retired.timeLimiter[0] += limiter.successfulCalls - series.successful;
        retired.timeLimiter[1] += limiter.failedCalls - series.failed;
        retired.timeLimiter[2] += limiter.timedOutCalls - series.timeout;
        return;
      }
      case 'rateLimiter':
        this.rateLimiters.delete(observed.instance);
        return;
    }
  }

  private retiredOf(policy: string, name: string, keyed: boolean): RetiredCounts {
    const id = `${policy}\u0000${name}\u0000${keyed}`;
    let retired = this.retired.get(id);
    if (retired === undefined) {
      retired = {
        policy,
        name,
        keyed,
        calls: [
          new DurationHistogram(this.boundsMs),
          new DurationHistogram(this.boundsMs),
          new DurationHistogram(this.boundsMs),
        ],
        notPermitted: 0,
        retry: [0, 0, 0, 0, 0],
        bulkheadRejected: 0,
        timeLimiter: [0, 0, 0],
        hedge: [0, 0, 0],
      };
      this.retired.set(id, retired);
    }
    return retired;
  }

  /** The retired counts of `policy`. */
  private retiredFor(policy: string): RetiredCounts[] {
    return [...this.retired.values()].filter((r) => r.policy === policy);
  }

  /**
   * Emits to `emit` under `labels` and, for a key of an instance with
   * `perKey`, again with its `key` label: the key itself when among the
   * most used `perKeySeries` keys of its name (`shown`), else `other`.
   */
  private keyedEmit(
    emit: Emit,
    instance: { readonly name: string; readonly key?: string },
    shown: ReadonlySet<string>,
  ): Emit {
    const key = instance.key;
    if (!this.perKey || key === undefined) return emit;
    const label = shown.has(`${instance.name}\u0000${key}`) ? key : OTHER_KEYS;
    return (labels, value, suffix) => {
      emit(labels, value, suffix);
      emit({ ...labels, key: label }, value, suffix);
    };
  }

  /** The most used `perKeySeries` keys of each name of `policy`, as `name\0key`; empty without `perKey`. */
  private shownKeys(policy: RegistryPolicy): ReadonlySet<string> {
    return this.perKey ? this.mostUsed(this.registry.allKeys(policy)) : NO_KEYS;
  }

  /** The most used `perKeySeries` of `entries` (the keys of several names) for each name, as `name\0key`. */
  private mostUsed(entries: readonly LruEntry<{ readonly name: string }>[]): ReadonlySet<string> {
    const byName = new Map<string, { name: string; key: string; uses: number }[]>();
    for (const entry of entries) {
      const name = entry.instance.name;
      let list = byName.get(name);
      if (list === undefined) byName.set(name, (list = []));
      list.push({ name, key: entry.key, uses: entry.uses });
    }
    const shown = new Set<string>();
    for (const list of byName.values()) {
      list.sort((a, b) => b.uses - a.uses);
      for (let i = 0; i < Math.min(this.perKeySeries, list.length); i++)
        shown.add(`${list[i].name}\u0000${list[i].key}`);
    }
    return shown;
  }

  /** Emits the retired counts of `retired` under its name (and `key="other"` with `perKey`, for keys). */
  private retiredEmit(emit: Emit, retired: RetiredCounts): Emit {
    if (!this.perKey || !retired.keyed) return emit;
    return (labels, value, suffix) => {
      emit(labels, value, suffix);
      emit({ ...labels, key: OTHER_KEYS }, value, suffix);
    };
  }

  private bind(observed: ObservedInstance): void {
    const subscribe = (unsubscribe: Unsubscribe): void => {
      if (observed.policy === 'fallback') {
        this.subscriptions.push(unsubscribe);
        return;
      }
      const list = this.own.get(observed.instance);
      if (list === undefined) this.own.set(observed.instance, [unsubscribe]);
      else list.push(unsubscribe);
    };
    switch (observed.policy) {
      case 'circuitBreaker': {
        const breaker = observed.instance;
        const calls: OutcomeHistograms = [
          new DurationHistogram(this.boundsMs),
          new DurationHistogram(this.boundsMs),
          new DurationHistogram(this.boundsMs),
        ];
        const series: BreakerSeries = { breaker, calls, notPermitted: 0 };
        subscribe(breaker.recordDurationsInto(calls));
        // The breaker's own count restarts with each window; the Prometheus counter must not.
        subscribe(breaker.onCallNotPermitted(() => void series.notPermitted++));
        this.breakers.set(breaker, series);
        break;
      }
      case 'retry':
        this.retries.add(observed.instance);
        break;
      case 'bulkhead': {
        const series: BulkheadSeries = { bulkhead: observed.instance, rejected: 0 };
        subscribe(observed.instance.onCallRejected(() => void series.rejected++));
        this.bulkheads.set(observed.instance, series);
        break;
      }
      case 'timeLimiter': {
        // The limiter counts its calls; the series count those since this binding saw it.
        const limiter = observed.instance;
        this.limiters.set(limiter, {
          limiter,
          successful: limiter.successfulCalls,
          failed: limiter.failedCalls,
          timeout: limiter.timedOutCalls,
        });
        break;
      }
      case 'rateLimiter':
        this.rateLimiters.add(observed.instance);
        break;
      case 'fallback': {
        const policy = observed.instance;
        const own = this.countCalls === countReportedCalls;
        const series: FallbackSeries = {
          policy,
          byKind: new Map(),
          calls: own ? policy.reportedCalls : 0,
          counted: this.countCalls !== undefined,
          own,
        };
        if (this.countCalls !== undefined && !own) subscribe(this.countCalls(policy, () => void series.calls++));
        subscribe(
          observed.instance.onFallback((event) => {
            const kind = event.errorClass.name;
            series.byKind.set(kind, (series.byKind.get(kind) ?? 0) + 1);
          }),
        );
        // A cache inside the method answered with its last known good: a degraded answer of the method too.
        subscribe(
          observed.instance.onStaleAnswer(() => void series.byKind.set('stale', (series.byKind.get('stale') ?? 0) + 1)),
        );
        this.fallbacks.push(series);
        break;
      }
      case 'cache':
        this.caches.push(observed.instance);
        break;
    }
  }

  private collectors(): Array<readonly [FamilyDefinition, Collector]> {
    const f = METRIC_FAMILIES;
    /** The breakers, each with the Emit its samples go through (its key's series too, with `perKey`). */
    const breakers = (emit: Emit): [BreakerSeries, Emit][] => {
      const shown = this.shownKeys('circuitBreaker');
      return [...this.breakers.values()].map((series) => [series, this.keyedEmit(emit, series.breaker, shown)]);
    };
    const each = <I extends { readonly name: string; readonly key?: string }>(
      policy: RegistryPolicy,
      instances: Iterable<I>,
      emit: Emit,
    ): [I, Emit][] => {
      const shown = this.shownKeys(policy);
      return [...instances].map((instance) => [instance, this.keyedEmit(emit, instance, shown)]);
    };
    const retired = (policy: string, emit: Emit): [RetiredCounts, Emit][] =>
      this.retiredFor(policy).map((counts) => [counts, this.retiredEmit(emit, counts)]);
    return [
      [
        f.circuitBreakerState,
        (emit) => {
          for (const [{ breaker }, e] of breakers(emit)) {
            const state = breaker.state;
            for (let i = 0; i < STATES.length; i++)
              e({ name: breaker.name, state: STATE_LABELS[i] }, STATES[i] === state ? 1 : 0);
          }
        },
      ],
      [
        f.circuitBreakerCalls,
        (emit) => {
          for (const [{ breaker, calls }, e] of breakers(emit))
            for (let k = 0; k < CALL_KINDS.length; k++) this.emitHistogram(e, breaker.name, CALL_KINDS[k], calls[k]);
          for (const [counts, e] of retired('circuitBreaker', emit))
            for (let k = 0; k < CALL_KINDS.length; k++)
              this.emitHistogram(e, counts.name, CALL_KINDS[k], counts.calls[k]);
        },
      ],
      [
        f.circuitBreakerNotPermitted,
        (emit) => {
          for (const [{ breaker, notPermitted }, e] of breakers(emit))
            e({ name: breaker.name, kind: 'not_permitted' }, notPermitted);
          for (const [counts, e] of retired('circuitBreaker', emit))
            e({ name: counts.name, kind: 'not_permitted' }, counts.notPermitted);
        },
      ],
      [
        f.circuitBreakerFailureRate,
        (emit) => {
          for (const [{ breaker }, e] of breakers(emit)) e({ name: breaker.name }, breaker.metrics.failureRate);
        },
      ],
      [
        f.circuitBreakerSlowCallRate,
        (emit) => {
          for (const [{ breaker }, e] of breakers(emit)) e({ name: breaker.name }, breaker.metrics.slowCallRate);
        },
      ],
      [
        f.circuitBreakerBufferedCalls,
        (emit) => {
          for (const [{ breaker }, e] of breakers(emit)) {
            const m = breaker.metrics;
            e({ name: breaker.name, kind: 'successful' }, m.numberOfSuccessfulCalls);
            e({ name: breaker.name, kind: 'failed' }, m.numberOfFailedCalls);
          }
        },
      ],
      [
        f.circuitBreakerSlowCalls,
        (emit) => {
          for (const [{ breaker }, e] of breakers(emit)) {
            const m = breaker.metrics;
            e({ name: breaker.name, kind: 'successful' }, m.numberOfSlowSuccessfulCalls);
            e({ name: breaker.name, kind: 'failed' }, m.numberOfSlowFailedCalls);
          }
        },
      ],
      [
        f.retryCalls,
        (emit) => {
          for (const [retry, e] of each('retry', this.retries, emit)) {
            const m = retry.metrics;
            emitRetryCalls(e, retry.name, [
              m.successfulCallsWithoutRetry,
              m.successfulCallsWithRetry,
              m.failedCallsWithoutRetry,
              m.failedCallsWithRetry,
            ]);
          }
          for (const [counts, e] of retired('retry', emit)) emitRetryCalls(e, counts.name, counts.retry);
        },
      ],
      [
        f.retryBudgetDenied,
        (emit) => {
          for (const [retry, e] of each('retry', this.retries, emit))
            e({ name: retry.name }, retry.metrics.budgetDenied);
          for (const [counts, e] of retired('retry', emit)) e({ name: counts.name }, counts.retry[4]);
        },
      ],
      [
        f.bulkheadAvailable,
        (emit) => {
          for (const [bulkhead, e] of each('bulkhead', this.bulkheads.keys(), emit))
            e({ name: bulkhead.name }, bulkhead.metrics.availableConcurrentCalls);
        },
      ],
      [
        f.bulkheadMaxAllowed,
        (emit) => {
          for (const [bulkhead, e] of each('bulkhead', this.bulkheads.keys(), emit))
            e({ name: bulkhead.name }, bulkhead.metrics.maxAllowedConcurrentCalls);
        },
      ],
      [
        f.bulkheadQueueDepth,
        (emit) => {
          for (const [bulkhead, e] of each('bulkhead', this.bulkheads.keys(), emit))
            e({ name: bulkhead.name }, bulkhead.metrics.queueDepth);
        },
      ],
      [
        f.bulkheadRejected,
        (emit) => {
          for (const [bulkhead, e] of each('bulkhead', this.bulkheads.keys(), emit))
            e({ name: bulkhead.name }, (this.bulkheads.get(bulkhead) as BulkheadSeries).rejected);
          for (const [counts, e] of retired('bulkhead', emit)) e({ name: counts.name }, counts.bulkheadRejected);
        },
      ],
      [
        f.rateLimiterAvailable,
        (emit) => {
          for (const [limiter, e] of each('rateLimiter', this.rateLimiters, emit))
            e({ name: limiter.name }, limiter.metrics.availablePermissions);
        },
      ],
      [
        f.rateLimiterWaiting,
        (emit) => {
          for (const [limiter, e] of each('rateLimiter', this.rateLimiters, emit))
            e({ name: limiter.name }, limiter.metrics.numberOfWaitingThreads);
        },
      ],
      [
        f.timeLimiterCalls,
        (emit) => {
          for (const [limiter, e] of each('timeLimiter', this.limiters.keys(), emit)) {
            const { successful, failed, timeout } = this.limiters.get(limiter) as TimeLimiterSeries;
            emitTimeLimiterCalls(e, limiter.name, [
              limiter.successfulCalls - successful,
              limiter.failedCalls - failed,
              limiter.timedOutCalls - timeout,
            ]);
          }
          for (const [counts, e] of retired('timeLimiter', emit))
            emitTimeLimiterCalls(e, counts.name, counts.timeLimiter);
        },
      ],
      [
        f.fallbackCalls,
        (emit) => {
          for (const { policy, byKind } of this.fallbacks)
            for (const [kind, count] of byKind) emit({ name: policy.name, kind }, count);
        },
      ],
      [
        f.fallbackGuardedCalls,
        (emit) => {
          for (const { policy, calls, counted, own } of this.fallbacks) {
            if (counted) emit({ name: policy.name }, own ? policy.reportedCalls - calls : calls);
          }
        },
      ],
      [
        f.injectedFaults,
        (emit) => {
          for (const [name, counts] of this.faults.injected())
            for (const kind of ['latency', 'error', 'outcome'] as const) emit({ name, kind }, counts[kind]);
        },
      ],
      [
        f.hedgeCalls,
        (emit) => {
          for (const hedge of this.hedges) {
            const m = hedge.metrics;
            emitHedgeCalls(emit, hedge.name, [m.hedged, m.winner, m.cancelled]);
          }
          const keys = this.registry.allHedgeKeys();
          const shown = this.perKey ? this.mostUsed(keys) : NO_KEYS;
          for (const { instance } of keys) {
            const m = instance.metrics;
            emitHedgeCalls(this.keyedEmit(emit, instance, shown), instance.name, [m.hedged, m.winner, m.cancelled]);
          }
          for (const [counts, e] of retired('hedging', emit)) emitHedgeCalls(e, counts.name, counts.hedge);
        },
      ],
      [
        f.cacheCalls,
        (emit) => {
          for (const cache of this.caches) {
            const m = cache.metrics;
            for (const result of CACHE_RESULTS) emit({ name: cache.name, result }, m[result]);
          }
        },
      ],
      [
        f.idempotencyRequests,
        (emit) => {
          for (const [outcome, count] of this.idempotency) emit({ outcome }, count);
        },
      ],
    ];
  }

  private emitHistogram(emit: Emit, name: string, kind: string, histogram: DurationHistogram): void {
    const counts = histogram.counts;
    let cumulative = 0;
    for (let i = 0; i < this.leLabels.length; i++) {
      cumulative += counts[i];
      emit({ name, kind, le: this.leLabels[i] }, cumulative, '_bucket');
    }
    emit({ name, kind, le: '+Inf' }, histogram.count, '_bucket');
    emit({ name, kind }, histogram.sumMs / 1000, '_sum');
    emit({ name, kind }, histogram.count, '_count');
  }
}

/** Adds the counts of `from` into `into`. */
function addHistogram(into: DurationHistogram, from: DurationHistogram): void {
  for (let i = 0; i < into.counts.length; i++) into.counts[i] += from.counts[i];
  into.sumMs += from.sumMs;
  into.count += from.count;
}

const RETRY_KINDS = ['successful_without_retry', 'successful_with_retry', 'failed_without_retry', 'failed_with_retry'];

function emitRetryCalls(emit: Emit, name: string, counts: readonly number[]): void {
  for (let i = 0; i < RETRY_KINDS.length; i++) emit({ name, kind: RETRY_KINDS[i] }, counts[i]);
}

const HEDGE_KINDS = ['hedged', 'winner', 'cancelled'];

function emitHedgeCalls(emit: Emit, name: string, counts: readonly number[]): void {
  for (let i = 0; i < HEDGE_KINDS.length; i++) emit({ name, kind: HEDGE_KINDS[i] }, counts[i]);
}

const TIME_LIMITER_KINDS = ['successful', 'failed', 'timeout'];

function emitTimeLimiterCalls(emit: Emit, name: string, counts: readonly number[]): void {
  for (let i = 0; i < TIME_LIMITER_KINDS.length; i++) emit({ name, kind: TIME_LIMITER_KINDS[i] }, counts[i]);
}
