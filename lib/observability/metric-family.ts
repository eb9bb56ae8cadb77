import { BUCKETS_DIFFER, FOREIGN_METRIC } from './observability.messages';
import { MetricsRegistry } from './observability.options';

/** The Prometheus type of a family. */
export type FamilyType = 'counter' | 'gauge' | 'histogram';

/** How samples with the same labels from several instances or applications are combined. */
export type Combine = 'sum' | 'max';

/** A metric family: its name, help text, type and combining rule. */
export interface FamilyDefinition {
  readonly name: string;
  readonly help: string;
  readonly type: FamilyType;
  readonly combine: Combine;
}

/** Adds one sample; `suffix` (`_bucket`, `_sum`, `_count`) is for histograms only. */
export type Emit = (labels: Readonly<Record<string, string>>, value: number, suffix?: string) => void;

/** Emits the samples one application has for a family, read at scrape time. */
export type Collector = (emit: Emit) => void;

interface Sample {
  metricName?: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/**
 * One family as prom-client's registry sees a metric (`name`, `type`,
 * `aggregator`, `get()`, `reset()`), holding no values of its own: at each
 * scrape it asks every attached application for its samples. So the hot
 * path pays nothing to prom-client, and an application that closes simply
 * stops being asked — none of its series remain.
 */
class ResilienceMetricFamily {
  /** The name it is registered under. */
  readonly id: string;
  /** prom-client's OpenMetrics output rewrites a counter's `name` in place, so it must stay writable. */
  name: string;
  readonly help: string;
  readonly type: FamilyType;
  /** How prom-client's cluster aggregator combines workers. */
  readonly aggregator: Combine;
  readonly sources = new Set<Collector>();

  constructor(
    definition: FamilyDefinition,
    /** The histogram's bucket bounds (seconds), fixed by the first application. */
    readonly buckets: readonly number[] | undefined,
  ) {
    this.id = definition.name;
    this.name = definition.name;
    this.help = definition.help;
    this.type = definition.type;
    this.aggregator = definition.combine;
  }

  async get(): Promise<{ name: string; help: string; type: FamilyType; aggregator: Combine; values: Sample[] }> {
    const merged = new Map<string, Sample>();
    const max = this.aggregator === 'max';
    const emit: Emit = (labels, value, suffix) => {
      let key = suffix ?? '';
      for (const label in labels) key += `\u0000${labels[label]}`;
      const existing = merged.get(key);
      if (existing === undefined)
        merged.set(key, { metricName: suffix === undefined ? undefined : this.name + suffix, labels, value });
      else existing.value = max ? Math.max(existing.value, value) : existing.value + value;
    };
    for (const collect of this.sources) collect(emit);
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [...merged.values()],
    };
  }

  /** Nothing to reset: the values are views of the policies' own counters. */
  reset(): void {}
}

// One family per name per registry, shared by every application bound to that registry.
const shared = new WeakMap<MetricsRegistry, Map<string, ResilienceMetricFamily>>();

/**
 * Adds an application's collectors to the families of `registry`,
 * registering each family the first time. Returns the function that takes
 * them away again, unregistering a family once no application is left in
 * it. Throws, registering nothing, when a name is taken by a metric of
 * someone else or a histogram was registered with other buckets.
 */
export function attachCollectors(
  registry: MetricsRegistry,
  collectors: ReadonlyArray<readonly [FamilyDefinition, Collector]>,
  buckets: readonly number[],
): () => void {
  let families = shared.get(registry);
  if (families === undefined) shared.set(registry, (families = new Map<string, ResilienceMetricFamily>()));
  const plan: Array<[ResilienceMetricFamily, Collector]> = [];
  for (const [definition, collect] of collectors) {
    const registered = registry.getSingleMetric(definition.name);
    let family = families.get(definition.name);
    // A family of ours cleared from the registry (registry.clear()) is made anew.
    if (family !== undefined && registered !== family) family = undefined;
    if (family === undefined) {
      if (registered !== undefined) throw new Error(FOREIGN_METRIC(definition.name));
      family = new ResilienceMetricFamily(definition, definition.type === 'histogram' ? buckets : undefined);
    } else if (family.buckets !== undefined && !sameBuckets(family.buckets, buckets)) {
      throw new Error(BUCKETS_DIFFER(definition.name, family.buckets, buckets));
    }
    plan.push([family, collect]);
  }
  for (const [family, collect] of plan) {
    if (families.get(family.id) !== family) {
      families.set(family.id, family);
      registry.registerMetric(family as never);
    }
    family.sources.add(collect);
  }
  return () => {
    for (const [family, collect] of plan) {
      family.sources.delete(collect);
      if (family.sources.size > 0) continue;
      if (families.get(family.id) === family) families.delete(family.id);
      if (registry.getSingleMetric(family.id) === family) registry.removeSingleMetric(family.id);
    }
  };
}

function sameBuckets(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
