import { Registry } from 'prom-client';
import { ResilienceMetricsBinding, ResilienceRegistry, VirtualClock } from '../../lib';
import { readMetricsOptions } from '../../lib/observability/observability.options';
import { INVALID_VALUE } from '../../lib/config/config.messages';

const failing = (): Promise<never> => Promise.reject(Object.assign(new Error('down'), { code: 'ECONNREFUSED' }));

function breakers(clock: VirtualClock, keys: object = {}): ResilienceRegistry {
  return new ResilienceRegistry({
    clock,
    circuitBreaker: {
      keys,
      instances: { payments: { slidingWindowSize: 1, minimumNumberOfCalls: 1, waitDurationInOpenState: '1s' } },
    },
  });
}

/** The samples of `family` in the text exposition, one line each. */
async function samples(prom: Registry, family: string): Promise<string[]> {
  return (await prom.metrics()).split('\n').filter((line) => line.startsWith(`${family}{`));
}

describe('the metrics of instances used per key', () => {
  it('keep one series per instance name, every key added in', async () => {
    const clock = new VirtualClock();
    const registry = breakers(clock);
    const prom = new Registry();
    const binding = new ResilienceMetricsBinding(registry, { registry: prom });
    for (const key of ['a', 'b', 'c'])
      await registry.circuitBreaker('payments', { key }).execute(() => Promise.resolve());
    await registry
      .circuitBreaker('payments', { key: 'a' })
      .execute(failing)
      .catch(() => undefined);
    const states = await samples(prom, 'resilience4j_circuitbreaker_state');
    expect(states).toContain('resilience4j_circuitbreaker_state{name="payments",state="open"} 1');
    expect(states).toContain('resilience4j_circuitbreaker_state{name="payments",state="closed"} 3');
    expect((await prom.metrics()).includes('key=')).toBe(false);
    binding.close();
  });

  it('with perKey, add series for the most used perKeySeries keys and key="other" for the rest', async () => {
    const clock = new VirtualClock();
    const registry = breakers(clock);
    const prom = new Registry();
    const binding = new ResilienceMetricsBinding(registry, { registry: prom, perKey: true, perKeySeries: 2 });
    const uses: Record<string, number> = { hot: 5, warm: 3, cold: 1, frozen: 1 };
    for (const [key, n] of Object.entries(uses))
      for (let i = 0; i < n; i++) await registry.circuitBreaker('payments', { key }).execute(() => Promise.resolve());
    const lines = await samples(prom, 'resilience4j_circuitbreaker_calls_seconds_count');
    expect(lines).toEqual(
      expect.arrayContaining([
        'resilience4j_circuitbreaker_calls_seconds_count{name="payments",kind="successful"} 10',
        'resilience4j_circuitbreaker_calls_seconds_count{name="payments",kind="successful",key="hot"} 5',
        'resilience4j_circuitbreaker_calls_seconds_count{name="payments",kind="successful",key="warm"} 3',
        'resilience4j_circuitbreaker_calls_seconds_count{name="payments",kind="successful",key="other"} 2',
      ]),
    );
    const keys = new Set(
      (await prom.metrics()).split('\n').flatMap((line) => [...line.matchAll(/key="([^"]*)"/g)].map((m) => m[1])),
    );
    expect([...keys].sort()).toEqual(['hot', 'other', 'warm']);
    binding.close();
  });

  it('keep the counts of evicted keys, so no counter goes down', async () => {
    const clock = new VirtualClock();
    const registry = breakers(clock, { max: 1 });
    const prom = new Registry();
    const binding = new ResilienceMetricsBinding(registry, { registry: prom, perKey: true });
    const a = registry.circuitBreaker('payments', { key: 'a' });
    await a.execute(failing).catch(() => undefined);
    await a.execute(() => Promise.resolve()).catch(() => undefined);
    await clock.advance(2_000);
    await a.execute(() => Promise.resolve());
    await registry.circuitBreaker('payments', { key: 'b' }).execute(() => Promise.resolve());
    expect([...registry.keys('circuitBreaker', 'payments').keys()]).toEqual(['b']);
    const notPermitted = await samples(prom, 'resilience4j_circuitbreaker_not_permitted_calls_total');
    expect(notPermitted).toContain(
      'resilience4j_circuitbreaker_not_permitted_calls_total{name="payments",kind="not_permitted"} 1',
    );
    expect(notPermitted).toContain(
      'resilience4j_circuitbreaker_not_permitted_calls_total{name="payments",kind="not_permitted",key="other"} 1',
    );
    const counts = await samples(prom, 'resilience4j_circuitbreaker_calls_seconds_count');
    expect(counts).toContain('resilience4j_circuitbreaker_calls_seconds_count{name="payments",kind="successful"} 2');
    binding.close();
  });

  it('validates metrics.perKey and metrics.perKeySeries', () => {
    expect(readMetricsOptions({ perKey: true })).toMatchObject({ perKey: true, perKeySeries: 20 });
    expect(() => readMetricsOptions({ perKeySeries: 0 })).toThrow(
      INVALID_VALUE('metrics options', 'perKeySeries', 'an integer >= 1', 0),
    );
    expect(() => readMetricsOptions({ perKey: 'yes' })).toThrow(/perKey/);
  });
});
