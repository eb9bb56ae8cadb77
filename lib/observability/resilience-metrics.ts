import { Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { countReportedCalls } from '../policies/fallback/fallback.policy';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { LoadShedder } from '../features/load-shedding/load-shedder';
import { InstanceCatalog } from './instance-catalog';
import { loadSheddingCollectors } from './load-shedding-metrics';
import { attachCollectors } from './metric-family';
import { ResilienceMetricsBinding } from './metrics-binding';
import { METRICS_DISABLED } from './observability.messages';
import { MetricsRegistry, readMetricsOptions, ResolvedMetricsOptions } from './observability.options';
import { loadOptionalPeer, tryLoadOptionalPeer } from '../kernel/optional-peer';
import { PROM_CLIENT } from './observability.peers';
import { Outbox } from '../features/outbox/outbox';
import { outboxCollectors } from './outbox-observability';

/**
 * Binds the application's instances to Prometheus series at bootstrap
 * (module option `metrics`), and removes them when the application closes.
 * Injectable; provided and exported by `ResilienceModule`.
 */
@Injectable()
export class ResilienceMetrics implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly options: ResolvedMetricsOptions;
  private binding: ResilienceMetricsBinding | undefined;
  private detachLoadShedding: (() => void) | undefined;
  private detachOutbox: (() => void) | undefined;
  private readonly target: MetricsRegistry | undefined;

  /** @internal */
  constructor(
    private readonly catalog: InstanceCatalog,
    private readonly idempotency: IdempotencyRegistry,
    private readonly shedder: LoadShedder,
    @Optional() private readonly outbox?: Outbox,
  ) {
    // Resolved here, so a bad option or a missing prom-client fails while the application is created.
    this.options = readMetricsOptions(catalog.registry.options.extras.metrics);
    this.target = this.resolveRegistry();
  }

  /** The prom-client registry the series are in; `undefined` when metrics are off. */
  get registry(): MetricsRegistry | undefined {
    return this.target;
  }

  /** The registry, or an error naming `feature` when metrics are off. */
  requireRegistry(feature: string): MetricsRegistry {
    if (this.target === undefined) throw new Error(METRICS_DISABLED(feature));
    return this.target;
  }

  /** Binds every instance, the fallback policies of decorated methods included (they exist once the explorer has run). */
  onApplicationBootstrap(): void {
    if (this.target === undefined) return;
    this.binding = new ResilienceMetricsBinding(this.catalog.registry, {
      registry: this.target,
      buckets: this.options.buckets,
      perKey: this.options.perKey,
      perKeySeries: this.options.perKeySeries,
      fallbacks: this.catalog.fallbacks,
      countCalls: countReportedCalls,
      idempotency: this.idempotency,
    });
    if (this.catalog.registry.options.extras.loadShedding !== undefined) {
      this.detachLoadShedding = attachCollectors(this.target, loadSheddingCollectors(this.shedder), []);
    }
    if (this.outbox?.configured) this.detachOutbox = attachCollectors(this.target, outboxCollectors(this.outbox), []);
  }

  /** Removes this application's series (families other applications use stay). */
  onModuleDestroy(): void {
    this.binding?.close();
    this.binding = undefined;
    this.detachLoadShedding?.();
    this.detachLoadShedding = undefined;
    this.detachOutbox?.();
    this.detachOutbox = undefined;
  }

  private resolveRegistry(): MetricsRegistry | undefined {
    const { enabled, registry } = this.options;
    if (enabled === false) return undefined;
    // A registry given is used as is: prom-client itself is needed only for its global one.
    if (registry !== undefined) return registry;
    const client =
      enabled === true ? loadOptionalPeer(PROM_CLIENT, "module option 'metrics'") : tryLoadOptionalPeer(PROM_CLIENT);
    return client?.register;
  }
}
