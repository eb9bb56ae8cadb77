export { ResilienceMetricsBinding } from './metrics-binding';
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
export { ResilienceHealthIndicator } from './resilience-health.indicator';
export type {
  CircuitBreakerHealth,
  CircuitBreakerHealthStatus,
  CircuitBreakersHealthData,
  FallbackShareHealthData,
  LoadSheddingHealthData,
  RateLimiterHealth,
  RateLimiterHealthStatus,
  RateLimitersHealthData,
  ResilienceHealthResult,
} from './resilience-health.indicator';
export type { FallbackShareCounts } from './fallback-share';
export { ResilienceEndpointsModule } from './resilience-endpoints.module';
export { OUTBOX_FAMILIES } from './outbox-observability';
export type { OutboxHealthData, OutboxHealthOptions, OutboxStatus, ParkedEventStatus } from './outbox-observability';
