import { DurationHistogram } from '../kernel/duration-histogram';
import { Unsubscribe } from '../kernel/events';
import type { MetricsStart, MetricWriter, PolicyMetrics } from '../kernel/telemetry';
import { Collector, Emit, FamilyDefinition } from './metric-family';

/** No key is shown on its own without `perKey`. */
const NO_KEYS: ReadonlySet<string> = new Set();

/** The `key` label of the keys of a name that have no series of their own. */
const OTHER_KEYS = 'other';

/** A kept key of an instance used per key, with how often it was used. */
export interface UsedKey {
  readonly key: string;
  readonly uses: number;
  readonly instance: { readonly name: string };
}

/** The `perKeySeries` most used keys of each name among `entries` (the keys of several names), as `name\0key`. */
function mostUsedKeys(entries: Iterable<UsedKey>, perKeySeries: number): ReadonlySet<string> {
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
    for (let i = 0; i < Math.min(perKeySeries, list.length); i++) shown.add(`${list[i].name}\u0000${list[i].key}`);
  }
  return shown;
}

/** `emit`, writing each sample a second time with the `key` label `key`. */
function alsoUnderKey(emit: Emit, key: string): Emit {
  return (labels, value, suffix) => {
    emit(labels, value, suffix);
    emit({ ...labels, key }, value, suffix);
  };
}

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

/** An instance as the series see it: its policy, and its key when it is the instance of one key. */
export interface SeriesInstance {
  readonly policy: string;
  readonly instance: { readonly name: string; readonly key?: string };
  readonly key?: string;
}

/** What {@link PolicySeries} takes besides the descriptions. */
export interface PolicySeriesOptions {
  /** Upper bounds, in seconds, of the call-duration buckets. */
  readonly buckets: readonly number[];
  /** Series labelled `key` for the most used keys of each name (see `MetricsBindingOptions.perKey`). */
  readonly perKey: boolean;
  /** How many keys of each name get series of their own with `perKey`. */
  readonly perKeySeries: number;
  /** The keys of every instance of `policy` used per key, with how often each was used. */
  readonly keysOf: (policy: string) => Iterable<UsedKey>;
  /** See {@link MetricsStart.countCalls}. */
  readonly countCalls?: MetricsStart['countCalls'];
}

/**
 * The Prometheus series of the instances of the kinds of policy given, each
 * read through its kind's description ({@link PolicyMetrics}): the families
 * of every kind, the counts kept of each instance bound, the counts its
 * evicted instances leave by name, and with `perKey` the `key` label.
 */
export class PolicySeries {
  private readonly kinds = new Map<string, Kind>();
  private readonly boundsMs: Float64Array;
  private readonly leLabels: readonly string[];
  private readonly perKey: boolean;
  private readonly perKeySeries: number;

  constructor(
    kinds: readonly PolicyMetrics[],
    private readonly options: PolicySeriesOptions,
  ) {
    this.boundsMs = Float64Array.from(options.buckets, (s) => s * 1000);
    this.leLabels = options.buckets.map(String);
    this.perKey = options.perKey;
    this.perKeySeries = options.perKeySeries;
    for (const metrics of kinds) this.kinds.set(metrics.policy, { metrics, live: new Map(), retired: new Map() });
  }

  /** Stops counting for every instance. */
  close(): void {
    for (const kind of this.kinds.values()) {
      for (const bound of kind.live.values()) for (const unsubscribe of bound.subscriptions) unsubscribe();
      kind.live.clear();
    }
  }

  /** Starts counting for `observed`, if its kind has series. */
  bind(observed: SeriesInstance): void {
    const kind = this.kinds.get(observed.policy);
    if (kind === undefined) return;
    const instance = observed.instance;
    const subscriptions: Unsubscribe[] = [];
    const counts = kind.metrics.start(instance, {
      into: subscriptions,
      histogram: () => new DurationHistogram(this.boundsMs),
      countCalls: this.options.countCalls,
    });
    kind.live.set(instance, { instance, counts, subscriptions });
  }

  /** An evicted instance: its counters are added to its name's retired counts, its gauges dropped. */
  unbind(observed: SeriesInstance): void {
    const kind = this.kinds.get(observed.policy);
    const bound = kind?.live.get(observed.instance);
    if (kind === undefined || bound === undefined) return;
    for (const unsubscribe of bound.subscriptions) unsubscribe();
    kind.live.delete(observed.instance);
    const retire = kind.metrics.retire;
    if (retire === undefined) return;
    const keyed = observed.key !== undefined;
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

  /** A collector for each family of each kind, in the order of the kinds and of their families. */
  collectors(): Array<readonly [FamilyDefinition, Collector]> {
    const collectors: Array<readonly [FamilyDefinition, Collector]> = [];
    for (const kind of this.kinds.values()) {
      const policy = kind.metrics.policy;
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
    return collectors;
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
    return alsoUnderKey(emit, shown().has(`${instance.name}\u0000${key}`) ? key : OTHER_KEYS);
  }

  /** The most used `perKeySeries` keys of each name of `policy`, as `name\0key`; empty without `perKey`. */
  private shownKeys(policy: string): ReadonlySet<string> {
    return this.perKey ? mostUsedKeys(this.options.keysOf(policy), this.perKeySeries) : NO_KEYS;
  }

  /** Emits the retired counts of `retired` under its name (and `key="other"` with `perKey`, for keys). */
  private retiredEmit(emit: Emit, retired: RetiredCounts): Emit {
    return !this.perKey || !retired.keyed ? emit : alsoUnderKey(emit, OTHER_KEYS);
  }

  /** What a policy writes its samples to: `emit`, with a histogram's buckets, sum and count. */
  private writer(emit: Emit): MetricWriter {
    return {
      sample: (labels, value) => emit(labels, value),
      histogram: (name, kind, histogram) => this.emitHistogram(emit, name, kind, histogram),
    };
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
