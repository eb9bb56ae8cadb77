import { Test } from '@nestjs/testing';
import {
  BASE_CONFIG_CYCLE,
  IGNORED_PROPERTY,
  INVALID_VALUE,
  NOT_AN_OBJECT,
  UNKNOWN_BASE_CONFIG,
  UNKNOWN_INSTANCE,
  UNKNOWN_KEY,
  UNKNOWN_SECTION,
} from '../../lib/config/config.messages';
import { parseDuration } from '../../lib/config/duration';
import { IGNORED_INSTANCE_PROPERTIES } from '../../lib/config/resilience4j-properties';
import { ResilienceModule, ResilienceModuleOptions, ResilienceRegistry } from '../../lib';

const registry = (options: unknown, warn?: (m: string) => void) =>
  new ResilienceRegistry(options as ResilienceModuleOptions, warn);
const messageOf = (options: unknown): string => {
  try {
    registry(options);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the options to be rejected');
};

describe('parseDuration', () => {
  it.each([
    [250, 250],
    ['250', 250],
    ['250ms', 250],
    ['2s', 2000],
    ['1.5s', 1500],
    ['1m', 60_000],
    ['24h', 86_400_000],
    ['1d', 86_400_000],
    ['PT2S', 2000],
    ['PT1M30S', 90_000],
    [0, 0],
  ])('%p → %p ms', (input, ms) => expect(parseDuration(input)).toBe(ms));

  it.each([
    [-1],
    ['-5s'],
    ['2 weeks'],
    ['abc'],
    [''],
    ['PT'],
    [Number.NaN],
    [Number.POSITIVE_INFINITY],
    [true],
    [null],
  ])('rejects %p', (input) => expect(parseDuration(input)).toBeUndefined());
});

describe('module options', () => {
  it('merges configs.default into every instance, and baseConfig picks another config', () => {
    const r = registry({
      retry: {
        configs: { default: { maxAttempts: 5, waitDuration: '1s' }, slow: { waitDuration: '10s' } },
        instances: { inventory: { maxAttempts: 4 }, reports: { baseConfig: 'slow' } },
      },
    });
    expect(r.retry('inventory').config).toMatchObject({ maxAttempts: 4, waitDuration: 1000 });
    expect(r.retry('reports').config).toMatchObject({ maxAttempts: 5, waitDuration: 10_000 });
    expect(r.retry('undeclared').config).toMatchObject({ maxAttempts: 5, waitDuration: 1000 });
  });

  it("accepts a Spring Boot resilience4j block: kebab-case keys and Resilience4j's section spelling", () => {
    const r = registry({
      circuitbreaker: {
        configs: {
          default: { 'sliding-window-size': 10, 'failure-rate-threshold': 50, 'wait-duration-in-open-state': '10s' },
        },
        instances: {
          payments: { 'base-config': 'default', 'minimum-number-of-calls': 5, 'sliding-window-type': 'time_based' },
        },
      },
      timelimiter: { instances: { payments: { 'timeout-duration': '2s', 'cancel-running-future': true } } },
      retry: {
        instances: {
          payments: {
            'retry-exceptions': ['java.io.IOException', 'org.springframework.web.client.HttpServerErrorException'],
          },
        },
      },
    });
    expect(r.circuitBreaker('payments').config).toMatchObject({
      slidingWindowSize: 10,
      failureRateThreshold: 50,
      waitDurationInOpenState: 10_000,
      minimumNumberOfCalls: 5,
      slidingWindowType: 'TIME_BASED',
    });
    expect(r.timeLimiter('payments').config).toEqual({ timeoutDuration: 2000, cancelRunningFuture: true });
    // A Java name is bound to a class standing for it, named as written.
    expect(r.retry('payments').config.retryExceptions.map((e) => (typeof e === 'string' ? e : e.name))).toEqual([
      'java.io.IOException',
      'org.springframework.web.client.HttpServerErrorException',
    ]);
  });

  it('warns once for each Resilience4j property it does not implement', () => {
    const warnings: string[] = [];
    registry(
      {
        circuitbreaker: {
          configs: { default: { 'event-consumer-buffer-size': 10, 'writable-stack-trace-enabled': false } },
          instances: { a: { 'event-consumer-buffer-size': 5 } },
        },
      },
      (m) => warnings.push(m),
    );
    expect(warnings).toEqual([
      IGNORED_PROPERTY(
        "circuitBreaker config 'default'",
        'event-consumer-buffer-size',
        IGNORED_INSTANCE_PROPERTIES.circuitBreaker.eventConsumerBufferSize,
      ),
      IGNORED_PROPERTY(
        "circuitBreaker instance 'a'",
        'event-consumer-buffer-size',
        IGNORED_INSTANCE_PROPERTIES.circuitBreaker.eventConsumerBufferSize,
      ),
    ]);
  });

  describe('rejects bad options with one message naming the policy, instance, key and value', () => {
    it.each<[string, unknown, string]>([
      [
        'a wrong type',
        { retry: { instances: { inventory: { maxAttempts: 'three' } } } },
        INVALID_VALUE("retry instance 'inventory'", 'maxAttempts', 'an integer >= 1', 'three'),
      ],
      [
        'zero attempts',
        { retry: { instances: { inventory: { 'max-attempts': 0 } } } },
        INVALID_VALUE("retry instance 'inventory'", 'max-attempts', 'an integer >= 1', 0),
      ],
      [
        'a negative duration',
        { retry: { configs: { default: { waitDuration: -100 } } } },
        INVALID_VALUE(
          "retry config 'default'",
          'waitDuration',
          'a non-negative duration (ms number or "250ms", "2s", "1m", "24h")',
          -100,
        ),
      ],
      [
        'an unparsable duration',
        { timeLimiter: { instances: { payments: { timeoutDuration: '2 seconds' } } } },
        INVALID_VALUE(
          "timeLimiter instance 'payments'",
          'timeoutDuration',
          'a non-negative duration (ms number or "250ms", "2s", "1m", "24h")',
          '2 seconds',
        ),
      ],
      [
        'a zero exponential cap (Resilience4j refuses it; retries would run back to back)',
        { retry: { instances: { payments: { exponentialMaxWaitDuration: 0 } } } },
        INVALID_VALUE("retry instance 'payments'", 'exponentialMaxWaitDuration', 'a positive duration', 0),
      ],
      [
        'a threshold above 100',
        { circuitBreaker: { instances: { payments: { failureRateThreshold: 150 } } } },
        INVALID_VALUE("circuitBreaker instance 'payments'", 'failureRateThreshold', 'a percentage in (0, 100]', 150),
      ],
      [
        'a threshold of 0',
        { circuitBreaker: { configs: { default: { slowCallRateThreshold: 0 } } } },
        INVALID_VALUE("circuitBreaker config 'default'", 'slowCallRateThreshold', 'a percentage in (0, 100]', 0),
      ],
      [
        'an unknown key (a typo)',
        { retry: { instances: { inventory: { maxAtempts: 3 } } } },
        UNKNOWN_KEY("retry instance 'inventory'", 'maxAtempts', []).replace(
          / \(.*\)$/,
          " (did you mean 'maxAttempts'?)",
        ),
      ],
      [
        'an unknown baseConfig',
        { retry: { configs: { default: {} }, instances: { inventory: { baseConfig: 'shared' } } } },
        UNKNOWN_BASE_CONFIG("retry instance 'inventory'", 'baseConfig', 'shared', ['default']),
      ],
      [
        'a baseConfig cycle',
        { retry: { configs: { a: { baseConfig: 'b' }, b: { baseConfig: 'a' } } } },
        BASE_CONFIG_CYCLE('retry', ['a', 'b', 'a']),
      ],
      [
        'an unknown sliding window type',
        { circuitBreaker: { instances: { payments: { slidingWindowType: 'SESSION' } } } },
        INVALID_VALUE(
          "circuitBreaker instance 'payments'",
          'slidingWindowType',
          "one of 'COUNT_BASED', 'TIME_BASED'",
          'SESSION',
        ),
      ],
      [
        'an unknown jitter kind',
        { retry: { instances: { inventory: { jitter: 'random' } } } },
        INVALID_VALUE(
          "retry instance 'inventory'",
          'jitter',
          "one of 'full', 'equal', 'decorrelated', 'none'",
          'random',
        ),
      ],
      [
        'a budget ratio of 0',
        { retry: { instances: { inventory: { budget: { ratio: 0, maxTokens: 10 } } } } },
        INVALID_VALUE("retry instance 'inventory'", 'budget.ratio', 'a number > 0 and <= 1', 0),
      ],
      [
        'an exception list that is not a list of classes or names',
        { retry: { instances: { inventory: { retryExceptions: [42] } } } },
        INVALID_VALUE("retry instance 'inventory'", 'retryExceptions', 'a list of error classes or class names', [42]),
      ],
      [
        'a negative bulkhead queue',
        { bulkhead: { instances: { reports: { queueCapacity: -1 } } } },
        INVALID_VALUE("bulkhead instance 'reports'", 'queueCapacity', 'an integer >= 0', -1),
      ],
      [
        'an instance that is not an object',
        { bulkhead: { instances: { reports: 10 } } },
        NOT_AN_OBJECT("bulkhead instance 'reports'", 10),
      ],
      [
        'an unknown section',
        { circuitBreakers: {} },
        UNKNOWN_SECTION('circuitBreakers', []).replace(/ \(.*\)$/, " (did you mean 'circuitBreaker'?)"),
      ],
      [
        'an unknown key in a section',
        { retry: { instance: {} } },
        UNKNOWN_KEY('retry', 'instance', ['configs', 'instances']).replace(/ \(.*\)$/, " (did you mean 'instances'?)"),
      ],
      [
        'a bad pipeline order',
        { order: ['retry'] },
        INVALID_VALUE(
          'module options',
          'order',
          "a list naming each of 'idempotent', 'fallback', 'retry', 'circuitBreaker', 'rateLimiter', 'timeLimiter', 'bulkhead' exactly once",
          ['retry'],
        ),
      ],
      [
        'a bad deadline header name',
        { deadline: { header: 'x deadline' } },
        INVALID_VALUE('deadline options', 'header', 'an HTTP header name', 'x deadline'),
      ],
    ])('%s', (_label, options, expected) => {
      expect(messageOf(options)).toBe(expected);
    });
  });

  it("accepts Resilience4j's zero values: timeoutDuration 0, maxConcurrentCalls 0, randomizedWaitFactor 1", () => {
    const r = registry({
      timeLimiter: { instances: { payments: { timeoutDuration: 0 } } },
      bulkhead: { instances: { payments: { maxConcurrentCalls: 0 } } },
      retry: { instances: { payments: { enableRandomizedWait: true, randomizedWaitFactor: 1 } } },
    });
    expect(r.timeLimiter('payments').config.timeoutDuration).toBe(0);
    expect(r.bulkhead('payments').config.maxConcurrentCalls).toBe(0);
    expect(r.retry('payments').config.randomizedWaitFactor).toBe(1);
  });

  it('fails Nest bootstrap with the same message', async () => {
    const build = Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ retry: { instances: { inventory: { maxAttempts: -1 } } } })],
    }).compile();
    await expect(build).rejects.toThrow(
      INVALID_VALUE("retry instance 'inventory'", 'maxAttempts', 'an integer >= 1', -1),
    );
  });

  it('strict mode refuses an undeclared instance, naming where it was asked for', () => {
    const r = registry({ strict: true, retry: { instances: { inventory: {} } } });
    expect(r.retry('inventory').name).toBe('inventory');
    expect(() => r.retry('invntory')).toThrow(UNKNOWN_INSTANCE('retry', 'invntory', 'ResilienceRegistry'));
  });
});
