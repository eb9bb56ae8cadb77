export { InstanceCatalog, watchInstances } from './instance-catalog';
export type { ObservedFallback, ObservedInstance } from './instance-catalog';
export { METRIC_FAMILIES, ResilienceMetricsBinding } from './metrics-binding';
export type { MetricsBindingOptions } from './metrics-binding';
export { DEFAULT_BUCKETS } from './observability.options';
export type {
  FallbackShareOptions,
  GuardLike,
  HealthOptions,
  LoggingOptions,
  MetricsOptions,
  MetricsRegistry,
  ResilienceEndpointsOptions,
  StatusEndpointOptions,
} from './observability.options';
export { ResilienceMetrics } from './resilience-metrics';
export { ResilienceEventLogger } from './resilience-event-logger';
export { ResilienceHealthIndicator } from './resilience-health.indicator';
export type {
  CircuitBreakerHealth,
  CircuitBreakerHealthStatus,
  CircuitBreakersHealthData,
  FallbackShareHealthData,
  RateLimiterHealth,
  RateLimiterHealthStatus,
  RateLimitersHealthData,
  ResilienceHealthResult,
} from './resilience-health.indicator';
export type { FallbackShareCounts } from './fallback-share';
export { ResilienceEndpointsModule } from './resilience-endpoints.module';
export { BREAKER_UPDATES, ResilienceStatus } from './resilience-status';
export type { BreakerUpdate, InstanceStatus } from './resilience-status';
export type { RecordedEvent, StatusPolicy } from './event-journal';
