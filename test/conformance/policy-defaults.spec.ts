import { availableParallelism } from 'node:os';
import { BULKHEAD_SCHEMA } from '../../lib/policies/bulkhead/bulkhead.config';
import { THREAD_POOL_BULKHEAD_SCHEMA } from '../../lib/policies/bulkhead/thread-pool-bulkhead.config';
import { CIRCUIT_BREAKER_SCHEMA } from '../../lib/policies/circuit-breaker/circuit-breaker.config';
import { PolicySchema, ResolvedSection, resolveSection } from '../../lib/config/schema';
import { RATE_LIMITER_SCHEMA } from '../../lib/policies/rate-limiter/rate-limiter.config';
import { RETRY_SCHEMA } from '../../lib/policies/retry/retry.config';
import { TIME_LIMITER_SCHEMA } from '../../lib/policies/time-limiter/time-limiter.config';

/*
 * The defaults each policy resolves when nothing is configured, against the
 * constants of Resilience4j 2.x that a Spring user relies on without writing
 * them down:
 * - CircuitBreakerConfig.java: DEFAULT_FAILURE_RATE_THRESHOLD, DEFAULT_SLOW_CALL_RATE_THRESHOLD,
 *   DEFAULT_SLOW_CALL_DURATION_THRESHOLD, DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN_STATE,
 *   DEFAULT_WAIT_DURATION_IN_HALF_OPEN_STATE, DEFAULT_TRANSITION_TO_STATE_AFTER_WAIT_DURATION,
 *   DEFAULT_SLIDING_WINDOW_TYPE, DEFAULT_SLIDING_WINDOW_SIZE, DEFAULT_MINIMUM_NUMBER_OF_CALLS,
 *   DEFAULT_WAIT_DURATION_IN_OPEN_STATE, automaticTransitionFromOpenToHalfOpenEnabled = false;
 * - IntervalFunction.java: DEFAULT_MULTIPLIER (1.5), DEFAULT_RANDOMIZATION_FACTOR (0.5);
 * - RetryConfig.java: DEFAULT_MAX_ATTEMPTS, DEFAULT_WAIT_DURATION, failAfterMaxAttempts = false;
 * - BulkheadConfig.java: DEFAULT_MAX_CONCURRENT_CALLS, DEFAULT_MAX_WAIT_DURATION;
 * - ThreadPoolBulkheadConfig.java: DEFAULT_MAX_THREAD_POOL_SIZE (the processor count), DEFAULT_QUEUE_CAPACITY;
 * - TimeLimiterConfig.java: DEFAULT_TIMEOUT_DURATION, DEFAULT_CANCEL_RUNNING_FUTURE.
 * Defaults of options Resilience4j does not have are this module's own (docs/configuration.md).
 */

const SECOND = 1000;

function resolvedDefaults<T extends object>(schema: PolicySchema<T>): T {
  const warnings: string[] = [];
  const resolved = resolveSection(schema, {}, (message) => warnings.push(message)).defaultConfig;
  expect(warnings).toEqual([]);
  return resolved;
}

describe("each policy's defaults are Resilience4j's", () => {
  it('CircuitBreakerConfig', () => {
    expect(resolvedDefaults(CIRCUIT_BREAKER_SCHEMA)).toEqual({
      failureRateThreshold: 50,
      slowCallRateThreshold: 100,
      slowCallDurationThreshold: 60 * SECOND,
      permittedNumberOfCallsInHalfOpenState: 10,
      maxWaitDurationInHalfOpenState: 0,
      transitionToStateAfterWaitDuration: 'OPEN',
      slidingWindowType: 'COUNT_BASED',
      slidingWindowSize: 100,
      minimumNumberOfCalls: 100,
      waitDurationInOpenState: 60 * SECOND,
      enableExponentialBackoff: false,
      exponentialBackoffMultiplier: 1.5,
      exponentialMaxWaitDurationInOpenState: Number.POSITIVE_INFINITY,
      enableRandomizedWait: false,
      randomizedWaitFactor: 0.5,
      initialState: 'CLOSED',
      automaticTransitionFromOpenToHalfOpenEnabled: false,
      recordExceptions: [],
      ignoreExceptions: [],
      recordResult: undefined,
      // This module's own: 4xx answers count as successes (fromSpringConfig sets 'resilience4j').
      exceptionRules: 'resilience4nest',
      // This module's own: a breaker joins the health indicator only when asked to.
      registerHealthIndicator: false,
      allowHealthIndicatorToFail: false,
      // CircuitBreakerConfig.DEFAULT_WRITABLE_STACK_TRACE_ENABLED
      writableStackTraceEnabled: true,
      // This module's own: a breaker is fleet-wide only when asked to.
      shared: false,
    });
  });

  it('RetryConfig', () => {
    expect(resolvedDefaults(RETRY_SCHEMA)).toEqual({
      maxAttempts: 3,
      waitDuration: 500,
      enableExponentialBackoff: false,
      exponentialBackoffMultiplier: 1.5,
      exponentialMaxWaitDuration: Number.POSITIVE_INFINITY,
      enableRandomizedWait: false,
      randomizedWaitFactor: 0.5,
      retryExceptions: [],
      ignoreExceptions: [],
      retryOnResult: undefined,
      failAfterMaxAttempts: false,
      // This module's own: the default retryable set, full jitter, a cap on a server's Retry-After, no retry budget
      // (fromSpringConfig sets exceptionRules 'resilience4j' and jitter 'none').
      exceptionRules: 'resilience4nest',
      jitter: 'full',
      retryAfterMaxWait: 30 * SECOND,
      budget: undefined,
    });
  });

  it('BulkheadConfig', () => {
    expect(resolvedDefaults(BULKHEAD_SCHEMA)).toEqual({
      maxConcurrentCalls: 25,
      maxWaitDuration: 0,
      // This module's own: no bound on waiting callers beyond maxWaitDuration.
      queueCapacity: undefined,
      // BulkheadConfig.DEFAULT_WRITABLE_STACK_TRACE_ENABLED
      writableStackTraceEnabled: true,
    });
  });

  it('ThreadPoolBulkheadConfig', () => {
    expect(resolvedDefaults(THREAD_POOL_BULKHEAD_SCHEMA)).toEqual({
      maxThreadPoolSize: availableParallelism(),
      queueCapacity: 100,
      // ThreadPoolBulkheadConfig.DEFAULT_WRITABLE_STACK_TRACE_ENABLED
      writableStackTraceEnabled: true,
    });
  });

  it('TimeLimiterConfig', () => {
    expect(resolvedDefaults(TIME_LIMITER_SCHEMA)).toEqual({ timeoutDuration: 1 * SECOND, cancelRunningFuture: true });
  });
});

/*
 * Properties of Resilience4j's Spring configuration (the Common*ConfigurationProperties classes of
 * resilience4j-framework-common) that have no effect here: a Spring file carrying them still loads,
 * with one warning each that names the property and says what happens instead.
 */
describe('Resilience4j properties with no effect here', () => {
  type Resolve = (raw: unknown, warn: (message: string) => void) => ResolvedSection<unknown>;
  const resolver =
    <T extends object>(schema: PolicySchema<T>): Resolve =>
    (raw, warn) =>
      resolveSection(schema, raw, warn);
  const cases: Array<[string, Resolve, string[]]> = [
    [
      'circuitBreaker',
      resolver(CIRCUIT_BREAKER_SCHEMA),
      [
        'eventConsumerBufferSize',
        'recordFailurePredicate',
        'recordExceptionPredicate',
        'ignoreExceptionPredicate',
        'recordResultPredicate',
        'waitIntervalFunctionInOpenState',
        'transitionOnResult',
        'ignoreClassBindingExceptions',
      ],
    ],
    [
      'retry',
      resolver(RETRY_SCHEMA),
      [
        'eventConsumerBufferSize',
        'writableStackTraceEnabled',
        'intervalFunction',
        'intervalBiFunction',
        'retryExceptionPredicate',
        'resultPredicate',
        'consumeResultBeforeRetryAttempt',
      ],
    ],
    ['bulkhead', resolver(BULKHEAD_SCHEMA), ['eventConsumerBufferSize', 'fairCallHandlingStrategyEnabled']],
    [
      'threadPoolBulkhead',
      resolver(THREAD_POOL_BULKHEAD_SCHEMA),
      ['eventConsumerBufferSize', 'coreThreadPoolSize', 'keepAliveDuration', 'contextPropagators'],
    ],
    ['timeLimiter', resolver(TIME_LIMITER_SCHEMA), ['eventConsumerBufferSize']],
    ['rateLimiter', resolver(RATE_LIMITER_SCHEMA), ['eventConsumerBufferSize', 'subscribeForEvents']],
  ];

  describe.each(cases)('%s', (policy, resolve, properties) => {
    it.each(properties)('warns once about %s, saying why, and loads the rest', (property) => {
      const warnings: string[] = [];
      const resolved = resolve({ instances: { psp: { [property]: 'x' } } }, (m) => warnings.push(m));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        new RegExp(`^resilience4nest: ${policy} instance 'psp': Resilience4j property '${property}' is ignored: \\S`),
      );
      expect(resolved.instances.get('psp')).toEqual(resolved.defaultConfig);
    });
  });
});
