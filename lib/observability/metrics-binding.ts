import { Unsubscribe } from '../kernel/events';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { POLICY_METRICS } from '../registry/policy-metrics';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { keysKept, watchSeries } from './instance-catalog';
import { PolicySeries } from './policy-series';
import { attachCollectors, Collector, FamilyDefinition } from './metric-family';
import { DEFAULT_BUCKETS, DEFAULT_PER_KEY_SERIES, MetricsRegistry } from './observability.options';

const family = (name: string, type: FamilyDefinition['type'], help: string): FamilyDefinition => ({
  name,
  type,
  help,
  combine: 'sum',
});

/** The families of this module's own features: fault injection, idempotency. */
const FEATURE_FAMILIES = {
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
} as const satisfies Record<string, FamilyDefinition>;

/**
 * Every series family, by name: each policy's (written in its folder, see
 * `registry/policy-metrics.ts`) and the features'. The `resilience4j_*`
 * ones carry the names, labels and label values of Resilience4j's
 * Micrometer binding as exported to Prometheus, so its dashboards and
 * alerts work unchanged; the `resilience4nest_*` ones are this module's
 * own. Samples of several instances (or applications) with the same labels
 * are added up, except the rates, where the highest is kept.
 */
export const METRIC_FAMILIES: Readonly<Record<string, FamilyDefinition>> = Object.fromEntries(
  [
    ...POLICY_METRICS.flatMap((kind) => kind.series.map((series) => series.family)),
    ...Object.values(FEATURE_FAMILIES),
  ].map((f) => [f.name, f]),
);

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
  private readonly series: PolicySeries;
  private readonly idempotency = new Map<string, number>();
  private readonly subscriptions: Unsubscribe[] = [];
  private readonly faults: ResilienceRegistry['faults'];
  private readonly detach: () => void;
  private closed = false;

  /**
   * @param registry - the instances to report on
   * @param options - the prom-client registry and histogram buckets
   * @throws Error when a family's name is taken in the prom-client registry by a metric of someone else
   */
  constructor(registry: ResilienceRegistry, options: MetricsBindingOptions) {
    const buckets = options.buckets ?? DEFAULT_BUCKETS;
    this.faults = registry.faults;
    this.series = new PolicySeries(POLICY_METRICS, {
      buckets,
      perKey: options.perKey ?? false,
      perKeySeries: options.perKeySeries ?? DEFAULT_PER_KEY_SERIES,
      // Only an instance of one key asks: those are the registry's.
      keysOf: (policy) => keysKept(registry, policy),
      countCalls: options.countCalls,
    });
    // Attached before subscribing, so a name clash leaves nothing subscribed.
    this.detach = attachCollectors(options.registry, this.collectors(), buckets);
    this.subscriptions.push(
      watchSeries(
        registry,
        options.fallbacks ?? [],
        (observed) => this.series.bind(observed),
        (observed) => this.series.unbind(observed),
      ),
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
    this.series.close();
    this.detach();
  }

  private collectors(): Array<readonly [FamilyDefinition, Collector]> {
    const collectors: Array<readonly [FamilyDefinition, Collector]> = [...this.series.collectors()];
    const f = FEATURE_FAMILIES;
    collectors.push(
      [
        f.injectedFaults,
        (emit) => {
          for (const [name, counts] of this.faults.injected())
            for (const kind of ['latency', 'error', 'outcome'] as const) emit({ name, kind }, counts[kind]);
        },
      ],
      [
        f.idempotencyRequests,
        (emit) => {
          for (const [outcome, count] of this.idempotency) emit({ outcome }, count);
        },
      ],
    );
    return collectors;
  }
}
