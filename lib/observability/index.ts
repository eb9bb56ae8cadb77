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
  CircuitBreakersHealthData,
  FallbackShareHealthData,
  KeysHealth,
  LoadSheddingHealthData,
  RateLimitersHealthData,
  ResilienceHealthResult,
} from './resilience-health.indicator';
export type {
  CircuitBreakerHealth,
  CircuitBreakerHealthStatus,
} from '../policies/circuit-breaker/circuit-breaker.health';
export type { RateLimiterHealth, RateLimiterHealthStatus } from '../policies/rate-limiter/rate-limiter.health';
export type { FallbackShareCounts } from './fallback-share';
export { ResilienceEndpointsModule } from './resilience-endpoints.module';
export { ResilienceTracing } from './tracing/resilience-tracing';
export { RESILIENCE_SPAN_ATTRIBUTES, RESILIENCE_SPAN_EVENTS } from '../kernel/span-attributes';
export type { ResolvedTracingOptions, TracingOptions } from './tracing/tracing.options';
export { DeadlinePropagator } from './tracing/deadline-propagator';
export type { HeaderSetter } from './tracing/deadline-propagator';
export { OUTBOX_FAMILIES } from './outbox-observability';
export type { OutboxHealthData, OutboxHealthOptions, OutboxStatus, ParkedEventStatus } from './outbox-observability';
