import { VirtualClock } from '../../kernel/clock';
import { INVALID_VALUE } from '../../config/config.messages';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { CacheEntry, CacheStore } from './cache-store';

class Unavailable extends Error {
  readonly status = 503;
}

const MINUTE = 60_000;

/** A dependency answering `<argument>:<n>` for its n-th call, or failing while `down`; each call settles after `latency` ms. */
function dependency(clock: VirtualClock, latency = 0) {
  const state = { calls: 0, down: false };
  const call = (args: unknown[]): Promise<string> => {
    const n = ++state.calls;
    const answer = (): Promise<string> =>
      state.down ? Promise.reject(new Unavailable()) : Promise.resolve(`${String(args[0])}:${n}`);
    if (latency === 0) return answer();
    return new Promise<string>((resolve) => clock.setTimeout(() => resolve(answer()), latency));
  };
  return { state, call };
}

/** A store in a map, as a shared store would be. */
class MapStore implements CacheStore {
  readonly entries = new Map<string, CacheEntry>();

  get(key: string): CacheEntry | undefined {
    return this.entries.get(key);
  }

  set(key: string, entry: CacheEntry): void {
    this.entries.set(key, entry);
  }
}

describe('ResilienceRegistry.reconfigure of a cache', () => {
  it('serves what it stored for the new ttl from the next call', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, cache: { instances: { rates: { ttl: '1m' } } } });
    const cache = registry.cache('rates');
    const dep = dependency(clock);
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    await clock.advance(1.5 * MINUTE);
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:2');

    const events = registry.reconfigure('cache', 'rates', { ttl: '5m' });
    await clock.advance(3 * MINUTE);

    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:2');
    expect(events).toEqual([
      expect.objectContaining({
        policy: 'cache',
        name: 'rates',
        changed: ['ttl'],
        before: expect.objectContaining({ ttl: MINUTE }),
        after: expect.objectContaining({ ttl: 5 * MINUTE }),
      }),
    ]);
    expect(cache.config.ttl).toBe(5 * MINUTE);
  });

  it('keeps a stored answer for the longest it may answer from then on: a ttl of 0 stops serving, not storing the last known good', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, cache: { instances: { rates: { ttl: '1m' } } } });
    const cache = registry.cache('rates');
    const dep = dependency(clock);
    await cache.call(dep.call, ['EUR']);

    registry.reconfigure('cache', 'rates', { ttl: 0, staleIfError: '1h' });
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:2');
    dep.state.down = true;
    await clock.advance(30 * MINUTE);

    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:2');
    expect(cache.metrics).toEqual({ hit: 0, miss: 2, stale: 1, coalesced: 0 });
  });

  it('lets a call under way end under the settings it started with', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      cache: { instances: { rates: { ttl: '1m', staleIfError: '1h' } } },
    });
    const cache = registry.cache('rates');
    const dep = dependency(clock, 1000);
    const first = cache.call(dep.call, ['EUR']);
    await clock.advance(1000);
    await first;
    await clock.advance(2 * MINUTE);
    dep.state.down = true;

    const before = cache.call(dep.call, ['EUR']);
    registry.reconfigure('cache', 'rates', { staleIfError: undefined });
    const after = cache.call(dep.call, ['EUR']);
    const outcomes = Promise.allSettled([before, after]);
    await clock.advance(1000);

    expect(await outcomes).toEqual([
      { status: 'fulfilled', value: 'EUR:1' },
      { status: 'rejected', reason: expect.any(Unavailable) },
    ]);
  });

  it('shrinks the memory store to a lower maxEntries, the least recently used first', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, cache: { instances: { rates: { ttl: '1h' } } } });
    const cache = registry.cache('rates');
    const dep = dependency(clock);
    for (const currency of ['EUR', 'GBP', 'JPY']) await cache.call(dep.call, [currency]);
    await cache.call(dep.call, ['EUR']);

    registry.reconfigure('cache', 'rates', { maxEntries: 2 });

    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    expect(await cache.call(dep.call, ['JPY'])).toBe('JPY:3');
    expect(await cache.call(dep.call, ['GBP'])).toBe('GBP:4');
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:5');
  });

  it('reads and writes a store given anew from the next call, under the instance name', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, cache: { instances: { rates: { ttl: '1h' } } } });
    const cache = registry.cache('rates');
    const dep = dependency(clock);
    await cache.call(dep.call, ['EUR']);
    const shared = new MapStore();
    shared.set('rates:s:GBP', { value: 'GBP:from the store', asOf: clock.now() });

    const [event] = registry.reconfigure('cache', 'rates', { store: shared });

    expect(await cache.call(dep.call, ['GBP'])).toBe('GBP:from the store');
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:2');
    expect([...shared.entries.keys()]).toEqual(['rates:s:GBP', 'rates:s:EUR']);
    expect(event.changed).toEqual(['store']);
  });

  it('refuses a bad value with the startup message, and changes nothing', () => {
    const registry = new ResilienceRegistry({
      clock: new VirtualClock(),
      cache: { instances: { rates: { ttl: '1m' } } },
    });
    const cache = registry.cache('rates');
    expect(() => registry.reconfigure('cache', 'rates', { ttl: '2m', maxEntries: 0 })).toThrow(
      INVALID_VALUE("cache instance 'rates'", 'maxEntries', 'an integer >= 1', 0),
    );
    expect(cache.config.ttl).toBe(MINUTE);
  });

  it("reaches a pipeline's own cache made from configs.default, its overrides kept", async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, cache: { configs: { default: { ttl: '1m' } } } });
    const pipeline = registry.pipeline({ name: 'rates', cache: { staleIfError: '1h' } });
    let calls = 0;
    const rates = (): Promise<number> => Promise.resolve(++calls);

    const events = registry.applyOptions({ clock, cache: { configs: { default: { ttl: '10m' } } } });

    expect(events.map((e) => [e.policy, e.name, e.changed])).toEqual([['cache', 'rates', ['ttl']]]);
    expect(await pipeline.execute(rates)).toBe(1);
    await clock.advance(5 * MINUTE);
    expect(await pipeline.execute(rates)).toBe(1);
  });

  it('keeps the caches as they are when the options leave cache out, as a Spring file does', () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      retry: { instances: { payments: { maxAttempts: 2 } } },
      cache: { instances: { rates: { ttl: '1m' } } },
    });
    const cache = registry.cache('rates');
    registry.retry('payments');

    const events = registry.applyOptions({ clock, retry: { instances: { payments: { maxAttempts: 3 } } } });

    expect(events.map((e) => e.policy)).toEqual(['retry']);
    expect(cache.config.ttl).toBe(MINUTE);
  });
});
