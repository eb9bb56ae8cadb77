/**
 * Resilience4j 2.x Spring Boot properties that have no effect here, with
 * what happens instead, and the 0.x properties that 2.x renamed. Taken from
 * Resilience4j's `Common*ConfigurationProperties` classes
 * (resilience4j-framework-common) and its Spring Boot 3 auto-configuration.
 * Keys are in camelCase; lookups use Spring's relaxed form.
 */

const EVENT_BUFFER =
  'events reach subscribers as they happen (registry onStateTransition, onRetry, ...) and the events endpoint keeps its own journal; no per-instance buffer is kept';
const STACK_TRACES = 'a retry raises the last error of its attempts, whose stack trace is its own';
const JAVA_CLASS = (instead: string): string => `a Java class cannot be loaded in Node; ${instead}`;
const TAGS =
  "series carry Resilience4j's labels only; to add labels such as 'application' to every series, use prom-client's registry.setDefaultLabels({ ... })";
const METRICS = "Prometheus series are turned on or off with the module option 'metrics'";
const ASPECT_ORDER =
  "the order of the layers is the module option 'order' (default: idempotent, fallback, retry, circuitBreaker, rateLimiter, timeLimiter, bulkhead, which is Resilience4j's default aspect order)";

/** Per-instance properties accepted with a warning, by policy section. */
export const IGNORED_INSTANCE_PROPERTIES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  circuitBreaker: {
    eventConsumerBufferSize: EVENT_BUFFER,
    recordFailurePredicate: JAVA_CLASS('list error classes or names in recordExceptions and ignoreExceptions instead'),
    recordExceptionPredicate: JAVA_CLASS('list error classes or names in recordExceptions instead'),
    ignoreExceptionPredicate: JAVA_CLASS('list error classes or names in ignoreExceptions instead'),
    recordResultPredicate: JAVA_CLASS('give recordResult: (result) => boolean in code instead'),
    waitIntervalFunctionInOpenState: JAVA_CLASS(
      'the open wait follows waitDurationInOpenState, enableExponentialBackoff and enableRandomizedWait',
    ),
    transitionOnResult: JAVA_CLASS(
      'the failure and slow-call rates decide every transition; give recordResult to count a result as a failure',
    ),
    ignoreClassBindingExceptions:
      'class names are never loaded here, so an unknown name cannot fail startup; a Java name with no Node equivalent is warned about instead',
  },
  retry: {
    eventConsumerBufferSize: EVENT_BUFFER,
    writableStackTraceEnabled: STACK_TRACES,
    intervalFunction: JAVA_CLASS('waits follow waitDuration, exponential backoff, randomized wait and jitter'),
    intervalBiFunction: JAVA_CLASS(
      'waits follow waitDuration, exponential backoff, randomized wait and jitter (and a Retry-After the error carries)',
    ),
    retryExceptionPredicate: JAVA_CLASS('list error classes or names in retryExceptions and ignoreExceptions instead'),
    resultPredicate: JAVA_CLASS('give retryOnResult: (result) => boolean in code instead'),
    consumeResultBeforeRetryAttempt: JAVA_CLASS('there is no hook between a result and its retry'),
  },
  bulkhead: {
    eventConsumerBufferSize: EVENT_BUFFER,
    fairCallHandlingStrategyEnabled: 'waiters are always served in arrival order',
  },
  threadPoolBulkhead: {
    eventConsumerBufferSize: EVENT_BUFFER,
    coreThreadPoolSize:
      'Node has no thread pool to size: only max-thread-pool-size counts (as the number of calls running at once)',
    keepAliveDuration: 'Node has no pool threads to keep alive',
    contextPropagators: JAVA_CLASS(
      'the request context (deadline, abort signal) follows every call through AsyncLocalStorage',
    ),
  },
  timeLimiter: {
    eventConsumerBufferSize: EVENT_BUFFER,
  },
  rateLimiter: {
    eventConsumerBufferSize: EVENT_BUFFER,
    subscribeForEvents: 'events are always published to subscribers',
  },
};

const HEALTH = 'only circuit breakers and rate limiters report to the health indicator (ResilienceHealthIndicator)';

/**
 * Keys found in real application.yml files where Resilience4j's property
 * class has no such property, so Spring's binder ignores them: with
 * `binding: 'spring'` (fromSpringConfig) each is a warning saying what
 * happens instead; in native options, an unknown key like any other.
 */
export const SPRING_IGNORED_PROPERTIES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  bulkhead: {
    type: "the type is chosen where the bulkhead is used: @Bulkhead(name) for this one, @Bulkhead(name, { type: 'THREADPOOL' }) for the thread-pool-bulkhead of the name",
    registerHealthIndicator: HEALTH,
  },
  threadPoolBulkhead: {
    tags: TAGS,
    registerHealthIndicator: HEALTH,
  },
  timeLimiter: {
    registerHealthIndicator: HEALTH,
  },
};

/** Section-level keys (beside `configs` and `instances`) accepted with a warning, by policy section. */
export const IGNORED_SECTION_PROPERTIES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  circuitBreaker: { tags: TAGS, metrics: METRICS, circuitBreakerAspectOrder: ASPECT_ORDER },
  retry: { tags: TAGS, metrics: METRICS, retryAspectOrder: ASPECT_ORDER },
  bulkhead: { tags: TAGS, metrics: METRICS, bulkheadAspectOrder: ASPECT_ORDER },
  threadPoolBulkhead: { tags: TAGS, metrics: METRICS },
  timeLimiter: { tags: TAGS, metrics: METRICS, timeLimiterAspectOrder: ASPECT_ORDER },
  rateLimiter: { tags: TAGS, metrics: METRICS, rateLimiterAspectOrder: ASPECT_ORDER },
};

/** Sections of `resilience4j` with no equivalent here. */
export const IGNORED_SECTIONS: Readonly<Record<string, string>> = {
  scheduled: "timers run on Node's event loop; there is no scheduled executor to size or to propagate context through",
  micrometer:
    "there is no @Timer decorator; call durations are in resilience4j_circuitbreaker_calls_seconds, with buckets set by the module option 'metrics'",
  thread: "calls run on Node's event loop: there are no platform or virtual threads to choose between",
};

/** Resilience4j 0.x (and early 1.x) properties, with the 2.x property that replaced each. */
export const LEGACY_PROPERTIES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  circuitBreaker: {
    ringBufferSizeInClosedState:
      "'sliding-window-size' (with 'sliding-window-type: COUNT_BASED'; set 'minimum-number-of-calls' to the same number for 0.x behaviour)",
    ringBufferSizeInHalfOpenState: "'permitted-number-of-calls-in-half-open-state'",
    waitInterval: "'wait-duration-in-open-state'",
    waitDurationInOpenStateMillis: "'wait-duration-in-open-state' (a duration such as 10s)",
  },
  retry: {
    maxRetryAttempts: "'max-attempts' (which counts the first call too)",
    waitInterval: "'wait-duration'",
    waitDurationMillis: "'wait-duration' (a duration such as 500ms)",
  },
  bulkhead: {
    maxWaitTime: "'max-wait-duration' (a duration such as 50ms)",
  },
  threadPoolBulkhead: {
    threadPoolProperties:
      "the keys of 'thread-pool-properties' written directly on the instance ('max-thread-pool-size', 'queue-capacity', ...)",
    keepAliveTime: "'keep-alive-duration'",
  },
  rateLimiter: {
    limitRefreshPeriodInMillis: "'limit-refresh-period' (a duration such as 500ns or 1s)",
    limitRefreshPeriodInNanos: "'limit-refresh-period' (a duration such as 500ns or 1s)",
    timeoutInMillis: "'timeout-duration' (a duration such as 5s)",
  },
};
