/**
 * The settings whose default here differs from Resilience4j's on purpose
 * (docs/migrating-from-resilience4j.md, "Deliberate differences"), with
 * Resilience4j's value. An application.yml is bound with these (module
 * option `binding: 'spring'`, which `fromSpringConfig` sets), so the file
 * means what it means under Resilience4j; a setting the file gives wins.
 * Keys are in camelCase, by policy section.
 */
export const RESILIENCE4J_DEFAULTS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  retry: {
    // Resilience4j waits exactly wait-duration unless enable-randomized-wait is set.
    jitter: 'none',
    // Resilience4j retries every error, or only the listed ones when retry-exceptions is given.
    exceptionRules: 'resilience4j',
  },
  circuitBreaker: {
    // Resilience4j counts every error as a failure (a 4xx answer and BulkheadFullException too) unless record-exceptions is given.
    exceptionRules: 'resilience4j',
  },
  bulkhead: {
    // Resilience4j lets any number of callers wait up to max-wait-duration.
    queueCapacity: Number.POSITIVE_INFINITY,
  },
};
