import type { BulkheadConfigInput } from '../policies/bulkhead/bulkhead.config';
import type { ThreadPoolBulkheadConfigInput } from '../policies/bulkhead/thread-pool-bulkhead.config';
import type { CircuitBreakerConfigInput } from '../policies/circuit-breaker/circuit-breaker.config';
import type { Clock } from '../kernel/clock';
import type { Duration } from '../config/duration';
import type { PolicySection } from '../config/schema';
import type { FaultInjectionOptions } from '../features/fault-injection/fault-injection.options';
import type { RateLimiterConfigInput } from '../policies/rate-limiter/rate-limiter.config';
import type { RateLimiterStore } from '../policies/rate-limiter/rate-limiter-store';
import type { CircuitBreakerStore } from '../policies/circuit-breaker/circuit-breaker-store';
import type { PolicyKind } from '../kernel/resilience.constants';
import type { RetryConfigInput } from '../policies/retry/retry.config';
import type { TimeLimiterConfigInput } from '../policies/time-limiter/time-limiter.config';
import type { HedgeConfigInput } from '../policies/hedge/hedge.config';
import type { CacheConfigInput } from '../policies/cache/cache.config';

/**
 * How inbound deadlines are read. Giving the module a `deadline` key (`{}`
 * for the defaults) turns on the request scope: every HTTP request runs in
 * one, whose signal aborts at the request's deadline or when its client goes
 * away before the answer is finished. Without the key, no middleware or hook
 * is installed and the header is not read.
 */
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
   * request scope (with `deadline` set), or another attempt's. `'always'`:
   * every attempt, for code that reads `currentSignal()` in calls made
   * outside any request scope. Entering a context costs every call that
   * does it (and, on Node 20, makes every promise of the process dearer),
   * so `'auto'` pays only where a request scope already needs one.
   */
  attemptContext?: 'auto' | 'always';
}

/**
 * The options the registry reads: its policy sections and what its
 * instances need (clock, random source, order, binding, the shared rate
 * limiters' store, hedging, fault injection). A module options object
 * (`ResilienceModuleOptions`) is one of these: the registry validates the
 * whole of it and leaves the other sections to the parts that read them.
 */
export interface RegistryOptions {
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
  /** Inbound deadlines and client cancellation; off without this key, on with `{}` or any of its options. */
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
  /** Where circuit breakers with `shared` share their transitions with other replicas, e.g. `new RedisCircuitBreakerStore({ client })`. */
  circuitBreakerStore?: CircuitBreakerStore;
  /** Resilience4j's thread-pool bulkheads, run as bulkheads (`@Bulkhead(name)`): `maxThreadPoolSize` calls at once, `queueCapacity` waiting. */
  threadPoolBulkhead?: PolicySection<ThreadPoolBulkheadConfigInput>;
  /** Latency, errors and substitute outcomes injected per instance name, for game days and tests. Off unless `enabled`; refused in production unless `allowInProduction`. */
  faultInjection?: FaultInjectionOptions;
  /** Hedge configs and instances for `@Hedge`: `delay`, `maxHedgedAttempts`, `budget`, `safe`, `latencyWindowSize`. */
  hedging?: PolicySection<HedgeConfigInput>;
  /**
   * Cache configs and instances for `@Cache`: `key`, `ttl`, `staleIfError`
   * (the last known good's shelf life), `coalesce`, `maxEntries`, `store`, `mark`.
   */
  cache?: PolicySection<CacheConfigInput>;
  /** Idempotency keys: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  idempotency?: unknown;
  /** Prometheus series: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  metrics?: unknown;
  /** The health indicator's settings: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  health?: unknown;
  /** Event logs: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  logging?: unknown;
  /** Load shedding: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  loadShedding?: unknown;
  /** OpenTelemetry span events: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  tracing?: unknown;
  /** The transactional outbox: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  outbox?: unknown;
  /** Reloading the options while the application runs: read by the module (see `ResilienceModuleOptions`), not by the registry. */
  reload?: unknown;
}
