import {
  BulkheadFullError,
  CallNotPermittedError,
  CircuitBreakerStateTransitionEvent,
  InstanceEvictedEvent,
  recordEvents,
  RESILIENCE_PROBLEMS,
  ResilienceRegistry,
  TooManyInstancesError,
  VirtualClock,
} from '../../lib';
import { INVALID_VALUE, UNKNOWN_KEY } from '../../lib/config/config.messages';
import { TOO_MANY_KEYS, TOO_MANY_UNDECLARED_INSTANCES } from '../../lib/kernel/resilience.messages';

const failing = (): Promise<never> => Promise.reject(Object.assign(new Error('down'), { code: 'ECONNREFUSED' }));

/** A registry on a virtual clock whose `payments` breaker opens after two failures and waits a minute. */
function paymentsRegistry(keys: object = {}, clock = new VirtualClock()): ResilienceRegistry {
  return new ResilienceRegistry({
    clock,
    circuitBreaker: {
      keys,
      instances: {
        payments: {
          slidingWindowSize: 2,
          minimumNumberOfCalls: 2,
          failureRateThreshold: 50,
          waitDurationInOpenState: '1m',
        },
      },
    },
  });
}

async function open(registry: ResilienceRegistry, key: string): Promise<void> {
  const breaker = registry.circuitBreaker('payments', { key });
  for (let i = 0; i < 2; i++) await breaker.execute(failing).catch(() => undefined);
  expect(breaker.state).toBe('OPEN');
}

function refusal(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}

describe('instances per key', () => {
  it('applies a live change of the name to every key, kept or made later, keeping each key its state', async () => {
    const registry = paymentsRegistry();
    await open(registry, 'a.example');
    const b = registry.circuitBreaker('payments', { key: 'b.example' });
    const events = registry.reconfigure('circuitBreaker', 'payments', { waitDurationInOpenState: '5m' });
    // The name's shared instance and both keys changed, each once.
    expect(events.map((e) => (e as { key?: string }).key ?? null).sort()).toEqual(
      [null, 'a.example', 'b.example'].sort(),
    );
    const a = registry.circuitBreaker('payments', { key: 'a.example' });
    expect(a.state).toBe('OPEN');
    expect(a.config.waitDurationInOpenState).toBe(300_000);
    expect(b.config.waitDurationInOpenState).toBe(300_000);
    expect(registry.circuitBreaker('payments', { key: 'c.example' }).config.waitDurationInOpenState).toBe(300_000);
  });

  it('gives each key its own state, made from the named instance config', async () => {
    const registry = paymentsRegistry();
    const a = registry.circuitBreaker('payments', { key: 'a.example' });
    const b = registry.circuitBreaker('payments', { key: 'b.example' });
    expect(a).not.toBe(b);
    expect(registry.circuitBreaker('payments', { key: 'a.example' })).toBe(a);
    await open(registry, 'a.example');
    expect(b.state).toBe('CLOSED');
    expect(registry.circuitBreaker('payments').state).toBe('CLOSED');
    await expect(a.execute(() => Promise.resolve(1))).rejects.toBeInstanceOf(CallNotPermittedError);
    await expect(b.execute(() => Promise.resolve(2))).resolves.toBe(2);
    expect(a.config.waitDurationInOpenState).toBe(60_000);
    expect(a.config).toBe(b.config);
    expect([...registry.keys('circuitBreaker', 'payments').keys()].sort()).toEqual(['a.example', 'b.example']);
    expect(registry.keys('circuitBreaker', 'payments').get('a.example')).toBe(a);
  });

  it('gives every policy its keys: a rate limit per tenant', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      rateLimiter: { instances: { api: { limitForPeriod: 1, limitRefreshPeriod: '1s', timeoutDuration: 0 } } },
    });
    const acme = registry.rateLimiter('api', { key: 'acme' });
    await acme.execute(() => Promise.resolve(1));
    await expect(acme.execute(() => Promise.resolve(1))).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(registry.rateLimiter('api', { key: 'globex' }).execute(() => Promise.resolve(2))).resolves.toBe(2);
    expect(registry.retry('api', { key: 'acme' }).key).toBe('acme');
    expect(registry.bulkhead('api', { key: 'acme' }).key).toBe('acme');
    expect(registry.timeLimiter('api', { key: 'acme' }).key).toBe('acme');
  });

  it('publishes events carrying the name and the key', async () => {
    const registry = paymentsRegistry();
    const seen: CircuitBreakerStateTransitionEvent[] = [];
    registry.circuitBreaker('payments', { key: 'a' }).onStateTransition((event) => seen.push(event));
    const recorder = recordEvents(registry);
    await open(registry, 'a');
    expect(seen).toEqual([{ name: 'payments', key: 'a', from: 'CLOSED', to: 'OPEN' }]);
    const transitions = recorder.events.filter((e) => e.type === 'STATE_TRANSITION');
    expect(transitions.map((e) => e.event)).toEqual([{ name: 'payments', key: 'a', from: 'CLOSED', to: 'OPEN' }]);
    recorder.stop();
  });

  it('evicts the least recently used idle key past keys.max', async () => {
    const clock = new VirtualClock();
    const registry = paymentsRegistry({ max: 3 }, clock);
    const evicted: InstanceEvictedEvent[] = [];
    registry.onInstanceEvicted((event) => evicted.push(event));
    const first = registry.circuitBreaker('payments', { key: 'a' });
    for (const key of ['b', 'c']) {
      await clock.advance(1);
      registry.circuitBreaker('payments', { key });
    }
    await clock.advance(1);
    expect(registry.circuitBreaker('payments', { key: 'a' })).toBe(first);
    await clock.advance(1);
    registry.circuitBreaker('payments', { key: 'd' });
    expect([...registry.keys('circuitBreaker', 'payments').keys()].sort()).toEqual(['a', 'c', 'd']);
    expect(evicted.map(({ policy, name, key }) => [policy, name, key])).toEqual([['circuitBreaker', 'payments', 'b']]);
    expect(registry.circuitBreaker('payments', { key: 'a' })).toBe(first);
  });

  it('evicts a key idle for keys.idleTimeout, on the clock, and makes it afresh when asked again', async () => {
    const clock = new VirtualClock();
    const registry = paymentsRegistry({ idleTimeout: '5m' }, clock);
    const a = registry.circuitBreaker('payments', { key: 'a' });
    await a.execute(failing).catch(() => undefined);
    await clock.advance(120_000);
    registry.circuitBreaker('payments', { key: 'b' });
    await clock.advance(180_000 - 1);
    expect([...registry.keys('circuitBreaker', 'payments').keys()]).toEqual(['a', 'b']);
    await clock.advance(1);
    expect([...registry.keys('circuitBreaker', 'payments').keys()]).toEqual(['b']);
    const again = registry.circuitBreaker('payments', { key: 'a' });
    expect(again).not.toBe(a);
    expect(again.metrics.numberOfFailedCalls).toBe(0);
  });

  it('never evicts an OPEN breaker before its wait ends, and refuses a new key when none can go', async () => {
    const clock = new VirtualClock();
    const registry = paymentsRegistry({ max: 2, idleTimeout: '10s' }, clock);
    await open(registry, 'a');
    await open(registry, 'b');
    await clock.advance(30_000);
    const refused = refusal(() => registry.circuitBreaker('payments', { key: 'c' }));
    expect(refused).toBeInstanceOf(TooManyInstancesError);
    expect(refused).toMatchObject({
      code: 'TOO_MANY_INSTANCES',
      policy: 'circuitBreaker',
      instance: 'payments',
      key: 'c',
      max: 2,
      message: TOO_MANY_KEYS('circuitBreaker', 'payments', 2),
    });
    expect((refused as Error).message).not.toContain("'c'");
    expect(RESILIENCE_PROBLEMS.TOO_MANY_INSTANCES.status).toBe(503);
    expect([...registry.keys('circuitBreaker', 'payments').keys()]).toEqual(['a', 'b']);
    await clock.advance(30_001);
    expect(registry.circuitBreaker('payments', { key: 'c' }).state).toBe('CLOSED');
    expect(registry.keys('circuitBreaker', 'payments').size).toBe(1);
  });

  it('never evicts a FORCED_OPEN breaker', async () => {
    const clock = new VirtualClock();
    const registry = paymentsRegistry({ max: 1, idleTimeout: '10s' }, clock);
    registry.circuitBreaker('payments', { key: 'a' }).transitionToForcedOpenState();
    await clock.advance(3_600_000);
    expect(refusal(() => registry.circuitBreaker('payments', { key: 'b' }))).toBeInstanceOf(TooManyInstancesError);
    expect(registry.circuitBreaker('payments', { key: 'a' }).state).toBe('FORCED_OPEN');
  });

  it('never evicts a bulkhead with calls in flight', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      bulkhead: { keys: { max: 1, idleTimeout: '1s' }, instances: { db: { maxConcurrentCalls: 1 } } },
    });
    let release: () => void = () => undefined;
    const busy = registry
      .bulkhead('db', { key: 'a' })
      .execute(() => new Promise<void>((resolve) => (release = resolve)));
    await clock.advance(10_000);
    expect(refusal(() => registry.bulkhead('db', { key: 'b' }))).toBeInstanceOf(TooManyInstancesError);
    await expect(registry.bulkhead('db', { key: 'a' }).execute(() => Promise.resolve(1))).rejects.toBeInstanceOf(
      BulkheadFullError,
    );
    release();
    await busy;
    expect(registry.bulkhead('db', { key: 'b' }).metrics.availableConcurrentCalls).toBe(1);
    expect([...registry.keys('bulkhead', 'db').keys()]).toEqual(['b']);
  });

  it('never evicts a rate limiter with waiters', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      rateLimiter: {
        keys: { max: 1, idleTimeout: '1s' },
        instances: { api: { limitForPeriod: 1, limitRefreshPeriod: '10s', timeoutDuration: '10s' } },
      },
    });
    const limiter = registry.rateLimiter('api', { key: 'a' });
    await limiter.execute(() => Promise.resolve(1));
    await clock.advance(2_000);
    const waiting = limiter.execute(() => Promise.resolve(2));
    expect(limiter.metrics.numberOfWaitingThreads).toBe(1);
    expect(refusal(() => registry.rateLimiter('api', { key: 'b' }))).toBeInstanceOf(TooManyInstancesError);
    await expect(clock.runUntilSettled(waiting, { maxTime: 10_000 })).resolves.toBe(2);
    await clock.advance(1_000);
    expect(registry.rateLimiter('api', { key: 'b' }).key).toBe('b');
  });

  it('validates the section option keys with messages naming the section, the key and the value', async () => {
    const make = (keys: unknown) => () => new ResilienceRegistry({ circuitBreaker: { keys } as never });
    expect(make({ max: 0 })).toThrow(INVALID_VALUE('circuitBreaker.keys', 'max', 'an integer >= 1', 0));
    expect(make({ idleTimeout: '-1s' })).toThrow(
      INVALID_VALUE('circuitBreaker.keys', 'idleTimeout', 'a positive duration', '-1s'),
    );
    expect(make({ maxKeys: 3 })).toThrow(UNKNOWN_KEY('circuitBreaker.keys', 'maxKeys', ['max', 'idleTimeout']));
    expect(
      () => new ResilienceRegistry({ retry: { keys: { 'idle-timeout': '30s', max: '5' } } as never }),
    ).not.toThrow();
  });
});

describe('maxUndeclaredInstances, with the same eviction', () => {
  it('evicts the least recently used idle undeclared name instead of refusing it', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, maxUndeclaredInstances: 2 });
    const evicted: string[] = [];
    registry.onInstanceEvicted((event) => evicted.push(`${event.policy} ${event.name}`));
    const a = registry.circuitBreaker('tenant-a');
    await clock.advance(1);
    registry.circuitBreaker('tenant-b');
    await clock.advance(1);
    expect(registry.circuitBreaker('tenant-a')).toBe(a);
    await clock.advance(1);
    registry.circuitBreaker('tenant-c');
    expect(evicted).toEqual(['circuitBreaker tenant-b']);
    expect(registry.all('circuitBreaker').map((b) => b.name)).toEqual(['tenant-a', 'tenant-c']);
  });

  it('evicts an undeclared name idle for the section keys.idleTimeout', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, retry: { keys: { idleTimeout: '1m' } } });
    const first = registry.retry('tenant-a');
    await clock.advance(60_000);
    expect(registry.all('retry')).toEqual([]);
    expect(registry.retry('tenant-a')).not.toBe(first);
  });

  it('refuses a new name only when every undeclared one holds state', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, maxUndeclaredInstances: 2 });
    registry.circuitBreaker('tenant-a').transitionToForcedOpenState();
    registry.circuitBreaker('tenant-b').transitionToOpenState();
    const refused = refusal(() => registry.circuitBreaker('tenant-c'));
    expect(refused).toBeInstanceOf(TooManyInstancesError);
    expect(refused).toMatchObject({
      instance: 'tenant-c',
      max: 2,
      key: undefined,
      message: TOO_MANY_UNDECLARED_INSTANCES('circuitBreaker', 'tenant-c', 2),
    });
  });

  it('never evicts a name a pipeline holds', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, maxUndeclaredInstances: 1 });
    const pipeline = registry.pipeline({ circuitBreaker: 'held' });
    await clock.advance(3_600_000);
    expect(refusal(() => registry.circuitBreaker('other'))).toBeInstanceOf(TooManyInstancesError);
    expect(pipeline.layers).toEqual([['circuitBreaker', 'held']]);
    expect(registry.all('circuitBreaker').map((b) => b.name)).toEqual(['held']);
  });
});
