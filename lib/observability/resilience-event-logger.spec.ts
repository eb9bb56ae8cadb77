import { Logger } from '@nestjs/common';
import { VirtualClock } from '../kernel/clock';
import { ResilienceModuleOptions } from '../options/resilience.options';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { RateLimiterStore, RateLimiterStoreAnswer } from '../policies/rate-limiter/rate-limiter-store';
import { InstanceCatalog } from './instance-catalog';
import {
  BREAKER_TRANSITION,
  BUDGET_EXHAUSTED,
  BUDGET_RECOVERED,
  BULKHEAD_RECOVERED,
  BULKHEAD_SATURATED,
  RATE_LIMITER_STORE_ANSWERING,
  RATE_LIMITER_STORE_FAILING,
  CONFIG_CHANGED,
} from './observability.messages';
import { ResilienceEventLogger } from './resilience-event-logger';

class Unavailable extends Error {
  readonly status = 503;
}

function start(options: ResilienceModuleOptions) {
  const clock = new VirtualClock();
  const registry = new ResilienceRegistry({ clock, ...options });
  const logger = new ResilienceEventLogger(new InstanceCatalog(registry), new IdempotencyRegistry(registry));
  const lines: Array<[string, string]> = [];
  jest
    .spyOn(Logger.prototype, 'warn')
    .mockImplementation((message: unknown) => void lines.push(['warn', String(message)]));
  jest
    .spyOn(Logger.prototype, 'log')
    .mockImplementation((message: unknown) => void lines.push(['log', String(message)]));
  logger.onApplicationBootstrap();
  return { clock, registry, logger, lines };
}

describe('ResilienceEventLogger', () => {
  afterEach(() => jest.restoreAllMocks());

  it('logs each breaker transition once, with the window the breaker opened on, never a call', async () => {
    const { registry, clock, logger, lines } = start({
      circuitBreaker: {
        instances: {
          psp: {
            slidingWindowSize: 4,
            minimumNumberOfCalls: 4,
            waitDurationInOpenState: '10s',
            permittedNumberOfCallsInHalfOpenState: 1,
          },
        },
      },
    });
    const breaker = registry.circuitBreaker('psp');
    for (let i = 0; i < 2; i++) await breaker.execute(() => 'ok');
    for (let i = 0; i < 2; i++) await breaker.execute(() => Promise.reject(new Unavailable())).catch(() => undefined);
    for (let i = 0; i < 20; i++) await breaker.execute(() => 'ok').catch(() => undefined);
    await clock.advance(10_001);
    await breaker.execute(() => 'ok');
    expect(lines).toEqual([
      [
        'warn',
        BREAKER_TRANSITION(
          'psp',
          'CLOSED',
          'OPEN',
          { ...breaker.metrics, failureRate: 50, slowCallRate: 0, numberOfBufferedCalls: 4 },
          10_000,
        ),
      ],
      ['log', BREAKER_TRANSITION('psp', 'OPEN', 'HALF_OPEN', undefined, 10_000)],
      ['log', BREAKER_TRANSITION('psp', 'HALF_OPEN', 'CLOSED', undefined, 10_000)],
    ]);
    expect(lines[0][1]).toBe(
      "circuit breaker 'psp' CLOSED -> OPEN (failure rate 50.0%, slow-call rate 0.0% over 4 calls); calls are refused for 10000 ms",
    );
    logger.onModuleDestroy();
  });

  it('logs each config change once, however many instances of the name follow it', () => {
    const { registry, logger, lines } = start({
      circuitBreaker: { instances: { psp: { slidingWindowSize: 10, minimumNumberOfCalls: 5 } } },
    });
    registry.circuitBreaker('psp');
    registry.derive('circuitBreaker', 'psp', { slowCallRateThreshold: 50 }, 'a method', 'test');
    registry.rateLimiter('api');

    const events = registry.reconfigure('circuitBreaker', 'psp', { failureRateThreshold: 80, slidingWindowSize: 20 });
    registry.rateLimiter('api').changeLimitForPeriod(7);

    expect(events).toHaveLength(2);
    expect(lines).toEqual([
      ['log', CONFIG_CHANGED(events[0])],
      [
        'log',
        CONFIG_CHANGED({
          ...events[0],
          policy: 'rateLimiter',
          name: 'api',
          before: { limitForPeriod: 50 },
          after: { limitForPeriod: 7 },
          changed: ['limitForPeriod'],
          windowReset: undefined,
        }),
      ],
    ]);
    expect(lines[0][1]).toBe(
      "circuitBreaker 'psp' reconfigured: failureRateThreshold 50 -> 80, slidingWindowSize 10 -> 20 (the sliding window starts empty); calls from now on use the new settings",
    );
    expect(lines[1][1]).toBe(
      "rateLimiter 'api' reconfigured: limitForPeriod 50 -> 7; calls from now on use the new settings",
    );
    logger.onModuleDestroy();
  });

  it("logs one line per change of a hedge, not one per key or per method's own hedge made from it", () => {
    const { registry, logger, lines } = start({
      hedging: { instances: { catalog: { delay: 'p95', latencyWindowSize: 100, safe: true } } },
    });
    registry.hedge('catalog');
    registry.hedge('catalog', { key: 'eu' });
    registry.deriveHedge('catalog', { maxHedgedAttempts: 2 }, 'a method', 'test');

    const events = registry.reconfigure('hedge', 'catalog', { delay: '250ms' });
    registry.reconfigure('hedge', 'catalog', { delay: 'p99' });

    expect(events).toHaveLength(3);
    expect(lines).toEqual([
      ['log', 'hedge \'catalog\' reconfigured: delay "p95" -> 250; calls from now on use the new settings'],
      [
        'log',
        'hedge \'catalog\' reconfigured: delay 250 -> "p99" (its latency window starts empty); calls from now on use the new settings',
      ],
    ]);
    logger.onModuleDestroy();
  });

  it("logs one line per change of a cache, not one per method's own cache made from it", () => {
    const { registry, logger, lines } = start({ cache: { instances: { rates: { ttl: '1m' } } } });
    registry.cache('rates');
    registry.deriveCache('rates', { staleIfError: '1h' }, 'a method', 'test');

    const events = registry.reconfigure('cache', 'rates', { ttl: '5m' });

    expect(events).toHaveLength(2);
    expect(lines).toEqual([
      ['log', "cache 'rates' reconfigured: ttl 60000 -> 300000; calls from now on use the new settings"],
    ]);
    logger.onModuleDestroy();
  });

  it('logs an episode of budget denials when it starts and at the first call after a quiet period', async () => {
    const { registry, clock, logger, lines } = start({
      retry: { instances: { inventory: { maxAttempts: 2, waitDuration: 0, budget: { ratio: 0.1, maxTokens: 1 } } } },
      logging: { quietPeriod: '5s' },
    });
    const retry = registry.retry('inventory');
    // The budget starts with half a token, so no failure here may be retried.
    for (let i = 0; i < 5; i++) await retry.execute(() => Promise.reject(new Unavailable())).catch(() => undefined);
    expect(lines).toEqual([['warn', BUDGET_EXHAUSTED('inventory')]]);
    await clock.advance(1_000);
    await retry.execute(() => Promise.reject(new Unavailable())).catch(() => undefined);
    await clock.advance(4_999);
    await retry.execute(() => 'ok');
    expect(lines).toHaveLength(1);
    await clock.advance(1);
    await retry.execute(() => 'ok');
    expect(lines).toEqual([
      ['warn', BUDGET_EXHAUSTED('inventory')],
      ['log', BUDGET_RECOVERED('inventory', 6, 1_000)],
    ]);
    logger.onModuleDestroy();
  });

  it('logs bulkhead saturation once per episode, not once per rejection', async () => {
    const { registry, clock, logger, lines } = start({
      bulkhead: { instances: { pool: { maxConcurrentCalls: 1 } } },
      logging: { quietPeriod: '1s' },
    });
    const bulkhead = registry.bulkhead('pool');
    let release!: () => void;
    const held = bulkhead.execute(() => new Promise<void>((resolve) => (release = resolve)));
    for (let i = 0; i < 10; i++) await bulkhead.execute(() => undefined).catch(() => undefined);
    await clock.advance(1_000);
    release();
    await held;
    expect(lines).toEqual([['warn', BULKHEAD_SATURATED('pool', 1, 'queue-full')]]);
    // The first call to finish after a quiet second ends the episode.
    await bulkhead.execute(() => undefined);
    await bulkhead.execute(() => undefined);
    expect(lines).toEqual([
      ['warn', BULKHEAD_SATURATED('pool', 1, 'queue-full')],
      ['log', BULKHEAD_RECOVERED('pool', 10, 0)],
    ]);
    logger.onModuleDestroy();
  });

  it('logs nothing with logging: false, and nothing after the application closed', async () => {
    const off = start({ logging: false });
    off.registry.circuitBreaker('a').transitionToForcedOpenState();
    expect(off.lines).toEqual([]);
    jest.restoreAllMocks();
    const on = start({});
    on.logger.onModuleDestroy();
    on.registry.circuitBreaker('a').transitionToForcedOpenState();
    expect(on.lines).toEqual([]);
  });

  it("logs an episode of a shared rate limiter's store failures twice: the store's own text first, the count once it answers", async () => {
    let failing = true;
    const store: RateLimiterStore = {
      acquire: (): Promise<RateLimiterStoreAnswer> =>
        failing
          ? Promise.reject(new Error('NOAUTH Authentication required.'))
          : Promise.resolve({ reserved: true, waitMs: 0, availablePermissions: 9, nextPeriodInMs: 1000, drained: 0 }),
    };
    const { registry, clock, lines } = start({
      rateLimiterStore: store,
      logging: { quietPeriod: '10s' },
      rateLimiter: { instances: { partner: { shared: true } } },
    });
    const limiter = registry.rateLimiter('partner');
    for (let i = 0; i < 3; i++) {
      await limiter.execute(() => 'ok').catch(() => undefined);
      await clock.advance(1_000);
    }
    failing = false;
    await clock.advance(10_000);
    await limiter.execute(() => 'ok');
    await limiter.execute(() => 'ok');
    expect(lines).toEqual([
      ['warn', RATE_LIMITER_STORE_FAILING('partner', 'NOAUTH Authentication required.', false)],
      ['log', RATE_LIMITER_STORE_ANSWERING('partner', 3, 2_000)],
    ]);
  });

  it('logs the transitions of the instance of each key with its key, escaped, and a change of its name once', async () => {
    const { registry, lines, logger } = start({
      circuitBreaker: {
        keys: { max: 10, idleTimeout: '1m' },
        instances: { psp: { slidingWindowSize: 2, minimumNumberOfCalls: 2 } },
      },
    });
    const host = registry.circuitBreaker('psp', { key: 'eu\n"west"' });
    registry.circuitBreaker('psp', { key: 'us' });
    for (let i = 0; i < 2; i++) await host.execute(() => Promise.reject(new Unavailable())).catch(() => undefined);
    expect(lines).toEqual([
      [
        'warn',
        BREAKER_TRANSITION('psp', 'CLOSED', 'OPEN', { ...host.metrics, failureRate: 100 }, 60_000) +
          ' (key "eu\\n\\"west\\"")',
      ],
    ]);
    expect(lines[0][1]).not.toContain('\n');
    lines.length = 0;
    registry.reconfigure('circuitBreaker', 'psp', { failureRateThreshold: 40 });
    expect(lines.filter(([, line]) => line.includes('reconfigured'))).toHaveLength(1);
    expect(lines.every(([, line]) => !line.includes('(key'))).toBe(true);
    logger.onModuleDestroy();
  });

  it('stops logging for the instance of a key once the registry evicts it', async () => {
    const { registry, clock, lines, logger } = start({
      circuitBreaker: { keys: { max: 10, idleTimeout: '1m' }, instances: { psp: {} } },
    });
    const idle = registry.circuitBreaker('psp', { key: 'a' });
    await clock.advance(60_000);
    expect([...registry.keys('circuitBreaker', 'psp').keys()]).toEqual([]);
    idle.transitionToForcedOpenState();
    expect(lines).toEqual([]);
    registry.circuitBreaker('psp', { key: 'a' }).transitionToForcedOpenState();
    expect(lines).toHaveLength(1);
    expect(lines[0][1]).toContain('(key "a")');
    logger.onModuleDestroy();
  });
});
