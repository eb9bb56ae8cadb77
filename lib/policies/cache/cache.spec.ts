import { firstValueFrom, Observable, of, throwError } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { CallNotPermittedError } from '../../kernel/errors';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { CacheConfigInput } from './cache.config';
import { CachePolicy } from './cache.policy';
import { CacheEntry, CacheStore } from './cache-store';
import type { CacheResultEvent } from './cache.events';
import { CACHE_STORE_FAILED, CACHE_STORE_RECOVERED } from './cache.messages';

class Unavailable extends Error {
  readonly status = 503;
}

const HOUR = 3_600_000;

/** A dependency that answers `<first argument>:<n>` for its n-th call, or fails while `down`; each call settles after `latency` ms (at once for 0). */
function dependency(clock: VirtualClock, latency = 0) {
  const state = { calls: 0, down: false as boolean | Error };
  const call = (args: unknown[]): Promise<string> => {
    state.calls++;
    const n = state.calls;
    const failure = state.down === true ? new Unavailable('rates API down') : state.down;
    const answer = (): Promise<string> =>
      failure === false ? Promise.resolve(`${String(args[0])}:${n}`) : Promise.reject(failure);
    if (latency === 0) return answer();
    return new Promise<string>((resolve) => clock.setTimeout(() => resolve(answer()), latency));
  };
  return { state, call };
}

function cacheOf(clock: VirtualClock, config: CacheConfigInput, log?: (m: string) => void): CachePolicy {
  return new ResilienceRegistry({ clock, cache: { instances: { rates: config } } }, log).cache('rates');
}

/** What a call through `cache` with `args` settles to, once the clock has run `ms` further. */
async function settle<T>(clock: VirtualClock, promise: Promise<T>, ms = 0): Promise<PromiseSettledResult<T>> {
  const outcome = Promise.allSettled([promise]).then(([r]) => r);
  await clock.advance(ms);
  return outcome;
}

function results(cache: CachePolicy): CacheResultEvent['result'][] {
  const seen: CacheResultEvent['result'][] = [];
  cache.onResult((e) => seen.push(e.result));
  return seen;
}

describe('CachePolicy', () => {
  it('serves a stored answer without calling while it is younger than ttl, and calls again at ttl', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { ttl: '1s' });
    const dep = dependency(clock);
    const seen = results(cache);
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    await clock.advance(999);
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    expect(await cache.call(dep.call, ['GBP'])).toBe('GBP:2');
    await clock.advance(1);
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:3');
    expect(dep.state.calls).toBe(3);
    expect(seen).toEqual(['miss', 'hit', 'miss', 'miss']);
    expect(cache.metrics).toEqual({ hit: 1, miss: 3, stale: 0, coalesced: 0 });
  });

  it('always calls with ttl 0 (the default), keeping the answer only as the last known good', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { staleIfError: '1m' });
    const dep = dependency(clock);
    for (let i = 0; i < 3; i++) await cache.call(dep.call, ['EUR']);
    expect(dep.state.calls).toBe(3);
    expect(cache.config.ttl).toBe(0);
  });

  it('answers the last known good, marked, while it is within staleIfError, to the millisecond', async () => {
    const clock = new VirtualClock(1_000);
    const cache = cacheOf(clock, {
      staleIfError: '6h',
      mark: (value: string, { asOf, ageMs }) => `${value} (stale, as of ${asOf}, ${ageMs} ms old)`,
    });
    const dep = dependency(clock);
    const seen = results(cache);
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    dep.state.down = true;
    await clock.advance(6 * HOUR);
    expect(await cache.call(dep.call, ['EUR'])).toBe(`EUR:1 (stale, as of 1000, ${6 * HOUR} ms old)`);
    await clock.advance(1);
    const late = await settle(clock, cache.call(dep.call, ['EUR']));
    expect(late).toMatchObject({ status: 'rejected', reason: new Unavailable('rates API down') });
    expect(seen).toEqual(['miss', 'stale', 'miss']);
    expect(dep.state.calls).toBe(3);
  });

  it('answers a stale value as stored when no mark is given', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { staleIfError: 1000 });
    const dep = dependency(clock);
    await cache.call(dep.call, ['EUR']);
    dep.state.down = true;
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
  });

  it('never invents an answer on a cold start: the call fails with its own error', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { ttl: '1m', staleIfError: '6h' });
    const dep = dependency(clock);
    dep.state.down = true;
    const cold = await settle(clock, cache.call(dep.call, ['EUR']));
    expect(cold.status).toBe('rejected');
    expect((cold as PromiseRejectedResult).reason).toBeInstanceOf(Unavailable);
    expect(cache.metrics).toEqual({ hit: 0, miss: 1, stale: 0, coalesced: 0 });
  });

  it('never answers stale without staleIfError', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { ttl: 10 });
    const dep = dependency(clock);
    await cache.call(dep.call, ['EUR']);
    await clock.advance(10);
    dep.state.down = true;
    await expect(cache.call(dep.call, ['EUR'])).rejects.toBeInstanceOf(Unavailable);
  });

  it('never caches an error or a refusal: the next call calls again', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { ttl: '1h' });
    const dep = dependency(clock);
    dep.state.down = true;
    await expect(cache.call(dep.call, ['EUR'])).rejects.toBeInstanceOf(Unavailable);
    dep.state.down = new CallNotPermittedError('rates', 'OPEN');
    await expect(cache.call(dep.call, ['EUR'])).rejects.toBeInstanceOf(CallNotPermittedError);
    dep.state.down = false;
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:3');
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:3');
    expect(dep.state.calls).toBe(3);
  });

  it('coalesces 50 concurrent calls with one key into one downstream call', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { coalesce: true });
    const dep = dependency(clock, 100);
    const seen = results(cache);
    const calls = Array.from({ length: 50 }, () => cache.call(dep.call, ['EUR']));
    const other = cache.call(dep.call, ['GBP']);
    await clock.advance(100);
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 50 }, () => 'EUR:1'));
    expect(await other).toBe('GBP:2');
    expect(dep.state.calls).toBe(2);
    expect(seen.filter((r) => r === 'coalesced')).toHaveLength(49);
    expect(cache.metrics).toEqual({ hit: 0, miss: 2, stale: 0, coalesced: 49 });
    const next = cache.call(dep.call, ['EUR']);
    await clock.advance(100);
    expect(await next).toBe('EUR:3');
  });

  it('fails all 50 coalesced calls when the shared call fails, and the next call calls again', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { coalesce: true });
    const dep = dependency(clock, 100);
    dep.state.down = true;
    const calls = Array.from({ length: 50 }, () => settle(clock, cache.call(dep.call, ['EUR'])));
    await clock.advance(100);
    const outcomes = await Promise.all(calls);
    expect(outcomes.filter((o) => o.status === 'rejected' && o.reason instanceof Unavailable)).toHaveLength(50);
    expect(new Set(outcomes.map((o) => (o as PromiseRejectedResult).reason)).size).toBe(1);
    expect(dep.state.calls).toBe(1);
    dep.state.down = false;
    const next = cache.call(dep.call, ['EUR']);
    await clock.advance(100);
    expect(await next).toBe('EUR:2');
    expect(dep.state.calls).toBe(2);
  });

  it('gives coalesced callers the last known good, marked, when the shared call fails', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { coalesce: true, staleIfError: '1m', mark: (v: string) => `${v}*` });
    const dep = dependency(clock, 10);
    const first = cache.call(dep.call, ['EUR']);
    await clock.advance(10);
    await first;
    dep.state.down = true;
    const calls = [cache.call(dep.call, ['EUR']), cache.call(dep.call, ['EUR'])];
    await clock.advance(10);
    expect(await Promise.all(calls)).toEqual(['EUR:1*', 'EUR:1*']);
    expect(cache.metrics).toEqual({ hit: 0, miss: 1, stale: 2, coalesced: 0 });
  });

  it('evicts the least recently used entry past maxEntries', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { ttl: '1h', maxEntries: 3 });
    const dep = dependency(clock);
    for (const key of ['a', 'b', 'c']) await cache.call(dep.call, [key]);
    expect(await cache.call(dep.call, ['a'])).toBe('a:1');
    await cache.call(dep.call, ['d']);
    expect(dep.state.calls).toBe(4);
    expect(await cache.call(dep.call, ['a'])).toBe('a:1');
    expect(await cache.call(dep.call, ['c'])).toBe('c:3');
    expect(await cache.call(dep.call, ['b'])).toBe('b:5');
    expect(dep.state.calls).toBe(5);
  });

  it('keys by the JSON of the arguments by default, or by `key`', async () => {
    const clock = new VirtualClock();
    const dep = dependency(clock);
    const byJson = cacheOf(clock, { ttl: '1h' });
    await byJson.call(dep.call, ['EUR', { side: 'buy' }]);
    await byJson.call(dep.call, ['EUR', { side: 'buy' }]);
    await byJson.call(dep.call, ['EUR', { side: 'sell' }]);
    expect(dep.state.calls).toBe(2);
    for (const one of [1, '1', '[1]', 1, '1', '[1]']) await byJson.call(dep.call, [one]);
    await byJson.call(dep.call, [[1]]);
    expect(dep.state.calls).toBe(6);
    dep.state.calls = 2;
    const byCurrency = cacheOf(clock, { ttl: '1h', key: (currency: string) => currency });
    await byCurrency.call(dep.call, ['EUR', { side: 'buy' }]);
    await byCurrency.call(dep.call, ['EUR', { side: 'sell' }]);
    expect(dep.state.calls).toBe(3);
  });

  it('takes the last value of an Observable as the answer, and serves it to later subscriptions', async () => {
    const clock = new VirtualClock();
    const cache = cacheOf(clock, { ttl: '1h', staleIfError: '1h' });
    let subscribed = 0;
    const source = new Observable<number>((s) => {
      subscribed++;
      s.next(1);
      s.next(2);
      s.complete();
    });
    expect(await firstValueFrom(cache.observe(source, ['EUR']))).toBe(2);
    expect(await firstValueFrom(cache.observe(source, ['EUR']))).toBe(2);
    expect(subscribed).toBe(1);
    await clock.advance(HOUR);
    expect(
      await firstValueFrom(
        cache.observe(
          throwError(() => new Unavailable('down')),
          ['EUR'],
        ),
      ),
    ).toBe(2);
    expect(await firstValueFrom(cache.observe(of(3), ['GBP']))).toBe(3);
  });

  it('treats a store that fails as a miss, and logs once per episode', async () => {
    const clock = new VirtualClock();
    const entries = new Map<string, CacheEntry>();
    let down = false;
    const store: CacheStore = {
      get: (key) => (down ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve(entries.get(key))),
      set: (key, entry) => {
        if (down) throw new Error('ECONNREFUSED');
        entries.set(key, entry);
      },
    };
    const logged: string[] = [];
    const cache = cacheOf(clock, { ttl: '1s', staleIfError: '1h', store }, (m) => logged.push(m));
    const dep = dependency(clock);
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    down = true;
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:2');
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:3');
    dep.state.down = true;
    await expect(cache.call(dep.call, ['EUR'])).rejects.toBeInstanceOf(Unavailable);
    expect(logged).toEqual([CACHE_STORE_FAILED('rates', new Error('ECONNREFUSED'))]);
    down = false;
    expect(await cache.call(dep.call, ['EUR'])).toBe('EUR:1');
    down = true;
    await cache.call(dep.call, ['EUR']).catch(() => undefined);
    expect(logged).toEqual([
      CACHE_STORE_FAILED('rates', new Error('ECONNREFUSED')),
      CACHE_STORE_RECOVERED('rates'),
      CACHE_STORE_FAILED('rates', new Error('ECONNREFUSED')),
    ]);
  });

  it('refuses bad settings with the place and key', () => {
    expect(() => new ResilienceRegistry({ cache: { instances: { rates: { maxEntries: 0 } } } })).toThrow(
      "cache instance 'rates': key 'maxEntries' must be an integer >= 1, got 0",
    );
    expect(
      () => new ResilienceRegistry({ cache: { instances: { rates: { store: {} as unknown as CacheStore } } } }),
    ).toThrow(/cache instance 'rates': key 'store' must be a cache store/);
    expect(() => new ResilienceRegistry({ cache: { instances: { rates: { ttl: -1 } } } })).toThrow(
      /cache instance 'rates': key 'ttl'/,
    );
  });
});

describe('cache in a pipeline: outside the retry, inside the fallback', () => {
  function shop(clock: VirtualClock) {
    const registry = new ResilienceRegistry({
      clock,
      retry: {
        instances: { rates: { maxAttempts: 3, waitDuration: 100, jitter: 'none', retryExceptions: [Unavailable] } },
      },
      circuitBreaker: { instances: { rates: { minimumNumberOfCalls: 100 } } },
      cache: {
        instances: { rates: { staleIfError: '10m', mark: (v: string, { ageMs }) => `${v} (${ageMs} ms old)` } },
      },
    });
    const fallbacks: unknown[] = [];
    const pipeline = registry.pipeline({
      name: 'rates',
      retry: 'rates',
      circuitBreaker: 'rates',
      cache: 'rates',
      fallback: {
        errors: Error,
        handler: (error) => {
          fallbacks.push(error);
          return 'no rate';
        },
      },
    });
    return { registry, pipeline, fallbacks };
  }

  it('lists the cache right outside the retry', () => {
    const { pipeline } = shop(new VirtualClock());
    expect(pipeline.layers.map(([kind]) => kind)).toEqual(['fallback', 'cache', 'retry', 'circuitBreaker']);
  });

  it('answers stale only once the retry has given up, and the fallback never sees the failure', async () => {
    const clock = new VirtualClock();
    const { pipeline, fallbacks, registry } = shop(clock);
    let calls = 0;
    let down = false;
    const rate = (): Promise<string> => {
      calls++;
      return down ? Promise.reject(new Unavailable('down')) : Promise.resolve(`rate:${calls}`);
    };
    expect(await pipeline.execute(rate)).toBe('rate:1');
    down = true;
    const answer = settle(clock, pipeline.execute(rate), 200);
    expect(await answer).toEqual({ status: 'fulfilled', value: 'rate:1 (200 ms old)' });
    expect(calls).toBe(4);
    expect(fallbacks).toEqual([]);
    expect(registry.cache('rates').metrics).toMatchObject({ miss: 1, stale: 1 });
  });

  it('answers stale when the breaker is open, and the fallback only past the shelf life', async () => {
    const clock = new VirtualClock();
    const { pipeline, fallbacks, registry } = shop(clock);
    let calls = 0;
    const rate = (): Promise<string> => Promise.resolve(`rate:${++calls}`);
    await pipeline.execute(rate);
    registry.circuitBreaker('rates').transitionToForcedOpenState();
    expect(await pipeline.execute(rate)).toBe('rate:1 (0 ms old)');
    await clock.advance(600_001);
    expect(await pipeline.execute(rate)).toBe('no rate');
    expect(fallbacks).toHaveLength(1);
    expect(fallbacks[0]).toBeInstanceOf(CallNotPermittedError);
    expect(calls).toBe(1);
  });

  it('lets the fallback answer a cold start, which the cache never stores', async () => {
    const clock = new VirtualClock();
    const { pipeline, fallbacks } = shop(clock);
    const failing = (): Promise<string> => Promise.reject(new TypeError('bad body'));
    expect(await pipeline.execute(failing)).toBe('no rate');
    expect(await pipeline.execute(() => Promise.resolve('rate'))).toBe('rate');
    expect(fallbacks).toHaveLength(1);
  });
});
