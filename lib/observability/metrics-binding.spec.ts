import { Registry } from 'prom-client';
import { VirtualClock } from '../kernel/clock';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { METRIC_FAMILIES, ResilienceMetricsBinding } from './metrics-binding';

const sample = (text: string, line: string): boolean => text.split('\n').includes(line);

describe('ResilienceMetricsBinding without Nest', () => {
  it('registers every family once and binds instances made before and after it', async () => {
    const promRegistry = new Registry();
    const registry = new ResilienceRegistry({ clock: new VirtualClock(), retry: { instances: { declared: {} } } });
    await registry.retry('early').execute(() => 'ok');
    const binding = new ResilienceMetricsBinding(registry, { registry: promRegistry });
    await registry.retry('late').execute(() => 'ok');
    const text = await promRegistry.metrics();
    expect(
      promRegistry
        .getMetricsAsArray()
        .map((m) => (m as unknown as { name: string }).name)
        .sort(),
    ).toEqual(
      Object.values(METRIC_FAMILIES)
        .map((f) => f.name)
        .sort(),
    );
    for (const name of ['declared', 'early', 'late']) {
      expect(
        sample(
          text,
          `resilience4j_retry_calls_total{name="${name}",kind="successful_without_retry"} ${name === 'declared' ? 0 : 1}`,
        ),
      ).toBe(true);
    }
    binding.close();
    expect(promRegistry.getMetricsAsArray()).toEqual([]);
  });

  it('exports retries on a returned value that ran out as failed_with_retry, as Resilience4j dashboards expect', async () => {
    const promRegistry = new Registry();
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      retry: {
        instances: { poll: { maxAttempts: 2, waitDuration: 0, retryOnResult: (r: unknown) => r === 'PENDING' } },
      },
    });
    const binding = new ResilienceMetricsBinding(registry, { registry: promRegistry });
    const call = registry.retry('poll').execute(async () => 'PENDING');
    await clock.advance(0);
    await expect(call).resolves.toBe('PENDING');
    const text = await promRegistry.metrics();
    expect(sample(text, 'resilience4j_retry_calls_total{name="poll",kind="failed_with_retry"} 1')).toBe(true);
    expect(sample(text, 'resilience4j_retry_calls_total{name="poll",kind="successful_with_retry"} 0')).toBe(true);
    binding.close();
  });

  it("adds up a method's private instance to the named one it was made from", async () => {
    const promRegistry = new Registry();
    const registry = new ResilienceRegistry({ clock: new VirtualClock() });
    const binding = new ResilienceMetricsBinding(registry, { registry: promRegistry });
    await registry.circuitBreaker('psp').execute(() => 'ok');
    await registry.derive('circuitBreaker', 'psp', { slidingWindowSize: 5 }, 'test', 'test').execute(() => 'ok');
    const text = await promRegistry.metrics();
    expect(sample(text, 'resilience4j_circuitbreaker_calls_seconds_count{name="psp",kind="successful"} 2')).toBe(true);
    expect(sample(text, 'resilience4j_circuitbreaker_state{name="psp",state="closed"} 2')).toBe(true);
    binding.close();
  });

  it('stops counting once closed, and closing twice is harmless', async () => {
    const promRegistry = new Registry();
    const registry = new ResilienceRegistry({ clock: new VirtualClock() });
    const binding = new ResilienceMetricsBinding(registry, { registry: promRegistry });
    binding.close();
    binding.close();
    await registry.circuitBreaker('after').execute(() => 'ok');
    expect(await promRegistry.metrics()).toBe('\n');
  });
});
