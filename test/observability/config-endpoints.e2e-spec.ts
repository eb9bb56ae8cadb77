import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import request from 'supertest';
import { ResilienceEndpointsModule, ResilienceRegistry } from '../../lib';
import { CONFIG_BODY_NOT_AN_OBJECT, UNKNOWN_STATUS_INSTANCE } from '../../lib/observability/observability.messages';
import { PLATFORMS } from '../support/platforms';
import { bootApp, Shop } from './kit';

/** Lets a request through when it says it is an operator. */
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

describe.each(PLATFORMS)('PATCH <status path>/<policy>/<name>/config (%s)', (platform) => {
  let app: INestApplication;
  let registry: ResilienceRegistry;
  let shop: Shop;

  beforeAll(async () => {
    const booted = await bootApp(
      { metrics: false },
      {
        imports: [
          ResilienceEndpointsModule.forRoot({ status: { public: true, writable: { guards: [OperatorGuard] } } }),
        ],
      },
      platform,
    );
    app = booted.app;
    shop = booted.shop;
    registry = app.get(ResilienceRegistry);
  });

  afterAll(() => app.close());

  const patch = (path: string, body: unknown, operator = true) => {
    const call = request(app.getHttpServer()).patch(`/actuator${path}`);
    return (operator ? call.set('x-operator', 'yes') : call).send(body as object);
  };

  it('is refused by the writable guard', async () => {
    await patch('/circuitbreakers/psp/config', { failureRateThreshold: 30 }, false).expect(403);
    expect(registry.circuitBreaker('psp').config.failureRateThreshold).toBe(50);
  });

  it('answers a bad body with 400 naming the field, and changes nothing', async () => {
    const range = await patch('/circuitbreakers/psp/config', {
      failureRateThreshold: 150,
      slidingWindowSize: 4,
    }).expect(400);
    expect(range.body.detail).toMatch(/circuitBreaker instance 'psp': key 'failureRateThreshold' must be/);
    const unknown = await patch('/bulkheads/pool/config', { maxConcurentCalls: 4 }).expect(400);
    expect(unknown.body.detail).toMatch(/bulkhead instance 'pool': unknown key 'maxConcurentCalls'/);
    const notObject = await patch('/retries/inventory/config', [3]).expect(400);
    expect(notObject.body.detail).toBe(CONFIG_BODY_NOT_AN_OBJECT('retry', 'inventory'));
    expect(registry.circuitBreaker('psp').config.slidingWindowSize).toBe(2);
    expect(registry.bulkhead('pool').config.maxConcurrentCalls).toBe(1);
  });

  it('answers an unknown instance or policy with 404', async () => {
    const missing = await patch('/ratelimiters/nope/config', { limitForPeriod: 3 }).expect(404);
    expect(missing.body.detail).toBe(UNKNOWN_STATUS_INSTANCE('rateLimiter', 'nope'));
    await patch('/fallbacks/Shop.quote/config', { limitForPeriod: 3 }).expect(404);
  });

  it('applies a good body to the running instance and answers its new config and state', async () => {
    const breaker = registry.circuitBreaker('psp');
    const state = breaker.state;
    const { body } = await patch('/circuitbreakers/psp/config', {
      failureRateThreshold: 30,
      waitDurationInOpenState: '30s',
    }).expect(200);
    expect(body.circuitBreakers).toEqual([
      expect.objectContaining({
        name: 'psp',
        state,
        config: expect.objectContaining({ failureRateThreshold: 30, waitDurationInOpenState: 30_000 }),
      }),
    ]);
    expect(breaker.config.failureRateThreshold).toBe(30);

    const time = await patch('/timelimiters/slow/config', { timeoutDuration: '250ms' }).expect(200);
    expect(time.body.timeLimiters[0].config.timeoutDuration).toBe(250);
    const retries = await patch('/retries/inventory/config', { maxAttempts: 5 }).expect(200);
    expect(retries.body.retries[0].config.maxAttempts).toBe(5);
    expect(registry.retry('inventory').config.maxAttempts).toBe(5);
    const events = await request(app.getHttpServer()).get('/actuator/circuitbreakerevents/psp').expect(200);
    expect(events.body.circuitBreakerEvents.map((e: { type: string }) => e.type)).toContain('CONFIG_CHANGED');
  });

  it("changes a cache's settings, keeping what it stored", async () => {
    const cache = registry.cache('rates');
    await shop.rate('EUR');
    const calls = shop.rateCalls;
    const { body } = await patch('/caches/rates/config', { ttl: '5m', staleIfError: '1h' }).expect(200);
    expect(body.caches).toEqual([
      expect.objectContaining({
        name: 'rates',
        config: expect.objectContaining({ ttl: 300_000, staleIfError: 3_600_000, store: 'memory' }),
      }),
    ]);
    expect(cache.config.ttl).toBe(300_000);
    await expect(shop.rate('EUR')).resolves.toBe(1);
    expect(shop.rateCalls).toBe(calls);
    const bad = await patch('/caches/rates/config', { ttl: 'soon' }).expect(400);
    expect(bad.body.detail).toMatch(/cache instance 'rates': key 'ttl' must be/);
    const events = await request(app.getHttpServer()).get('/actuator/cacheevents/rates').expect(200);
    expect(events.body.cacheEvents.map((e: { type: string }) => e.type)).toContain('CONFIG_CHANGED');
  });
});
