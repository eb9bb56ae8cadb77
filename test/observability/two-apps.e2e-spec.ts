import { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Gauge, register, Registry } from 'prom-client';
import { ResilienceModule, ResilienceModuleOptions, ResilienceRegistry } from '../../lib';
import { BUCKETS_DIFFER, FOREIGN_METRIC } from '../../lib/observability/observability.messages';
import { parseScrape, valueOf } from './kit';

async function boot(options: ResilienceModuleOptions): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({ imports: [ResilienceModule.forRoot(options)] }).compile();
  moduleRef.useLogger(false);
  return moduleRef.init();
}

async function succeed(app: INestApplicationContext, retry: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++)
    await app
      .get(ResilienceRegistry)
      .retry(retry)
      .execute(() => 'ok');
}

const ours = (registry: Registry): string[] =>
  registry
    .getMetricsAsArray()
    .map((m) => (m as unknown as { name: string }).name)
    .filter((name) => name.startsWith('resilience4'));

const successes = async (name: string): Promise<number> =>
  valueOf(parseScrape(await register.metrics()), 'resilience4j_retry_calls_total', {
    name,
    kind: 'successful_without_retry',
  });

describe("two apps in one process on prom-client's global registry", () => {
  afterEach(() => register.clear());

  it('register side by side, add up the series they share, and leave nothing behind once closed', async () => {
    expect(ours(register)).toEqual([]);
    const a = await boot({ retry: { instances: { shared: {}, 'a-only': {} } } });
    const b = await boot({ retry: { instances: { shared: {}, 'b-only': {} } } });
    await succeed(a, 'shared', 2);
    await succeed(b, 'shared', 1);
    await succeed(a, 'a-only', 1);
    await succeed(b, 'b-only', 1);

    expect(await successes('shared')).toBe(3);
    expect(await successes('a-only')).toBe(1);
    expect(await successes('b-only')).toBe(1);

    await a.close();
    expect(await successes('shared')).toBe(1);
    expect(await register.metrics()).not.toContain('a-only');
    expect(await successes('b-only')).toBe(1);

    await b.close();
    expect(ours(register)).toEqual([]);
    expect(await register.metrics()).not.toMatch(/resilience4/);
  });

  it('can be created and closed again and again, one after the other or at once', async () => {
    for (let round = 0; round < 3; round++) {
      const app = await boot({});
      expect(ours(register).length).toBeGreaterThan(0);
      await app.close();
      expect(ours(register)).toEqual([]);
    }
    const apps = await Promise.all([boot({}), boot({}), boot({})]);
    await Promise.all(apps.map((app) => app.close()));
    expect(ours(register)).toEqual([]);
  });

  it("registers anew after the registry was cleared under it, and leaves the other app's families alone", async () => {
    const first = await boot({ retry: { instances: { first: {} } } });
    register.clear();
    const second = await boot({ retry: { instances: { second: {} } } });
    await succeed(second, 'second', 1);
    expect(await successes('second')).toBe(1);
    await first.close();
    expect(await successes('second')).toBe(1);
    await second.close();
    expect(ours(register)).toEqual([]);
  });
});

describe('a registry shared with other metrics', () => {
  it('refuses, naming the metric, when a family name is taken by a metric of someone else', async () => {
    const registry = new Registry();
    new Gauge({ name: 'resilience4j_circuitbreaker_state', help: 'not ours', registers: [registry] });
    await expect(boot({ metrics: { registry } })).rejects.toThrow(FOREIGN_METRIC('resilience4j_circuitbreaker_state'));
    // Nothing was registered half-way.
    expect(ours(registry)).toEqual(['resilience4j_circuitbreaker_state']);
  });

  it('refuses a second app whose histogram buckets differ', async () => {
    const registry = new Registry();
    const first = await boot({ metrics: { registry, buckets: [0.1, 1] } });
    await expect(boot({ metrics: { registry, buckets: [0.5, 5] } })).rejects.toThrow(
      BUCKETS_DIFFER('resilience4j_circuitbreaker_calls_seconds', [0.1, 1], [0.5, 5]),
    );
    await first.close();
    expect(ours(registry)).toEqual([]);
  });
});
