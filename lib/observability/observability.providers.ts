import { InstanceCatalog } from './instance-catalog';
import { ResilienceEventLogger } from './resilience-event-logger';
import { ResilienceHealthIndicator } from './resilience-health.indicator';
import { ResilienceMetrics } from './resilience-metrics';
import { ResilienceTracing } from './tracing/resilience-tracing';

/**
 * The observability providers `ResilienceModule` provides and exports:
 * none loads prom-client, terminus or OpenTelemetry until the feature is used.
 */
export const OBSERVABILITY_PROVIDERS = [
  InstanceCatalog,
  ResilienceMetrics,
  ResilienceEventLogger,
  ResilienceHealthIndicator,
  ResilienceTracing,
];
