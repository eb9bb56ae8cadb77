import { VirtualClock } from '../kernel/clock';
import { ConfigChangedEvent } from '../kernel/config-change';
import { BulkheadFullError, CallNotPermittedError, RateLimitedError, TimeoutExceededError } from '../kernel/errors';
import { RegistryOptions } from './registry.options';
import { NOT_LIVE } from './reconfigure.messages';
import { DEFAULT_ORDER } from '../kernel/resilience.constants';
import { UNKNOWN_KEY } from '../config/config.messages';
import { THREAD_POOL_BULKHEAD_SCHEMA } from '../policies/bulkhead/thread-pool-bulkhead.config';
import { RedisCircuitBreakerStore } from '../stores/redis-circuit-breaker-store';
import { SHARED_NOT_LIVE, SHARED_WITHOUT_STORE } from '../policies/circuit-breaker/circuit-breaker.messages';
import { ResilienceRegistry } from './resilience.registry';

class Unavailable extends Error {
  readonly status = 503;
}

const fail = (): Promise<never> => Promise.reject(new Unavailable());

/** The message the registry fails startup with for `options`. */
function startupError(options: RegistryOptions): string {
  try {
    new ResilienceRegistry(options);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the options were valid');
}

/** A call that stays in flight until `finish` is called. */
function held(): { readonly promise: Promise<string>; finish(): void } {
  let finish!: () => void;
  const promise = new Promise<string>((resolve) => (finish = () => resolve('done')));
  return { promise, finish };
}

describe('ResilienceRegistry.reconfigure', () => {
  const clock = new VirtualClock();

  it('keeps an OPEN breaker OPEN, and says what changed, before and after', async () => {
    const registry = new ResilienceRegistry({
      clock,
      circuitBreaker: {
        instances: { psp: { slidingWindowSize: 4, minimumNumberOfCalls: 4, waitDurationInOpenState: '10s' } },
      },
    });
    const breaker = registry.circuitBreaker('psp');
    const seen: ConfigChangedEvent[] = [];
    breaker.onConfigChanged((event) => seen.push(event));
    for (let i = 0; i < 4; i++) await breaker.execute(fail).catch(() => undefined);
    expect(breaker.state).toBe('OPEN');

    const events = registry.reconfigure('circuitBreaker', 'psp', { failureRateThreshold: 80 });

    expect(breaker.state).toBe('OPEN');
    await expect(breaker.execute(() => 'ok')).rejects.toBeInstanceOf(CallNotPermittedError);
    expect(breaker.metrics.numberOfFailedCalls).toBe(4);
    expect(breaker.config.failureRateThreshold).toBe(80);
    expect(seen).toEqual(events);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ policy: 'circuitBreaker', name: 'psp', changed: ['failureRateThreshold'] });
    expect(events[0].before).toMatchObject({ failureRateThreshold: 50, slidingWindowSize: 4 });
    expect(events[0].after).toMatchObject({ failureRateThreshold: 80, slidingWindowSize: 4 });
    expect(events[0].windowReset).toBe(false);
  });

  it('starts a window of another type or size empty, and the event says so', async () => {
    const registry = new ResilienceRegistry({
      clock,
      circuitBreaker: { instances: { psp: { slidingWindowSize: 10, minimumNumberOfCalls: 5 } } },
    });
    const breaker = registry.circuitBreaker('psp');
    for (let i = 0; i < 3; i++) await breaker.execute(fail).catch(() => undefined);

    const [same] = registry.reconfigure('circuitBreaker', 'psp', { slowCallRateThreshold: 90 });
    expect(same.windowReset).toBe(false);
    expect(breaker.metrics.numberOfBufferedCalls).toBe(3);

    const [timeBased] = registry.reconfigure('circuitBreaker', 'psp', { slidingWindowType: 'TIME_BASED' });
    expect(timeBased.windowReset).toBe(true);
    expect(breaker.metrics.numberOfBufferedCalls).toBe(0);
    await breaker.execute(fail).catch(() => undefined);
    expect(breaker.metrics.numberOfBufferedCalls).toBe(1);

    const [smaller] = registry.reconfigure('circuitBreaker', 'psp', { slidingWindowSize: 5 });
    expect(smaller.windowReset).toBe(true);
    expect(smaller.changed).toEqual(['slidingWindowSize']);
    expect(breaker.metrics.numberOfBufferedCalls).toBe(0);
    expect(breaker.state).toBe('CLOSED');
  });

  it('re-evaluates a breaker whose threshold changed on its next recorded call', async () => {
    const registry = new ResilienceRegistry({
      clock,
      circuitBreaker: { instances: { psp: { slidingWindowSize: 10, minimumNumberOfCalls: 4 } } },
    });
    const breaker = registry.circuitBreaker('psp');
    await breaker.execute(fail).catch(() => undefined);
    for (let i = 0; i < 3; i++) await breaker.execute(() => 'ok');
    expect(breaker.metrics.failureRate).toBe(25);

    registry.reconfigure('circuitBreaker', 'psp', { failureRateThreshold: 20 });
    expect(breaker.state).toBe('CLOSED');

    await breaker.execute(() => 'ok');
    expect(breaker.metrics.failureRate).toBe(20);
    expect(breaker.state).toBe('OPEN');
  });

  it('counts the bulkhead permits in flight against the new limit', async () => {
    const registry = new ResilienceRegistry({
      clock,
      bulkhead: { instances: { db: { maxConcurrentCalls: 3, maxWaitDuration: 0 } } },
    });
    const bulkhead = registry.bulkhead('db');
    const calls = [held(), held(), held()];
    const running = calls.map((c) => bulkhead.execute(() => c.promise));

    registry.reconfigure('bulkhead', 'db', { maxConcurrentCalls: 2 });
    expect(bulkhead.metrics).toMatchObject({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 2 });
    await expect(bulkhead.execute(() => 'x')).rejects.toBeInstanceOf(BulkheadFullError);
    calls[0].finish();
    await running[0];
    // Two still in flight: the new limit.
    await expect(bulkhead.execute(() => 'x')).rejects.toBeInstanceOf(BulkheadFullError);
    calls[1].finish();
    await running[1];
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
    await expect(bulkhead.execute(() => 'x')).resolves.toBe('x');

    registry.reconfigure('bulkhead', 'db', { maxConcurrentCalls: 4 });
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(3);
    calls[2].finish();
    await running[2];
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(4);
  });

  it('hands the permits of a larger bulkhead to the calls waiting for one', async () => {
    const registry = new ResilienceRegistry({
      clock,
      bulkhead: { instances: { db: { maxConcurrentCalls: 1, maxWaitDuration: '1s', queueCapacity: 2 } } },
    });
    const bulkhead = registry.bulkhead('db');
    const first = held();
    const running = bulkhead.execute(() => first.promise);
    const waiting = [bulkhead.execute(() => 'a'), bulkhead.execute(() => 'b')];
    expect(bulkhead.metrics.queueDepth).toBe(2);

    registry.reconfigure('bulkhead', 'db', { maxConcurrentCalls: 3 });

    await expect(Promise.all(waiting)).resolves.toEqual(['a', 'b']);
    expect(bulkhead.metrics.queueDepth).toBe(0);
    first.finish();
    await running;
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(3);
  });

  it("keeps the rate limiter's period: its permits stay, later periods get the new limit", async () => {
    const limitClock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock: limitClock,
      rateLimiter: { instances: { api: { limitForPeriod: 2, limitRefreshPeriod: '1s', timeoutDuration: 0 } } },
    });
    const limiter = registry.rateLimiter('api');
    const pipeline = registry.pipeline({ rateLimiter: 'api' });
    await pipeline.execute(() => 1);
    await pipeline.execute(() => 2);

    registry.reconfigure('rateLimiter', 'api', { limitForPeriod: 5 });
    await expect(pipeline.execute(() => 3)).rejects.toBeInstanceOf(RateLimitedError);

    await limitClock.advance(1000);
    expect(limiter.metrics.availablePermissions).toBe(5);
    for (let i = 0; i < 5; i++) await pipeline.execute(() => i);
    await expect(pipeline.execute(() => 6)).rejects.toBeInstanceOf(RateLimitedError);
  });

  it('lets a new refresh period begin when the current one ends', async () => {
    const limitClock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock: limitClock,
      rateLimiter: { instances: { api: { limitForPeriod: 1, limitRefreshPeriod: '1s', timeoutDuration: 0 } } },
    });
    const limiter = registry.rateLimiter('api');
    await limitClock.advance(400);
    await limiter.execute(() => 1);

    registry.reconfigure('rateLimiter', 'api', { limitRefreshPeriod: '100ms' });
    await limitClock.advance(599);
    expect(limiter.metrics.availablePermissions).toBe(0);
    await limitClock.advance(1);
    expect(limiter.metrics.availablePermissions).toBe(1);
    await limiter.execute(() => 2);
    await limitClock.advance(100);
    expect(limiter.metrics.availablePermissions).toBe(1);
  });

  it('routes changeLimitForPeriod and changeTimeoutDuration through the same change, with its event', () => {
    const registry = new ResilienceRegistry({ clock });
    const limiter = registry.rateLimiter('api');
    const seen: ConfigChangedEvent[] = [];
    limiter.onConfigChanged((event) => seen.push(event));
    limiter.changeLimitForPeriod(7);
    limiter.changeTimeoutDuration('2s');
    expect(seen.map((e) => [e.changed, e.before, e.after].map((v) => JSON.stringify(v)))).toEqual([
      [
        '["limitForPeriod"]',
        JSON.stringify({ ...limiter.config, limitForPeriod: 50, timeoutDuration: 5000 }),
        JSON.stringify({ ...limiter.config, timeoutDuration: 5000 }),
      ],
      [
        '["timeoutDuration"]',
        JSON.stringify({ ...limiter.config, timeoutDuration: 5000 }),
        JSON.stringify(limiter.config),
      ],
    ]);
  });

  it('is seen by calls after the change on every path: policy, pipeline and a method’s own instance', async () => {
    const timeClock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock: timeClock,
      timeLimiter: { instances: { slow: { timeoutDuration: '1s' } } },
      retry: { instances: { slow: { maxAttempts: 1, waitDuration: 0 } } },
    });
    const limiter = registry.timeLimiter('slow');
    const pipeline = registry.pipeline('slow');
    const own = registry.derive('timeLimiter', 'slow', { cancelRunningFuture: false }, 'a method', 'test');
    const never = (): Promise<never> => new Promise<never>(() => undefined);

    registry.reconfigure('timeLimiter', 'slow', { timeoutDuration: '100ms' });
    registry.reconfigure('retry', 'slow', { maxAttempts: 3 });

    expect(own.config).toMatchObject({ timeoutDuration: 100, cancelRunningFuture: false });
    const outcomes = [limiter.execute(never), own.execute(never), pipeline.execute(never)].map((p) =>
      p.then(
        () => 'settled',
        (error: unknown) => (error instanceof TimeoutExceededError ? `timeout after ${error.timeoutMs}ms` : error),
      ),
    );
    await timeClock.advance(100);
    await timeClock.advance(100);
    await timeClock.advance(100);
    await expect(Promise.all(outcomes)).resolves.toEqual([
      'timeout after 100ms',
      'timeout after 100ms',
      'timeout after 100ms',
    ]);
    expect(registry.retry('slow').metrics.failedCallsWithRetry).toBe(1);
  });

  it('times a call out at a shortened limit while calls of the longer one are still waiting', async () => {
    const timeClock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock: timeClock,
      timeLimiter: { instances: { slow: { timeoutDuration: '1s' } } },
    });
    const limiter = registry.timeLimiter('slow');
    const never = (): Promise<never> => new Promise<never>(() => undefined);
    const ended: string[] = [];
    const track = (label: string, call: Promise<unknown>): Promise<void> =>
      call.then(
        () => undefined,
        (error: unknown) => {
          ended.push(`${label} at ${timeClock.now()}ms: ${(error as TimeoutExceededError).timeoutMs}ms limit`);
        },
      );
    const before = track('before', limiter.execute(never));

    registry.reconfigure('timeLimiter', 'slow', { timeoutDuration: '100ms' });
    const after = track('after', limiter.execute(never));

    await timeClock.advance(100);
    expect(ended).toEqual(['after at 100ms: 100ms limit']);
    await timeClock.advance(900);
    await Promise.all([before, after]);
    expect(ended).toEqual(['after at 100ms: 100ms limit', 'before at 1000ms: 1000ms limit']);
  });

  it("keeps a retry budget's tokens when its settings change, for the hedges that draw from it too", async () => {
    const registry = new ResilienceRegistry({
      clock,
      retry: { instances: { inventory: { maxAttempts: 2, waitDuration: 0, budget: { ratio: 0.5, maxTokens: 10 } } } },
      hedging: { instances: { inventory: { delay: '10ms', budget: 'inventory', safe: true } } },
    });
    const retry = registry.retry('inventory');
    const hedge = registry.hedge('inventory');
    for (let i = 0; i < 4; i++) await retry.execute(() => 'ok');
    expect(retry.budgetTokens).toBe(7);

    registry.reconfigure('retry', 'inventory', { budget: { ratio: 0.1, maxTokens: 6 } });

    expect(retry.budgetTokens).toBe(6);
    expect(hedge.budgetTokens).toBe(6);
    await retry.execute(() => 'ok');
    expect(retry.budgetTokens).toBe(6);
    await retry.execute(fail).catch(() => undefined);
    expect([retry.budgetTokens, hedge.budgetTokens]).toEqual([5, 5]);
  });

  it('offers outcomes to a drainPermissionsOnResult given after the pipeline was made', async () => {
    const limitClock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock: limitClock,
      rateLimiter: { instances: { api: { limitForPeriod: 5, limitRefreshPeriod: '1s', timeoutDuration: 0 } } },
    });
    const pipeline = registry.pipeline({ rateLimiter: 'api' });
    await pipeline.execute(() => 1);
    registry.reconfigure('rateLimiter', 'api', { drainPermissionsOnResult: () => true });
    await pipeline.execute(() => 2);
    expect(registry.rateLimiter('api').metrics.availablePermissions).toBe(0);
  });

  it('refuses a bad value with the startup message and changes nothing', async () => {
    const registry = new ResilienceRegistry({ clock, circuitBreaker: { instances: { psp: {} } } });
    const breaker = registry.circuitBreaker('psp');
    const before = breaker.config;
    expect(() => registry.reconfigure('circuitBreaker', 'psp', { failureRateThreshold: 150 })).toThrow(
      startupError({ circuitBreaker: { instances: { psp: { failureRateThreshold: 150 } } } }),
    );
    expect(() => registry.reconfigure('circuitBreaker', 'psp', { failureRateTreshold: 60 })).toThrow(
      startupError({ circuitBreaker: { instances: { psp: { failureRateTreshold: 60 } as object } } }),
    );
    expect(breaker.config).toBe(before);
  });

  it('refuses a name no instance has in strict mode', () => {
    const registry = new ResilienceRegistry({ clock, strict: true, retry: { instances: { known: {} } } });
    expect(() => registry.reconfigure('retry', 'unknwn', { maxAttempts: 2 })).toThrow(/unknwn/);
  });
});

describe('ResilienceRegistry.applyOptions', () => {
  const clock = new VirtualClock();
  const options: RegistryOptions = {
    clock,
    retry: { instances: { inventory: { maxAttempts: 3 }, payments: { maxAttempts: 2 } } },
    circuitBreaker: { configs: { default: { slidingWindowSize: 200 } }, instances: { psp: {} } },
    bulkhead: { instances: { db: { maxConcurrentCalls: 5 } } },
  };

  it('changes only the instances that differ', () => {
    const registry = new ResilienceRegistry(options);
    const made = [
      registry.retry('inventory'),
      registry.retry('payments'),
      registry.circuitBreaker('psp'),
      registry.circuitBreaker('undeclared'),
      registry.bulkhead('db'),
    ];
    const before = made.map((instance) => instance.config);

    const events = registry.applyOptions({
      ...options,
      retry: { instances: { inventory: { maxAttempts: 3 }, payments: { maxAttempts: 4 } } },
      circuitBreaker: { configs: { default: { slidingWindowSize: 300 } }, instances: { psp: {} } },
    });

    expect(events.map((e) => `${e.policy} ${e.name}: ${e.changed.join(', ')}`)).toEqual([
      'retry payments: maxAttempts',
      'circuitBreaker psp: slidingWindowSize',
      'circuitBreaker undeclared: slidingWindowSize',
    ]);
    expect(made.map((instance, i) => instance.config === before[i])).toEqual([true, false, false, false, true]);
    expect(registry.retry('payments').config.maxAttempts).toBe(4);
    expect(registry.circuitBreaker('later').config.slidingWindowSize).toBe(300);
  });

  it('changes nothing anywhere when one value among several instances is bad', () => {
    const registry = new ResilienceRegistry(options);
    const made = [registry.retry('inventory'), registry.retry('payments'), registry.circuitBreaker('psp')];
    const before = made.map((instance) => instance.config);
    const bad: RegistryOptions = {
      ...options,
      retry: { instances: { inventory: { maxAttempts: 5 }, payments: { maxAttempts: 6 } } },
      circuitBreaker: { instances: { psp: { slidingWindowSize: 10 } } },
      bulkhead: { instances: { db: { maxConcurrentCalls: -1 } } },
    };

    expect(() => registry.applyOptions(bad)).toThrow(startupError(bad));
    expect(made.map((instance, i) => instance.config === before[i])).toEqual([true, true, true]);
    expect(registry.bulkhead('db').config.maxConcurrentCalls).toBe(5);
  });

  it('refuses a rate limiter made shared without the module store, as startup does, and changes nothing', () => {
    const registry = new ResilienceRegistry(options);
    const retry = registry.retry('payments');
    const limiter = registry.rateLimiter('api');
    const shared: RegistryOptions = {
      ...options,
      retry: { instances: { inventory: { maxAttempts: 3 }, payments: { maxAttempts: 9 } } },
      rateLimiter: { instances: { api: { shared: true } } },
    };

    expect(() => registry.applyOptions(shared)).toThrow(startupError(shared));
    expect(() => registry.reconfigure('rateLimiter', 'api', { shared: true })).toThrow(
      startupError({ rateLimiter: { instances: { api: { shared: true } } } }),
    );
    expect([retry.config.maxAttempts, limiter.shared]).toEqual([2, false]);
  });

  it('refuses to make a running breaker fleet-wide, which needs a restart, and changes nothing', () => {
    const store = new RedisCircuitBreakerStore({ client: {} as never });
    const registry = new ResilienceRegistry({ ...options, circuitBreakerStore: store });
    const retry = registry.retry('payments');
    const breaker = registry.circuitBreaker('psp');
    const place = "circuitBreaker instance 'psp'";

    expect(() => registry.reconfigure('circuitBreaker', 'psp', { shared: true })).toThrow(
      SHARED_NOT_LIVE(place, 'false', '{ quorum: 1 }'),
    );
    expect(() =>
      registry.applyOptions({
        ...options,
        retry: { instances: { payments: { maxAttempts: 9 } } },
        circuitBreaker: { instances: { psp: { shared: { quorum: 2 } } } },
      }),
    ).toThrow(SHARED_NOT_LIVE(place, 'false', '{ quorum: 2 }'));
    expect([retry.config.maxAttempts, breaker.config.shared]).toEqual([2, false]);
  });

  it('refuses a breaker made shared without the module store, as startup does', () => {
    const registry = new ResilienceRegistry(options);
    expect(() => registry.reconfigure('circuitBreaker', 'later', { shared: true })).toThrow(
      SHARED_WITHOUT_STORE("circuitBreaker instance 'later'"),
    );
  });
});

describe('ResilienceRegistry.applyOptions, options read at startup only', () => {
  const clock = new VirtualClock();
  const base: RegistryOptions = {
    clock,
    retry: { instances: { payments: { maxAttempts: 2 } } },
    hedging: { instances: { catalog: { delay: '10ms', safe: true } } },
    deadline: { defaultBudget: '5s' },
    cache: { instances: { rates: { ttl: '1m' } } },
  };
  const changed: RegistryOptions = { ...base, retry: { instances: { payments: { maxAttempts: 4 } } } };

  it.each<[string, RegistryOptions]>([
    ['clock', { clock: new VirtualClock() }],
    ['random', { random: () => 0.5 }],
    ['order', { order: [...DEFAULT_ORDER].reverse() }],
    ['deadline.defaultBudget', { deadline: { defaultBudget: '9s' } }],
    ['deadline.header', { deadline: { defaultBudget: '5s', header: 'x-budget' } }],
  ])('refuses a different %s, naming it, and changes nothing', (path, different) => {
    const registry = new ResilienceRegistry(base);
    const retry = registry.retry('payments');
    expect(() => registry.applyOptions({ ...changed, ...different })).toThrow(NOT_LIVE(path));
    expect(retry.config.maxAttempts).toBe(2);
  });

  it('accepts those options given as they are in force, or left out', () => {
    const registry = new ResilienceRegistry(base);
    const retry = registry.retry('payments');
    expect(registry.applyOptions({ ...changed, order: [...DEFAULT_ORDER] })).toHaveLength(1);
    expect(retry.config.maxAttempts).toBe(4);
    expect(registry.applyOptions({ retry: { instances: { payments: { maxAttempts: 5 } } } })).toHaveLength(1);
    expect(retry.config.maxAttempts).toBe(5);
  });
});

describe('ResilienceRegistry.reconfigure of a thread-pool bulkhead', () => {
  const options: RegistryOptions = { threadPoolBulkhead: { instances: { reports: { maxThreadPoolSize: 2 } } } };

  it("takes the thread pool's own keys", () => {
    const registry = new ResilienceRegistry(options);
    const pool = registry.bulkhead('reports');
    registry.reconfigure('bulkhead', 'reports', { maxThreadPoolSize: 4, queueCapacity: 3 });
    expect([pool.config.maxConcurrentCalls, pool.config.queueCapacity]).toEqual([4, 3]);
  });

  it("refuses a semaphore bulkhead's keys, which a thread pool does not have, and changes nothing", () => {
    const registry = new ResilienceRegistry(options);
    const pool = registry.bulkhead('reports');
    const before = pool.config;
    for (const key of ['maxConcurrentCalls', 'maxWaitDuration'])
      expect(() => registry.reconfigure('bulkhead', 'reports', { [key]: 1 })).toThrow(
        UNKNOWN_KEY("threadPoolBulkhead instance 'reports'", key, Object.keys(THREAD_POOL_BULKHEAD_SCHEMA.fields)),
      );
    expect(pool.config).toBe(before);
  });
});
