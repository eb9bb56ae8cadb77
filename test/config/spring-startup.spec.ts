import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { fromSpringConfig, ResilienceModule, ResilienceModuleOptions, ResilienceRegistry } from '../../lib';
import { NAMES_MERGED, NAME_STRIPPED, SPRING_DEFAULTS_APPLY } from '../../lib/config/config.messages';

const registry = (options: unknown, warn?: (m: string) => void) =>
  new ResilienceRegistry(options as ResilienceModuleOptions, warn);

describe('two unbracketed names that strip to one are one instance, as in Spring', () => {
  const FEIGN = [
    'resilience4j.circuitbreaker.instances.HttpBinFeignApi#status(int).sliding-window-size=4',
    'resilience4j.circuitbreaker.instances.HttpBinFeignApi#status(int).minimum-number-of-calls=2',
    'resilience4j.circuitbreaker.instances.HttpBinFeignApistatusint.minimumNumberOfCalls=3',
    'resilience4j.circuitbreaker.instances.HttpBinFeignApistatusint.wait-duration-in-open-state=7s',
  ].join('\n');

  it('merges their properties, the later one winning per property in any spelling', () => {
    const warnings: string[] = [];
    const r = registry(fromSpringConfig(FEIGN), (m) => warnings.push(m));
    expect([...r.options.sections.circuitBreaker.instances.keys()]).toEqual(['HttpBinFeignApistatusint']);
    expect(r.circuitBreaker('HttpBinFeignApistatusint').config).toMatchObject({
      slidingWindowSize: 4,
      minimumNumberOfCalls: 3,
      waitDurationInOpenState: 7000,
    });
    expect(warnings).toContain(
      NAME_STRIPPED('circuitBreaker.instances', 'HttpBinFeignApi#status(int)', 'HttpBinFeignApistatusint'),
    );
    expect(warnings).toContain(
      NAMES_MERGED('circuitBreaker.instances', 'HttpBinFeignApistatusint', [
        'HttpBinFeignApi#status(int)',
        'HttpBinFeignApistatusint',
      ]),
    );
  });

  it('merges nested settings property by property, and a bracketed name with the same unbracketed one', () => {
    const r = registry(
      fromSpringConfig({
        resilience4j: {
          retry: {
            instances: {
              a_b: { 'max-attempts': 2, budget: { ratio: 0.2, 'max-tokens': 8 } },
              '[ab]': { 'wait-duration': '1s', budget: { ratio: 0.5 } },
            },
          },
        },
      }),
    );
    expect(r.retry('ab').config).toMatchObject({
      maxAttempts: 2,
      waitDuration: 1000,
      budget: { ratio: 0.5, maxTokens: 8 },
    });
  });

  it('still refuses native options that declare one name in both instances and backends', () => {
    expect(() => registry({ retry: { instances: { a: {} }, backends: { a: {} } } })).toThrow(
      /retry instance 'a': key 'backends' must be declared once/,
    );
  });
});

describe("a Spring file's switch to Resilience4j's defaults is said at startup", () => {
  async function bootLogs(options: ResilienceModuleOptions): Promise<string[]> {
    const lines: string[] = [];
    const spy = jest
      .spyOn(Logger.prototype, 'log')
      .mockImplementation((message: unknown) => void lines.push(String(message)));
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [ResilienceModule.forRoot({ ...options, metrics: false, logging: false })],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      await app.close();
    } finally {
      spy.mockRestore();
      warn.mockRestore();
    }
    return lines.filter((line) => line.includes('exception-rules'));
  }

  it('logs one line naming what changes and the setting that switches back', async () => {
    const lines = await bootLogs(fromSpringConfig('resilience4j.retry.instances.a.max-attempts=3'));
    expect(lines).toEqual([SPRING_DEFAULTS_APPLY]);
    expect(SPRING_DEFAULTS_APPLY).toBe(
      "resilience4nest: the options are bound as a Spring file (binding: 'spring'), so Resilience4j's defaults apply " +
        'where this module differs: a retry retries every error and waits without jitter, and a circuit breaker ' +
        "counts 4xx answers as failures; set 'exception-rules: resilience4nest' in a retry or circuitbreaker " +
        "config (and 'jitter' in a retry's) for this module's rules",
    );
  });

  it('logs nothing of the kind for native options', async () => {
    expect(await bootLogs({ retry: { instances: { a: { maxAttempts: 3 } } } })).toEqual([]);
  });
});
