import type { BulkheadConfigInput } from './bulkhead/bulkhead.config';
import type { ThreadPoolBulkheadConfigInput } from './bulkhead/thread-pool-bulkhead.config';
import type { CircuitBreakerConfigInput } from './circuit-breaker/circuit-breaker.config';
import type { Clock } from './clock';
import type { Duration } from './config/duration';
import type { PolicySection } from './config/schema';
import type { IdempotencyModuleOptions } from './idempotency/idempotency.options';
import type { LoadSheddingOptions } from './load-shedding/load-shedding.options';
import type { FaultInjectionOptions } from './fault-injection/fault-injection.options';
import type { OutboxModuleOptions } from './outbox/outbox.options';
import type { HealthOptions, LoggingOptions, MetricsOptions } from './observability/observability.options';
import type { RateLimiterConfigInput } from './rate-limiter/rate-limiter.config';
import type { RateLimiterStore } from './rate-limiter/rate-limiter-store';
import type { PolicyKind } from './resilience.constants';
import type { RetryConfigInput } from './retry/retry.config';
import type { TimeLimiterConfigInput } from './time-limiter/time-limiter.config';
import type { HedgeConfigInput } from './hedge/hedge.config';
import type { TracingOptions } from './observability/tracing/tracing.options';

/** How inbound deadlines are read. */
export interface DeadlineOptions {
  /** Header carrying the remaining time in ms. Default `x-request-deadline-ms`. */
  header?: string;
  /** Budget given to a request that carries no (valid) deadline header. Default: none. */
  defaultBudget?: Duration;
  /** Upper bound on a budget asked for by a header; a larger value is clamped to it. Default 24h. */
  maxBudget?: Duration;
  /**
   * When a time-limited attempt runs in an AsyncLocalStorage context of its
   * own, so that `currentSignal()`, `remainingTime()` and `deadlineHeaders()`
   * inside it see the attempt (its signal, aborted at its time limit, and its
   * limit). `'auto'` (default): when the attempt starts inside a context — a
   * request with a deadline (header or `defaultBudget`), or another
   * attempt's. `'always'`: every attempt, for code that reads
   * `currentSignal()` in calls made outside any request deadline. Entering a
   * context costs every call that does it (and, on Node 20, makes every
   * promise of the process dearer), so `'auto'` pays only where a deadline
   * already needs one.
   */
  attemptContext?: 'auto' | 'always';
}

/**
 * Options of `ResilienceModule.forRoot`. Each policy section is shaped like
 * Resilience4j's Spring Boot config (`configs` + `instances`); keys may be
 * written in any spelling Spring's relaxed binding accepts (camelCase,
 * kebab-case, snake_case, dotted paths) and section names in Resilience4j's
 * (`circuitbreaker`, `timelimiter`, `thread-pool-bulkhead`), so the
 * `resilience4j` part of an `application.yml` can be passed as it is (see
 * `fromSpringConfig`).
 */
export interface ResilienceModuleOptions {
  /** A decorator naming an undeclared instance fails bootstrap. Default false. */
  strict?: boolean;
  /**
   * Most undeclared instances of each policy (made from `configs.default`
   * on first use); asking for one more throws a `TooManyInstancesError`
   * naming this option (a 503 problem through `ResilienceExceptionFilter`).
   * Bounds instances and metric series when names come from request data.
   * Default 100.
   */
  maxUndeclaredInstances?: number;
  /** Time and timers for every policy; inject a `VirtualClock` in tests. */
  clock?: Clock;
  /** Uniform [0, 1) source for jitter; inject a seeded one in tests. */
  random?: () => number;
  /** Pipeline order, outermost first; must list every layer once. */
  order?: readonly PolicyKind[];
  /** Inbound deadline handling. */
  deadline?: DeadlineOptions;
  /**
   * How the policy sections are bound. `native` (default): every key must be
   * known, names are kept as written, this module's defaults apply.
   * `spring` (what `fromSpringConfig` sets): as Spring binds an
   * `application.yml` — a key Spring's binder ignores is a warning, an
   * instance name written without brackets keeps only letters, digits and
   * `-`, an empty value is no value, and Resilience4j's defaults replace the
   * ones this module chose differently (retry `jitter: 'none'` and
   * `exceptionRules: 'resilience4j'`, breaker `exceptionRules: 'resilience4j'`,
   * an unbounded bulkhead queue).
   */
  binding?: 'native' | 'spring';
  /** An unknown key: `error` (default with `binding: 'native'`) or a warning (default with `binding: 'spring'`). */
  unknownKeys?: 'error' | 'warn';
  /** Retry configs and instances, as Resilience4j's `resilience4j.retry`. */
  retry?: PolicySection<RetryConfigInput>;
  /** Circuit breaker configs and instances, as Resilience4j's `resilience4j.circuitbreaker`. */
  circuitBreaker?: PolicySection<CircuitBreakerConfigInput>;
  /** Semaphore bulkhead configs and instances, as Resilience4j's `resilience4j.bulkhead`. */
  bulkhead?: PolicySection<BulkheadConfigInput>;
  /** Time limiter configs and instances, as Resilience4j's `resilience4j.timelimiter`. */
  timeLimiter?: PolicySection<TimeLimiterConfigInput>;
  /** Rate limiter configs and instances, as Resilience4j's `resilience4j.ratelimiter`. */
  rateLimiter?: PolicySection<RateLimiterConfigInput>;
  /** Where rate limiters with `shared: true` keep their permits, e.g. `new RedisRateLimiterStore({ client })`. */
  rateLimiterStore?: RateLimiterStore;
  /** Resilience4j's thread-pool bulkheads, run as bulkheads (`@Bulkhead(name)`): `maxThreadPoolSize` calls at once, `queueCapacity` waiting. */
  threadPoolBulkhead?: PolicySection<ThreadPoolBulkheadConfigInput>;
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
  /** Latency, errors and substitute outcomes injected per instance name, for game days and tests. Off unless `enabled`; refused in production unless `allowInProduction`. */
  faultInjection?: FaultInjectionOptions;
  /** Hedge configs and instances for `@Hedge`: `delay`, `maxHedgedAttempts`, `budget`, `safe`, `latencyWindowSize`. */
  hedging?: PolicySection<HedgeConfigInput>;
  /** Resilience events on OpenTelemetry spans: `false` to turn off, `true` to require it. Default: on when a tracer provider is registered. */
  tracing?: TracingOptions | boolean;
  /** The transactional outbox: its PostgreSQL store, its publisher and the relay's settings. Default off. */
  outbox?: OutboxModuleOptions;
}
