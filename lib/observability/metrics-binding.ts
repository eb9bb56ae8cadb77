import { DurationHistogram } from '../kernel/duration-histogram';
import { Unsubscribe } from '../kernel/events';
import type { MetricWriter, PolicyMetrics, PolicyTelemetry } from '../kernel/telemetry';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { POLICY_METRICS } from '../registry/policy-metrics';
import type { RegistryPolicy } from '../registry/policy-instances';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { ObservedInstance, watchInstances } from './instance-catalog';
import { attachCollectors, Collector, Emit, FamilyDefinition } from './metric-family';
import { DEFAULT_BUCKETS, DEFAULT_PER_KEY_SERIES, MetricsRegistry } from './observability.options';

const family = (name: string, type: FamilyDefinition['type'], help: string): FamilyDefinition => ({
  name,
  type,
  help,
  combine: 'sum',
});

/** The families of this module's own features: fault injection, idempotency, hedging. */
const FEATURE_FAMILIES = {
  injectedFaults: family(
    'resilience4nest_injected_faults_total',
    'counter',
    'Faults injected on purpose (module option faultInjection), by instance name and kind',
  ),
  hedgeCalls: family(
    'resilience4nest_hedge_calls_total',
    'counter',
    'Hedged attempts started, calls a hedge answered, and attempts cancelled because another answered first',
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

/** No key is shown on its own without `perKey`. */
const NO_KEYS: ReadonlySet<string> = new Set();

/** The `key` label of the keys of a name that have no series of their own. */
const OTHER_KEYS = 'other';

/** One instance the binding counts for: its counts and the subscriptions that feed them. */
interface Bound {
  readonly instance: { readonly name: string; readonly key?: string };
  readonly counts: unknown;
  readonly subscriptions: Unsubscribe[];
}

/** The counts of the evicted keys (and undeclared names) of one name, kept so that no counter goes down. */
interface RetiredCounts {
  readonly name: string;
  /** The `key` label they are shown under with `perKey` (none for an evicted undeclared name). */
  readonly keyed: boolean;
  readonly counts: unknown;
}

/** A kind of policy: how its series are read, its live instances and its retired counts by name. */
interface Kind {
  readonly metrics: PolicyMetrics;
  readonly live: Map<object, Bound>;
  readonly retired: Map<string, RetiredCounts>;
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
  private readonly kinds = new Map<string, Kind>();
  private readonly registry: ResilienceRegistry;
  private readonly perKey: boolean;
  private readonly perKeySeries: number;
  private readonly idempotency = new Map<string, number>();
  private readonly subscriptions: Unsubscribe[] = [];
  private readonly boundsMs: Float64Array;
  private readonly leLabels: readonly string[];
  private readonly countCalls: MetricsBindingOptions['countCalls'];
  private readonly faults: ResilienceRegistry['faults'];
  private readonly detach: () => void;
  private readonly hedges: ResilienceRegistry['hedges'];
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
    for (const metrics of POLICY_METRICS)
      this.kinds.set(metrics.policy, { metrics, live: new Map(), retired: new Map() });
    // Attached before subscribing, so a name clash leaves nothing subscribed.
    this.detach = attachCollectors(options.registry, this.collectors(), buckets);
    this.subscriptions.push(
      watchInstances(registry, options.fallbacks ?? [], (observed) => this.bind(observed), {
        keys: true,
        evicted: (observed) => this.unbind(observed),
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
    for (const kind of this.kinds.values()) {
      for (const bound of kind.live.values()) for (const unsubscribe of bound.subscriptions) unsubscribe();
      kind.live.clear();
    }
    this.detach();
  }

  private bind(observed: ObservedInstance): void {
    const kind = this.kinds.get(observed.policy);
    if (kind === undefined) return;
    const instance: PolicyTelemetry & { readonly name: string; readonly key?: string } = observed.instance;
    const subscriptions: Unsubscribe[] = [];
    const counts = kind.metrics.start(instance, {
      into: subscriptions,
      histogram: () => new DurationHistogram(this.boundsMs),
      countCalls: this.countCalls,
    });
    kind.live.set(instance, { instance, counts, subscriptions });
  }

  /** An evicted instance: its counters are added to its name's retired counts, its gauges dropped. */
  private unbind(observed: ObservedInstance): void {
    const kind = this.kinds.get(observed.policy);
    const bound = kind?.live.get(observed.instance);
    if (kind === undefined || bound === undefined) return;
    for (const unsubscribe of bound.subscriptions) unsubscribe();
    kind.live.delete(observed.instance);
    const retire = kind.metrics.retire;
    if (retire === undefined) return;
    const keyed = 'key' in observed && observed.key !== undefined;
    const id = `${observed.instance.name}\u0000${keyed}`;
    let retired = kind.retired.get(id);
    if (retired === undefined) {
      retired = {
        name: observed.instance.name,
        keyed,
        counts: retire.empty(() => new DurationHistogram(this.boundsMs)),
      };
      kind.retired.set(id, retired);
    }
    retire.add(retired.counts, observed.instance, bound.counts);
  }

  /**
   * Emits to `emit` under `labels` and, for a key of an instance with
   * `perKey`, again with its `key` label: the key itself when among the
   * most used `perKeySeries` keys of its name (`shown`), else `other`.
   */
  private keyedEmit(
    emit: Emit,
    instance: { readonly name: string; readonly key?: string },
    shown: () => ReadonlySet<string>,
  ): Emit {
    const key = instance.key;
    if (!this.perKey || key === undefined) return emit;
    const label = shown().has(`${instance.name}\u0000${key}`) ? key : OTHER_KEYS;
    return (labels, value, suffix) => {
      emit(labels, value, suffix);
      emit({ ...labels, key: label }, value, suffix);
    };
  }

  /** The most used `perKeySeries` keys of each name of `policy`, as `name\0key`; empty without `perKey`. */
  private shownKeys(policy: RegistryPolicy): ReadonlySet<string> {
    if (!this.perKey) return NO_KEYS;
    const byName = new Map<string, { name: string; key: string; uses: number }[]>();
    for (const entry of this.registry.allKeys(policy)) {
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

  /** What a policy writes its samples to: `emit`, with a histogram's buckets, sum and count. */
  private writer(emit: Emit): MetricWriter {
    return {
      sample: (labels, value) => emit(labels, value),
      histogram: (labels, histogram) => this.emitHistogram(emit, labels, histogram),
    };
  }

  private collectors(): Array<readonly [FamilyDefinition, Collector]> {
    const collectors: Array<readonly [FamilyDefinition, Collector]> = [];
    for (const kind of this.kinds.values()) {
      const policy = kind.metrics.policy as RegistryPolicy;
      for (const series of kind.metrics.series) {
        const retired = series.retired;
        collectors.push([
          series.family,
          (emit) => {
            // The keys shown on their own, read once per scrape of the family and only with a keyed instance.
            let shown: ReadonlySet<string> | undefined;
            const shownKeys = (): ReadonlySet<string> => (shown ??= this.shownKeys(policy));
            const plain = this.writer(emit);
            for (const { instance, counts } of kind.live.values()) {
              const keyed = this.keyedEmit(emit, instance, shownKeys);
              series.live(instance, counts, keyed === emit ? plain : this.writer(keyed));
            }
            if (retired !== undefined)
              for (const counts of kind.retired.values()) {
                const e = this.retiredEmit(emit, counts);
                retired(counts.name, counts.counts, e === emit ? plain : this.writer(e));
              }
          },
        ]);
      }
    }
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
        f.hedgeCalls,
        (emit) => {
          for (const hedge of this.hedges) {
            const m = hedge.metrics;
            emit({ name: hedge.name, kind: 'hedged' }, m.hedged);
            emit({ name: hedge.name, kind: 'winner' }, m.winner);
            emit({ name: hedge.name, kind: 'cancelled' }, m.cancelled);
          }
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

  private emitHistogram(emit: Emit, labels: Readonly<Record<string, string>>, histogram: DurationHistogram): void {
    const counts = histogram.counts;
    let cumulative = 0;
    for (let i = 0; i < this.leLabels.length; i++) {
      cumulative += counts[i];
      emit({ ...labels, le: this.leLabels[i] }, cumulative, '_bucket');
    }
    emit({ ...labels, le: '+Inf' }, histogram.count, '_bucket');
    emit(labels, histogram.sumMs / 1000, '_sum');
    emit(labels, histogram.count, '_count');
  }
}
