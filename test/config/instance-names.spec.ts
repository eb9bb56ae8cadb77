import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  fromSpringConfig,
  ResilienceHealthIndicator,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
} from '../../lib';
import { INVALID_INSTANCE_NAME, MAX_INSTANCE_NAME_LENGTH } from '../../lib/kernel/instance-name';

const registry = (options: unknown = {}, warn?: (m: string) => void) =>
  new ResilienceRegistry(options as ResilienceModuleOptions, warn);
const messageOf = (build: () => unknown): string => {
  try {
    build();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a failure');
};

/** Names no metric label value or log line can carry as written, with the name as the error shows it and why. */
const BAD: [string, string, string][] = [
  ['a\nb', '"a\\nb"', 'a control or invisible character'],
  ['a\r\nb', '"a\\r\\nb"', 'a control or invisible character'],
  ['a\tb', '"a\\tb"', 'a control or invisible character'],
  ['a\u0000b', '"a\\u0000b"', 'a control or invisible character'],
  ['a\u2028b', '"a\\u2028b"', 'a control or invisible character'],
  ['pay\u202Estnemyap', '"pay\\u202estnemyap"', 'a control or invisible character'],
  ['a\u200Bb', '"a\\u200bb"', 'a control or invisible character'],
  ['a"b', '"a\\"b"', 'a quote, a backslash, < or >'],
  ["a'b", '"a\\u0027b"', 'a quote, a backslash, < or >'],
  ['a`b', '"a\\u0060b"', 'a quote, a backslash, < or >'],
  ['a\\b', '"a\\\\b"', 'a quote, a backslash, < or >'],
  ['<script>', '"\\u003cscript\\u003e"', 'a quote, a backslash, < or >'],
  ['', '""', 'is empty'],
  [' payments', '" payments"', 'a space at its start or end'],
  ['payments ', '"payments "', 'a space at its start or end'],
  ['x'.repeat(MAX_INSTANCE_NAME_LENGTH + 1), `"${'x'.repeat(77)}..."`, `more than ${MAX_INSTANCE_NAME_LENGTH}`],
];

const GOOD = [
  'payments',
  'HttpBinFeignApi#status(int)',
  'payments.v2',
  'inventory-service:8080/stock',
  'Zahlungen für Kunden',
  '支払い',
  '__proto__',
  'constructor',
  'x'.repeat(MAX_INSTANCE_NAME_LENGTH),
];

describe('an instance name is refused when no metric label value or log line can carry it as written', () => {
  it.each(BAD)('%j from ResilienceRegistry: refused, shown escaped as %s, saying why', (name, shown, why) => {
    const message = messageOf(() => registry().circuitBreaker(name));
    expect(message).toBe(INVALID_INSTANCE_NAME(name, 'ResilienceRegistry, circuitBreaker instance'));
    expect(message).toContain(`instance name ${shown}`);
    expect(message).toContain(why);
    expect(message).not.toContain('\n');
  });

  it.each(BAD)('%j given to each getter of the registry, and to a pipeline, is refused', (name) => {
    const r = registry();
    for (const get of [
      () => r.retry(name),
      () => r.bulkhead(name),
      () => r.timeLimiter(name),
      () => r.rateLimiter(name),
      () => r.threadPoolBulkhead(name),
      () => r.hedge(name),
      () => r.pipeline({ retry: name }),
    ])
      expect(messageOf(get)).toMatch(
        /^resilience4nest: invalid instance name ".*" \(from (ResilienceRegistry|pipeline 'pipeline'), /,
      );
    expect(messageOf(() => r.pipeline(name))).toBe(INVALID_INSTANCE_NAME(name, 'ResilienceRegistry.pipeline'));
    expect(r.all('retry')).toEqual([]);
  });

  it.each(GOOD)('%j is accepted, and is one instance', (name) => {
    const r = registry();
    expect(r.circuitBreaker(name).name).toBe(name);
    expect(r.circuitBreaker(name)).toBe(r.circuitBreaker(name));
  });

  it('refuses a bad name in a decorator when the class is defined, naming the decorator and the method', () => {
    expect(
      messageOf(() => {
        class Payments {
          @Retry('charge\n<b>')
          async charge(): Promise<void> {}
        }
        return Payments;
      }),
    ).toBe(INVALID_INSTANCE_NAME('charge\n<b>', '@Retry on Payments.charge'));
    expect(
      messageOf(() => {
        class Payments {
          @Retry({ name: 'charge', apiKey: 'sk_live_0123' } as unknown as string)
          async charge(): Promise<void> {}
        }
        return Payments;
      }),
    ).not.toContain('sk_live_0123');
  });

  it('refuses a bad declared name, naming the section it is declared in', () => {
    expect(messageOf(() => registry({ retry: { instances: { 'a"b': { maxAttempts: 2 } } } }))).toBe(
      INVALID_INSTANCE_NAME('a"b', 'retry.instances'),
    );
    expect(messageOf(() => fromSpringConfig({ 'resilience4j.retry.instances.[a<b>]': { 'max-attempts': 2 } }))).toBe(
      INVALID_INSTANCE_NAME('a<b>', 'retry.instances'),
    );
    expect(messageOf(() => registry({ faultInjection: { instances: { 'a\nb': {} } } }))).toBe(
      INVALID_INSTANCE_NAME('a\nb', 'faultInjection.instances'),
    );
  });

  it('refuses a bad name given to FaultInjector.inject', () => {
    const r = registry({ faultInjection: { enabled: true } });
    expect(messageOf(() => r.faults.inject('a\nb', { error: { rate: 1, error: 503 } }))).toBe(
      INVALID_INSTANCE_NAME('a\nb', 'FaultInjector.inject'),
    );
  });
});

describe('__proto__ and constructor are names like any other', () => {
  it('a breaker named __proto__ is reported by the health indicator under its name, touching no prototype', async () => {
    @Injectable()
    class Names {
      constructor(readonly registry: ResilienceRegistry) {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          metrics: false,
          logging: false,
          circuitBreaker: {
            instances: {
              ['__proto__']: { registerHealthIndicator: true },
              constructor: { registerHealthIndicator: true },
            },
          },
        }),
      ],
      providers: [Names],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const { registry: r } = app.get(Names);
      r.circuitBreaker('__proto__');
      r.circuitBreaker('constructor');
      const health = app.get(ResilienceHealthIndicator).check();
      const instances = (health.circuitBreakers as unknown as { instances: object }).instances;
      expect(Object.keys(instances).sort()).toEqual(['__proto__', 'constructor']);
      expect(Object.getOwnPropertyDescriptor(instances, '__proto__')?.value).toMatchObject({ state: 'CLOSED' });
      expect(({} as Record<string, unknown>).state).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
