import { lastValueFrom, of } from 'rxjs';
import { CallNotPermittedError, ResilienceRegistry, TooManyInstancesError, VirtualClock } from '../../lib';
import { PIPELINE_BAD_LAYER } from '../../lib/registry/pipeline.messages';

const failing = (): Promise<never> => Promise.reject(Object.assign(new Error('down'), { code: 'ECONNREFUSED' }));

function registryOf(clock: VirtualClock, keys: object = {}): ResilienceRegistry {
  return new ResilienceRegistry({
    clock,
    circuitBreaker: {
      keys,
      instances: { payments: { slidingWindowSize: 1, minimumNumberOfCalls: 1, waitDurationInOpenState: '1m' } },
    },
    retry: { instances: { payments: { maxAttempts: 1 } } },
  });
}

describe('registry.pipeline(name, { key })', () => {
  it('runs each call through the instances of the key read from execute args', async () => {
    const registry = registryOf(new VirtualClock());
    const perHost = registry.pipeline('payments', { key: (host: string) => host });
    await expect(perHost.execute(failing, { args: ['down.example'] })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await expect(perHost.execute(() => Promise.resolve(1), { args: ['down.example'] })).rejects.toBeInstanceOf(
      CallNotPermittedError,
    );
    await expect(perHost.execute(() => Promise.resolve(2), { args: ['up.example'] })).resolves.toBe(2);
    expect(registry.circuitBreaker('payments', { key: 'down.example' }).state).toBe('OPEN');
    expect(registry.circuitBreaker('payments', { key: 'up.example' }).state).toBe('CLOSED');
    expect(registry.circuitBreaker('payments').state).toBe('CLOSED');
    expect([...registry.keys('retry', 'payments').keys()].sort()).toEqual(['down.example', 'up.example']);
    expect(perHost.layers).toEqual([
      ['retry', 'payments'],
      ['circuitBreaker', 'payments'],
    ]);
  });

  it('takes a fixed key, and keys each subscription of observe', async () => {
    const registry = registryOf(new VirtualClock());
    await registry
      .pipeline('payments', { key: 'a' })
      .execute(failing)
      .catch(() => undefined);
    expect(registry.circuitBreaker('payments', { key: 'a' }).state).toBe('OPEN');
    const perHost = registry.pipeline('payments', { key: (host: string) => host });
    await expect(lastValueFrom(perHost.observe(of(1), { args: ['a'] }))).rejects.toBeInstanceOf(CallNotPermittedError);
    await expect(lastValueFrom(perHost.observe(of(2), { args: ['b'] }))).resolves.toBe(2);
  });

  it('refuses a call with TooManyInstancesError when no key can be evicted, and rebuilds an evicted key', async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock, { max: 1, idleTimeout: '10m' });
    const perHost = registry.pipeline({ circuitBreaker: 'payments' }, { key: (host: string) => host });
    await perHost.execute(failing, { args: ['a'] }).catch(() => undefined);
    await expect(perHost.execute(() => Promise.resolve(1), { args: ['b'] })).rejects.toBeInstanceOf(
      TooManyInstancesError,
    );
    await clock.advance(60_001);
    await expect(perHost.execute(() => Promise.resolve(1), { args: ['b'] })).resolves.toBe(1);
    await expect(perHost.execute(() => Promise.resolve(3), { args: ['a'] })).resolves.toBe(3);
    expect(registry.circuitBreaker('payments', { key: 'a' }).metrics.numberOfSuccessfulCalls).toBe(1);
  });

  it('refuses a key that is neither a string nor a function', () => {
    const registry = registryOf(new VirtualClock());
    expect(() => registry.pipeline('payments', { key: 7 as never })).toThrow(PIPELINE_BAD_LAYER('payments', 'key', 7));
  });
});
