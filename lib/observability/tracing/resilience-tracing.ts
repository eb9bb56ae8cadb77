import { Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { IdempotencyRegistry } from '../../features/idempotency/idempotency.registry';
import { loadOptionalPeer, tryLoadOptionalPeer } from '../../kernel/optional-peer';
import { InstanceCatalog, ObservedSeries } from '../instance-catalog';
import { withAttemptSpans } from './attempt-spans';
import { ResilienceSpanEvents } from './span-events';
import { OPENTELEMETRY_API, OpenTelemetry } from './tracing.peer';
import { readTracingOptions, ResolvedTracingOptions } from './tracing.options';

/**
 * True when a tracer provider has been registered with the OpenTelemetry
 * API: the global one is a proxy whose delegate stays the no-op provider
 * until an SDK registers.
 */
export function tracerProviderRegistered(otel: OpenTelemetry): boolean {
  const provider = otel.trace.getTracerProvider();
  const delegate = provider instanceof otel.ProxyTracerProvider ? provider.getDelegate() : provider;
  return delegate.constructor.name !== 'NoopTracerProvider';
}

/**
 * Records the resilience events of every decorated call (retries, refusals,
 * timeouts, fallbacks, hedges, replays) on the OpenTelemetry span active when
 * they happen (module option `tracing`). Without `@opentelemetry/api`, or
 * without a tracer provider registered when the application starts, it
 * loads nothing and subscribes to nothing, so the policies do no extra work.
 * Injectable; provided and exported by `ResilienceModule`.
 */
@Injectable()
export class ResilienceTracing implements OnApplicationBootstrap, OnModuleDestroy {
  /** The resolved `tracing` option. */
  readonly options: ResolvedTracingOptions;
  private events: ResilienceSpanEvents | undefined;
  private stopWatching: (() => void) | undefined;

  /** @internal */
  constructor(
    private readonly catalog: InstanceCatalog,
    private readonly idempotency: IdempotencyRegistry,
  ) {
    // Resolved here, so a bad option or a missing peer (with `enabled: true`) fails while the application is created.
    this.options = readTracingOptions(catalog.registry.options.extras.tracing);
    if (this.options.enabled === true) loadOptionalPeer(OPENTELEMETRY_API, "module option 'tracing'");
  }

  /**
   * @internal `call` with a span around each attempt when `spanPerAttempt`
   * is set and tracing is on (decided when the pipelines are built); else `call` itself.
   */
  attemptSpans(call: (args: unknown[]) => unknown, target: string): (args: unknown[]) => unknown {
    if (!this.options.spanPerAttempt) return call;
    const otel = this.openTelemetry();
    return otel === undefined ? call : withAttemptSpans(call, target, otel, this.options.recordExceptionMessages);
  }

  /** True once events are being recorded on spans. */
  get active(): boolean {
    return this.events !== undefined;
  }

  /** Subscribes to every instance, when tracing is on. */
  onApplicationBootstrap(): void {
    const otel = this.openTelemetry();
    if (otel === undefined) return;
    const events = new ResilienceSpanEvents(otel);
    this.events = events;
    const unbind = (evicted: ObservedSeries): void => events.unbind(evicted);
    const stopWatchingInstances = this.catalog.watch((observed) => events.bind(observed), unbind, true);
    // Every hedge too, those of keys and those made after startup; an evicted one is let go.
    const stopWatchingHedges = this.catalog.watchHedges((observed) => events.bindHedge(observed), unbind);
    this.stopWatching = () => {
      stopWatchingInstances();
      stopWatchingHedges();
    };
    if (this.catalog.registry.faults.enabled) events.bindFaults(this.catalog.registry.faults);
    events.bindIdempotency(this.idempotency);
  }

  /** Unsubscribes from every instance. */
  onModuleDestroy(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
    this.events?.close();
    this.events = undefined;
  }

  private openTelemetry(): OpenTelemetry | undefined {
    const { enabled } = this.options;
    if (enabled === false) return undefined;
    if (enabled === true) return loadOptionalPeer(OPENTELEMETRY_API, "module option 'tracing'");
    const otel = tryLoadOptionalPeer(OPENTELEMETRY_API);
    return otel !== undefined && tracerProviderRegistered(otel) ? otel : undefined;
  }
}
