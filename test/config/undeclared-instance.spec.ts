import { Injectable, Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CircuitBreaker, ResilienceModule, ResilienceRegistry } from '../../lib';

@Injectable()
class StockClient {
  @CircuitBreaker('inventroy')
  async stock(): Promise<number> {
    return 1;
  }
}

const OPTIONS = { metrics: false, circuitBreaker: { instances: { inventory: { minimumNumberOfCalls: 5 } } } } as const;

describe('a decorator naming an undeclared instance close to a declared one', () => {
  it('warns at startup with "did you mean", and still gets configs.default', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [ResilienceModule.forRoot(OPTIONS)],
        providers: [StockClient],
      }).compile();
      await moduleRef.init();
      const warnings = warn.mock.calls.map(([message]) => String(message));
      expect(warnings).toContain(
        "resilience4nest: @CircuitBreaker on StockClient.stock uses circuitBreaker instance 'inventroy', which is not declared: it gets configs.default (did you mean 'inventory'?)",
      );
      expect(moduleRef.get(ResilienceRegistry).circuitBreaker('inventroy').config.minimumNumberOfCalls).toBe(100);
      await moduleRef.close();
    } finally {
      warn.mockRestore();
    }
  });

  it('says nothing for a name far from every declared one', () => {
    const warnings: string[] = [];
    new ResilienceRegistry(OPTIONS, (m) => warnings.push(m)).circuitBreaker('payments');
    expect(warnings).toEqual([]);
  });

  it('in strict mode still refuses, with the suggestion', () => {
    expect(() => new ResilienceRegistry({ ...OPTIONS, strict: true }).circuitBreaker('inventroy')).toThrow(
      "resilience4nest: ResilienceRegistry uses circuitBreaker instance 'inventroy', which is not declared and 'strict' is true (did you mean 'inventory'?)",
    );
  });
});

describe('a base config that is not declared', () => {
  it.each([
    ['base-config', "key 'base-config' names config 'shared'"],
    ['baseConfig', "key 'baseConfig' names config 'shared'"],
    ['BASE_CONFIG', "key 'BASE_CONFIG' names config 'shared'"],
  ])('is named as written (%s), for an instance and for a config', (key, expected) => {
    expect(() => new ResilienceRegistry({ retry: { instances: { payments: { [key]: 'shared' } } } })).toThrow(
      `invalid configuration of retry instance 'payments': ${expected}`,
    );
    expect(() => new ResilienceRegistry({ retry: { configs: { slow: { [key]: 'shared' } } } })).toThrow(
      `invalid configuration of retry config 'slow': ${expected}`,
    );
  });
});
