import { InstanceCatalog } from './instance-catalog';
import { ResilienceEventLogger } from './resilience-event-logger';
import { ResilienceHealthIndicator } from './resilience-health.indicator';
import { ResilienceMetrics } from './resilience-metrics';

/**
 * The observability providers `ResilienceModule` provides and exports:
 * none loads prom-client or terminus until the feature is used.
 */
export const OBSERVABILITY_PROVIDERS = [
  InstanceCatalog,
  ResilienceMetrics,
  ResilienceEventLogger,
  ResilienceHealthIndicator,
];
