import { availableParallelism } from 'node:os';
import { DEFAULT_ORDER, fromSpringConfig } from '../../lib';
import {
  ASPECT_ORDER_DIFFERS,
  DUPLICATE_PROPERTY,
  IGNORED_PROPERTY,
  LEGACY_PROPERTY,
  NO_RESILIENCE4J_PART,
  UNMATCHED_EXCEPTIONS,
  UNRESOLVED_PLACEHOLDER,
} from '../../lib/config/config.messages';
import {
  IGNORED_INSTANCE_PROPERTIES,
  IGNORED_SECTION_PROPERTIES,
  LEGACY_PROPERTIES,
} from '../../lib/config/resilience4j-properties';
import { messageOf, registry } from '../support/config-messages';

describe("Spring's shapes, through forRoot's options and fromSpringConfig", () => {
  it('reads dotted keys at any depth, merged with nested maps', () => {
    const r = registry({
      'resilience4j.circuitbreaker': { instances: { a: { 'sliding-window-size': 10 } } },
      'resilience4j.circuitbreaker.instances.a.minimum-number-of-calls': 7,
      resilience4j: { 'retry.instances.a': { 'max-attempts': 5 } },
    });
    expect(r.circuitBreaker('a').config).toMatchObject({ slidingWindowSize: 10, minimumNumberOfCalls: 7 });
    expect(r.retry('a').config.maxAttempts).toBe(5);
  });

  it('matches keys in camelCase, kebab-case, snake_case and upper case, and sections in any of them', () => {
    const r = registry({
      circuit_breaker: {
        instances: {
          a: {
            slidingWindowSize: 3,
            'minimum-number-of-calls': 3,
            failure_rate_threshold: 40,
            WAIT_DURATION_IN_OPEN_STATE: '2s',
          },
        },
      },
      'TIME-LIMITER': { instances: { a: { timeoutduration: '1s' } } },
    });
    expect(r.circuitBreaker('a').config).toMatchObject({
      slidingWindowSize: 3,
      minimumNumberOfCalls: 3,
      failureRateThreshold: 40,
      waitDurationInOpenState: 2000,
    });
    expect(r.timeLimiter('a').config.timeoutDuration).toBe(1000);
  });

  it.each(['count-based', 'COUNT_BASED', 'countBased', 'count_based', 'Count-Based'])(
    'reads sliding-window-type %p as COUNT_BASED',
    (value) => {
      expect(
        registry({ circuitbreaker: { instances: { a: { 'sliding-window-type': value } } } }).circuitBreaker('a').config
          .slidingWindowType,
      ).toBe('COUNT_BASED');
    },
  );

  it("reads 'backends' and 'limiters' as 'instances'", () => {
    const r = registry({
      retry: { backends: { a: { maxAttempts: 2 } } },
      timelimiter: { limiters: { b: { timeoutDuration: 300 } } },
    });
    expect(r.retry('a').config.maxAttempts).toBe(2);
    expect(r.timeLimiter('b').config.timeoutDuration).toBe(300);
  });

  it('refuses an instance declared under both instances and backends', () => {
    expect(messageOf(() => registry({ retry: { instances: { a: {} }, backends: { a: {} } } }))).toMatch(
      /retry instance 'a': key 'backends' must be declared once/,
    );
  });

  it('refuses a property given twice, as a dotted key and as a nested map', () => {
    expect(
      messageOf(() =>
        registry({ 'retry.instances.a.max-attempts': 2, retry: { instances: { a: { 'max-attempts': 3 } } } }),
      ),
    ).toBe(DUPLICATE_PROPERTY('retry.instances.a.max-attempts'));
  });

  it('refuses one key written in two spellings', () => {
    expect(messageOf(() => registry({ retry: { instances: { a: { maxAttempts: 2, 'max-attempts': 3 } } } }))).toMatch(
      /key 'max-attempts' must be given once/,
    );
  });

  it('reads a comma-separated exception list as a list, as Spring binds it', () => {
    expect(
      registry({
        retry: {
          instances: { a: { 'retry-exceptions': 'java.io.IOException, java.util.concurrent.TimeoutException' } },
        },
      })
        .retry('a')
        .config.retryExceptions.map((e) => (typeof e === 'string' ? e : e.name)),
    ).toEqual(['java.io.IOException', 'java.util.concurrent.TimeoutException']);
  });

  it('still fails a typo, suggesting the key in the spelling it was written in', () => {
    expect(messageOf(() => registry({ circuitbreaker: { instances: { a: { 'sliding-windw-size': 5 } } } }))).toBe(
      "resilience4nest: invalid configuration of circuitBreaker instance 'a': unknown key 'sliding-windw-size' (did you mean 'sliding-window-size'?)",
    );
    expect(messageOf(() => registry({ retry: { instances: { a: { MAX_ATEMPTS: 5 } } } }))).toMatch(
      /did you mean 'MAX_ATTEMPTS'\?/,
    );
    expect(messageOf(() => registry({ retry: { 'retry-aspect-ordr': 1 } }))).toMatch(/unknown key 'retry-aspect-ordr'/);
  });

  it('keeps a bracketed dotted instance name whole, and hints at brackets when it was split', () => {
    expect(
      registry({ retry: { instances: { '[payments.v2]': { maxAttempts: 2 } } } }).retry('payments.v2').config
        .maxAttempts,
    ).toBe(2);
    expect(messageOf(() => registry({ retry: { instances: { 'payments.v2': { maxAttempts: 2 } } } }))).toMatch(
      /unknown key 'v2'.*write a dotted instance name in brackets, e.g. '\[payments.v2\]'/,
    );
  });

  it('reads booleans in any case, as Spring does', () => {
    expect(
      registry({
        circuitbreaker: { instances: { a: { 'automatic-transition-from-open-to-half-open-enabled': 'TRUE' } } },
      }).circuitBreaker('a').config.automaticTransitionFromOpenToHalfOpenEnabled,
    ).toBe(true);
  });

  it('suggests fromSpringConfig when a whole application.yml is passed as the options', () => {
    expect(messageOf(() => registry({ spring: { application: { name: 'x' } }, resilience4j: { retry: {} } }))).toMatch(
      /fromSpringConfig\(document\)/,
    );
  });
});

describe('thread-pool-bulkhead', () => {
  it("runs an instance as a bulkhead with Resilience4j's thread-pool defaults: one call per CPU, a queue of 100", () => {
    const r = registry({ 'thread-pool-bulkhead': { instances: { reports: {} } } });
    expect(r.bulkhead('reports').config).toMatchObject({
      maxConcurrentCalls: availableParallelism(),
      queueCapacity: 100,
    });
  });

  it('loads a name declared in both sections: registry.bulkhead is the semaphore one, threadPoolBulkhead the other', () => {
    const r = registry({
      bulkhead: { instances: { reports: { maxConcurrentCalls: 3 } } },
      'thread-pool-bulkhead': { instances: { reports: { 'max-thread-pool-size': 2, 'queue-capacity': 1 } } },
    });
    expect(r.bulkhead('reports').config).toMatchObject({ maxConcurrentCalls: 3 });
    expect(r.threadPoolBulkhead('reports').config).toMatchObject({ maxConcurrentCalls: 2, queueCapacity: 1 });
    expect(r.threadPoolBulkhead('reports')).not.toBe(r.bulkhead('reports'));
  });

  it('gives an undeclared name the configs.default of the type asked for', () => {
    const r = registry({
      bulkhead: { configs: { default: { maxConcurrentCalls: 7 } } },
      'thread-pool-bulkhead': { configs: { default: { 'max-thread-pool-size': 2, 'queue-capacity': 2 } } },
    });
    expect(r.bulkhead('other').config.maxConcurrentCalls).toBe(7);
    expect(r.threadPoolBulkhead('other').config).toMatchObject({ maxConcurrentCalls: 2, queueCapacity: 2 });
  });

  it('leaves other bulkheads and undeclared names on the bulkhead defaults', () => {
    const r = registry({
      bulkhead: { configs: { default: { maxConcurrentCalls: 7 } } },
      'thread-pool-bulkhead': { instances: { reports: { 'max-thread-pool-size': 2 } } },
    });
    expect(r.bulkhead('other').config.maxConcurrentCalls).toBe(7);
    expect(r.bulkhead('reports').config.maxConcurrentCalls).toBe(2);
  });
});

describe('Resilience4j 0.x properties fail, naming the 2.x property', () => {
  const cases = Object.entries(LEGACY_PROPERTIES).flatMap(([policy, keys]) =>
    Object.entries(keys).map(([key, replacement]) => [policy, key, replacement] as const),
  );

  it.each(cases)('%s %s', (policy, key, replacement) => {
    const section = policy === 'threadPoolBulkhead' ? 'thread-pool-bulkhead' : policy;
    const kebab = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const place = policy === 'rateLimiter' ? "rateLimiter instance 'a'" : `${policy} instance 'a'`;
    expect(messageOf(() => registry({ [section]: { instances: { a: { [kebab]: 10 } } } }))).toBe(
      LEGACY_PROPERTY(place, kebab, replacement),
    );
  });

  it('covers the keys the 0.x documentation used most', () => {
    expect(Object.keys(LEGACY_PROPERTIES.circuitBreaker)).toEqual(
      expect.arrayContaining(['ringBufferSizeInClosedState', 'ringBufferSizeInHalfOpenState', 'waitInterval']),
    );
    expect(Object.keys(LEGACY_PROPERTIES.retry)).toEqual(expect.arrayContaining(['maxRetryAttempts', 'waitInterval']));
  });
});

/**
 * Every property of Resilience4j 2.x's Spring Boot configuration classes
 * (resilience4j-framework-common: CommonCircuitBreakerConfigurationProperties,
 * CommonRetryConfigurationProperties, CommonBulkheadConfigurationProperties,
 * CommonThreadPoolBulkheadConfigurationProperties,
 * CommonTimeLimiterConfigurationProperties,
 * CommonRateLimiterConfigurationProperties, CommonProperties, and the
 * *-aspect-order of resilience4j-spring6's *ConfigurationProperties), with a
 * value of its type: each is implemented or warned about, never an unknown key.
 */
describe('every Resilience4j 2.x property is implemented or warned about', () => {
  const INSTANCE: Record<string, Record<string, unknown>> = {
    circuitbreaker: {
      'wait-duration-in-open-state': '10s',
      'slow-call-duration-threshold': '2s',
      'max-wait-duration-in-half-open-state': '5s',
      'transition-to-state-after-wait-duration': 'CLOSED',
      'failure-rate-threshold': 50,
      'slow-call-rate-threshold': 80,
      'sliding-window-type': 'COUNT_BASED',
      'sliding-window-size': 10,
      'minimum-number-of-calls': 5,
      'permitted-number-of-calls-in-half-open-state': 3,
      'automatic-transition-from-open-to-half-open-enabled': true,
      'initial-state': 'CLOSED',
      'writable-stack-trace-enabled': false,
      'allow-health-indicator-to-fail': true,
      'event-consumer-buffer-size': 10,
      'register-health-indicator': true,
      'record-failure-predicate': 'com.example.RecordFailurePredicate',
      'record-exceptions': ['java.io.IOException'],
      'record-result-predicate': 'com.example.RecordResultPredicate',
      'ignore-exception-predicate': 'com.example.IgnorePredicate',
      'ignore-exceptions': ['com.example.BusinessException'],
      'base-config': 'default',
      'enable-exponential-backoff': true,
      'exponential-backoff-multiplier': 2,
      'exponential-max-wait-duration-in-open-state': '60s',
      'enable-randomized-wait': true,
      'randomized-wait-factor': 0.5,
      'ignore-class-binding-exceptions': true,
    },
    retry: {
      'wait-duration': '500ms',
      'interval-bi-function': 'com.example.Interval',
      'max-attempts': 3,
      'retry-exception-predicate': 'com.example.RetryPredicate',
      'result-predicate': 'com.example.ResultPredicate',
      'consume-result-before-retry-attempt': 'com.example.Consumer',
      'retry-exceptions': ['java.io.IOException'],
      'ignore-exceptions': ['com.example.BusinessException'],
      'event-consumer-buffer-size': 10,
      'enable-exponential-backoff': true,
      'exponential-backoff-multiplier': 2,
      'exponential-max-wait-duration': '10s',
      'enable-randomized-wait': false,
      'randomized-wait-factor': 0.5,
      'fail-after-max-attempts': true,
      'base-config': 'default',
    },
    bulkhead: {
      'max-concurrent-calls': 10,
      'max-wait-duration': '10ms',
      'writable-stack-trace-enabled': false,
      'base-config': 'default',
      'event-consumer-buffer-size': 10,
    },
    'thread-pool-bulkhead': {
      'event-consumer-buffer-size': 10,
      'base-config': 'default',
      'writable-stack-trace-enabled': false,
      'max-thread-pool-size': 4,
      'core-thread-pool-size': 2,
      'queue-capacity': 10,
      'keep-alive-duration': '20ms',
      'context-propagators': ['com.example.MdcPropagator'],
    },
    timelimiter: {
      'timeout-duration': '1s',
      'cancel-running-future': true,
      'event-consumer-buffer-size': 10,
      'base-config': 'default',
    },
    ratelimiter: {
      'limit-for-period': 10,
      'limit-refresh-period': '1s',
      'timeout-duration': '0s',
      'subscribe-for-events': true,
      'allow-health-indicator-to-fail': true,
      'register-health-indicator': true,
      'event-consumer-buffer-size': 10,
      'writable-stack-trace-enabled': false,
      'base-config': 'default',
    },
  };
  const SECTION: Record<string, Record<string, unknown>> = {
    circuitbreaker: {
      'circuit-breaker-aspect-order': 1,
      tags: { app: 'shop' },
      metrics: { enabled: true, legacy: { enabled: false } },
    },
    retry: { 'retry-aspect-order': 2, tags: { app: 'shop' }, metrics: { enabled: true } },
    bulkhead: { 'bulkhead-aspect-order': 3, tags: { app: 'shop' }, metrics: { enabled: true } },
    'thread-pool-bulkhead': { tags: { app: 'shop' }, metrics: { enabled: true } },
    timelimiter: { 'time-limiter-aspect-order': 4, tags: { app: 'shop' }, metrics: { enabled: true } },
    ratelimiter: { 'rate-limiter-aspect-order': 5, tags: { app: 'shop' }, metrics: { enabled: true } },
  };
  const cases = Object.entries(INSTANCE).flatMap(([section, props]) =>
    Object.entries(props).map(([key, value]) => [section, key, value] as const),
  );

  it.each(cases)('%s: %s', (section, key, value) => {
    const warnings: string[] = [];
    const r = registry({ [section]: { configs: { default: {} }, instances: { a: { [key]: value } } } }, (m) =>
      warnings.push(m),
    );
    expect(r.options).toBeDefined();
    expect(warnings.filter((w) => w.includes(`'${key}'`)).length).toBeLessThanOrEqual(1);
  });

  it.each(
    Object.entries(SECTION).flatMap(([section, props]) => Object.keys(props).map((key) => [section, key] as const)),
  )('%s section: %s', (section, key) => {
    const warnings: string[] = [];
    registry({ [section]: { [key]: SECTION[section][key], instances: {} } }, (m) => warnings.push(m));
    expect(warnings.filter((w) => w.includes(`'${key}'`))).toHaveLength(1);
  });

  it('says what happens instead for each warned property', () => {
    const warnings: string[] = [];
    registry(
      { circuitbreaker: { 'circuit-breaker-aspect-order': 1, instances: { a: { 'record-result-predicate': 'x' } } } },
      (m) => warnings.push(m),
    );
    expect(warnings).toEqual([
      IGNORED_PROPERTY(
        'circuitBreaker',
        'circuit-breaker-aspect-order',
        IGNORED_SECTION_PROPERTIES.circuitBreaker.circuitBreakerAspectOrder,
      ),
      IGNORED_PROPERTY(
        "circuitBreaker instance 'a'",
        'record-result-predicate',
        IGNORED_INSTANCE_PROPERTIES.circuitBreaker.recordResultPredicate,
      ),
      ASPECT_ORDER_DIFFERS(
        ['idempotent', 'fallback', 'circuitBreaker', 'retry', 'rateLimiter', 'timeLimiter', 'bulkhead'],
        DEFAULT_ORDER,
      ),
    ]);
  });

  describe('aspect orders (a lower order is an outer aspect, as in Spring)', () => {
    const warningsOf = (options: unknown): string[] => {
      const warnings: string[] = [];
      registry(options, (m) => warnings.push(m));
      return warnings;
    };

    it('that keep the default nesting add no warning beyond their own', () => {
      expect(
        warningsOf({ retry: { 'retry-aspect-order': 2 }, circuitbreaker: { 'circuit-breaker-aspect-order': 3 } }),
      ).toHaveLength(2);
    });

    it('that nest the layers otherwise say which order would keep it', () => {
      const warnings = warningsOf({
        bulkhead: { 'bulkhead-aspect-order': 0 },
        'time-limiter': { 'time-limiter-aspect-order': '1' },
      });
      expect(warnings).toContain(
        ASPECT_ORDER_DIFFERS(
          ['idempotent', 'fallback', 'bulkhead', 'timeLimiter', 'retry', 'circuitBreaker', 'rateLimiter'],
          DEFAULT_ORDER,
        ),
      );
    });

    it('add nothing when the module option order already nests the layers that way', () => {
      const order = ['idempotent', 'fallback', 'circuitBreaker', 'retry', 'rateLimiter', 'timeLimiter', 'bulkhead'];
      expect(warningsOf({ order, circuitbreaker: { 'circuit-breaker-aspect-order': 1 } })).toHaveLength(1);
    });
  });

  it('warns once per property however many instances carry it', () => {
    const warnings: string[] = [];
    registry(
      {
        retry: {
          instances: { a: { 'event-consumer-buffer-size': 1 }, b: {} },
          configs: { default: { 'event-consumer-buffer-size': 1 } },
        },
      },
      (m) => warnings.push(m),
    );
    expect(new Set(warnings).size).toBe(warnings.length);
  });

  it('reads a ratelimiter section (limiters as the old name of instances) and checks its keys', () => {
    const warnings: string[] = [];
    expect(
      registry({ ratelimiter: { limiters: { a: { 'limit-for-period': 5 } } } }, (m) => warnings.push(m)).rateLimiter(
        'a',
      ).config.limitForPeriod,
    ).toBe(5);
    expect(warnings.filter((w) => /ratelimiter/i.test(w) && !/limiters/.test(w))).toEqual([]);
    expect(messageOf(() => registry({ ratelimiter: { instances: { a: { 'limit-for-perod': 5 } } } }))).toMatch(
      /did you mean 'limit-for-period'/,
    );
  });
});

describe('exception lists that match nothing in Node', () => {
  it.each<[string, string, string]>([
    ['circuitbreaker', 'record-exceptions', 'every error would count as a success, so the breaker would never open'],
    ['circuitbreaker', 'ignore-exceptions', 'no error would be ignored'],
    [
      'retry',
      'retry-exceptions',
      'only the default retryable set (timeouts, connection errors, HTTP 429/502/503/504) would be retried',
    ],
  ])('%s %s: warns at startup with what the list would do', (section, key, consequence) => {
    const warnings: string[] = [];
    const policy = section === 'circuitbreaker' ? 'circuitBreaker' : 'retry';
    registry({ [section]: { instances: { a: { [key]: ['org.springframework.dao.DataAccessException'] } } } }, (m) =>
      warnings.push(m),
    );
    expect(warnings).toEqual([
      UNMATCHED_EXCEPTIONS(`${policy} instance 'a'`, key, ['org.springframework.dao.DataAccessException'], consequence),
    ]);
  });

  it('names only the unmatched entries of a mixed list, without a consequence', () => {
    const warnings: string[] = [];
    registry(
      {
        circuitbreaker: { instances: { a: { 'record-exceptions': ['java.io.IOException', 'java.sql.SQLException'] } } },
      },
      (m) => warnings.push(m),
    );
    expect(warnings).toEqual([
      UNMATCHED_EXCEPTIONS("circuitBreaker instance 'a'", 'record-exceptions', ['java.sql.SQLException'], undefined),
    ]);
  });

  it("stays silent for the application's own classes and for mapped Java names", () => {
    const warnings: string[] = [];
    registry(
      {
        circuitbreaker: {
          instances: {
            a: {
              'record-exceptions': [
                'com.example.PaymentDeclinedException',
                'java.io.IOException',
                'feign.FeignException',
              ],
            },
          },
        },
      },
      (m) => warnings.push(m),
    );
    expect(warnings).toEqual([]);
  });
});

describe('fromSpringConfig', () => {
  it('takes the resilience4j part of a parsed document, leaving the rest of the application', () => {
    const options = fromSpringConfig({
      spring: { application: { name: 'orders' } },
      'resilience4j.retry.instances.a.max-attempts': 4,
    });
    expect(registry(options).retry('a').config.maxAttempts).toBe(4);
  });

  it("returns the sections under this module's names, their keys as written", () => {
    expect(
      fromSpringConfig({
        'resilience4j.circuitbreaker.instances.a.sliding-window-size': 5,
        'resilience4j.thread-pool-bulkhead.instances.b.queue-capacity': 1,
      }),
    ).toEqual({
      binding: 'spring',
      circuitBreaker: { instances: { a: { 'sliding-window-size': 5 } } },
      threadPoolBulkhead: { instances: { b: { 'queue-capacity': 1 } } },
    });
  });

  it('reads YAML text with several documents: those without a profile, then those of SPRING_PROFILES_ACTIVE', () => {
    const text = [
      'resilience4j.retry.instances.a.max-attempts: 2',
      '---',
      'spring.config.activate.on-profile: prod',
      'resilience4j.retry.instances.a.max-attempts: 5',
      '---',
      'spring:',
      '  profiles: test',
      'resilience4j.retry.instances.a.max-attempts: 9',
    ].join('\n');
    const before = process.env.SPRING_PROFILES_ACTIVE;
    try {
      delete process.env.SPRING_PROFILES_ACTIVE;
      expect(registry(fromSpringConfig(text)).retry('a').config.maxAttempts).toBe(2);
      process.env.SPRING_PROFILES_ACTIVE = 'prod';
      expect(registry(fromSpringConfig(text)).retry('a').config.maxAttempts).toBe(5);
    } finally {
      if (before === undefined) delete process.env.SPRING_PROFILES_ACTIVE;
      else process.env.SPRING_PROFILES_ACTIVE = before;
    }
  });

  it('resolves ${NAME:default} placeholders from the environment, then the default', () => {
    const text = 'resilience4j.circuitbreaker.instances.a.wait-duration-in-open-state: ${BREAKER_OPEN_WAIT:7s}';
    expect(registry(fromSpringConfig(text)).circuitBreaker('a').config.waitDurationInOpenState).toBe(7000);
    process.env.BREAKER_OPEN_WAIT = '3s';
    try {
      expect(registry(fromSpringConfig(text)).circuitBreaker('a').config.waitDurationInOpenState).toBe(3000);
    } finally {
      delete process.env.BREAKER_OPEN_WAIT;
    }
    expect(
      messageOf(() => fromSpringConfig('resilience4j.retry.instances.a.max-attempts: ${NO_SUCH_VARIABLE_HERE}')),
    ).toBe(UNRESOLVED_PLACEHOLDER('resilience4j.retry.instances.a.max-attempts', '${NO_SUCH_VARIABLE_HERE}'));
  });

  it('keeps a bracketed dotted name whole through fromSpringConfig and forRoot', () => {
    const options = fromSpringConfig({ 'resilience4j.retry.instances.[payments.v2].max-attempts': 2 });
    expect(registry(options).retry('payments.v2').config.maxAttempts).toBe(2);
  });

  it("binds a Spring file with Resilience4j's defaults, native options with this module's", () => {
    const spring = registry(fromSpringConfig({ 'resilience4j.retry.instances.a.max-attempts': 2 }));
    expect(spring.retry('a').config).toMatchObject({ jitter: 'none', exceptionRules: 'resilience4j' });
    expect(spring.circuitBreaker('a').config.exceptionRules).toBe('resilience4j');
    expect(spring.bulkhead('a').config.queueCapacity).toBe(Number.POSITIVE_INFINITY);
    const native = registry({ retry: { instances: { a: { maxAttempts: 2 } } } });
    expect(native.retry('a').config).toMatchObject({ jitter: 'full', exceptionRules: 'resilience4nest' });
    expect(native.bulkhead('a').config.queueCapacity).toBeUndefined();
  });

  it("lets native options warn on unknown keys with unknownKeys: 'warn', and refuses other values", () => {
    const warnings: string[] = [];
    const r = registry({ unknownKeys: 'warn', retry: { instances: { a: { maxAtempts: 5 } } } }, (m) =>
      warnings.push(m),
    );
    expect(r.retry('a').config.maxAttempts).toBe(3);
    expect(warnings).toEqual([
      expect.stringMatching(/unknown key 'maxAtempts' is ignored.*did you mean 'maxAttempts'/),
    ]);
    expect(messageOf(() => registry({ unknownKeys: 'ignore' }))).toMatch(
      /key 'unknownKeys' must be one of 'error', 'warn'/,
    );
    expect(messageOf(() => registry({ binding: 'yaml' }))).toMatch(/key 'binding' must be one of 'native', 'spring'/);
  });

  it('fails at the call when the part is missing or invalid', () => {
    expect(messageOf(() => fromSpringConfig('spring.application.name: orders'))).toBe(NO_RESILIENCE4J_PART(['spring']));
    expect(messageOf(() => fromSpringConfig('resilience4j.retry.instances.a.max-attempts: 0'))).toMatch(
      /retry instance 'a': key 'max-attempts' must be an integer >= 1, got 0/,
    );
    expect(messageOf(() => fromSpringConfig('resilience4j: [1, 2'))).toMatch(/not an application.yml document/);
  });
});
