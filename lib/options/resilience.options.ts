import type { IdempotencyModuleOptions } from '../features/idempotency/idempotency.options';
import type { LoadSheddingOptions } from '../features/load-shedding/load-shedding.options';
import type { OutboxModuleOptions } from '../features/outbox/outbox.options';
import type { HealthOptions, LoggingOptions, MetricsOptions } from '../observability/observability.options';
import type { TracingOptions } from '../observability/tracing/tracing.options';
import type { RegistryOptions } from '../registry/registry.options';
import type { ReloadOptions } from '../registry/reload.options';

/**
 * Options of `ResilienceModule.forRoot`. Each policy section is shaped like
 * Resilience4j's Spring Boot config (`configs` + `instances`); keys may be
 * written in any spelling Spring's relaxed binding accepts (camelCase,
 * kebab-case, snake_case, dotted paths) and section names in Resilience4j's
 * (`circuitbreaker`, `timelimiter`, `thread-pool-bulkhead`), so the
 * `resilience4j` part of an `application.yml` can be passed as it is (see
 * `fromSpringConfig`).
 */
export interface ResilienceModuleOptions extends RegistryOptions {
  /** Idempotency keys for `@Idempotent`: store, TTL, lease, header, principal, replayed headers, reconciler. */
  idempotency?: IdempotencyModuleOptions;
  /** Prometheus series through prom-client: `false` to turn off, or registry and buckets. Default: on when prom-client is installed. */
  metrics?: MetricsOptions | boolean;
  /** Settings of `ResilienceHealthIndicator` (the fallback-share check). */
  health?: HealthOptions;
  /** Logs of breaker transitions and of budget-denial and bulkhead-saturation episodes: `false` to turn off. */
  logging?: LoggingOptions | boolean;
  /** Admission control at the server's door: a fixed or adaptive in-flight limit, event-loop delay, priorities. Default off. */
  loadShedding?: LoadSheddingOptions;
  /** Resilience events on OpenTelemetry spans: `false` to turn off, `true` to require it. Default: on when a tracer provider is registered. */
  tracing?: TracingOptions | boolean;
  /** The transactional outbox: its PostgreSQL store, its publisher and the relay's settings. Default off. */
  outbox?: OutboxModuleOptions;
  /** Live reconfiguration from a source read every `interval` (or on change, with `watchSpringConfig(path)`). Default off. */
  reload?: ReloadOptions;
}
