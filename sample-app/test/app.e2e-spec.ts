import { INestApplication } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RESILIENCE_MODULE_OPTIONS, ResilienceExceptionFilter, ResilienceModuleOptions, ResilienceRegistry, VirtualClock } from 'resilience4nest';
import { AppModule } from '../src/app.module';

/**
 * The sample app against its real (simulated, loopback) dependencies, with
 * the module's time on a virtual clock: an outage is waited out by moving
 * the clock, not by sleeping.
 */
describe('sample app under failure', () => {
  let app: INestApplication;
  let clock: VirtualClock;

  beforeEach(async () => {
    clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(RESILIENCE_MODULE_OPTIONS)
      .useFactory({
        inject: [ConfigService],
        factory: (config: ConfigService) => ({ ...config.getOrThrow<ResilienceModuleOptions>('resilience4j'), clock, random: () => 0.5 }),
      })
      .compile();
    app = moduleRef.createNestApplication({ logger: ['error'] });
    app.useGlobalFilters(new ResilienceExceptionFilter());
    await app.init();
  });

  afterEach(() => app.close());

  const breakDependency = (name: string, change: object) =>
    request(app.getHttpServer()).post(`/admin/dependencies/${name}`).send(change).expect(201);

  /** Sends a request and moves the virtual clock in steps until it is answered (bounded). */
  async function withClock(pending: request.Test, stepMs = 100, maxSteps = 200): Promise<request.Response> {
    let done = false;
    const response = pending.then((r) => {
      done = true;
      return r;
    });
    for (let i = 0; i < maxSteps && !done; i++) {
      for (let j = 0; j < 50 && !done; j++) await VirtualClock.settle();
      if (!done) await clock.advance(stepMs);
    }
    return response;
  }

  it('answers from the live inventory while it is healthy, and 404 for an unknown SKU (no fallback for an answer)', async () => {
    await request(app.getHttpServer()).get('/inventory/sku-1').expect(200, { sku: 'sku-1', available: 12, source: 'inventory' });
    await request(app.getHttpServer()).get('/inventory/sku-404').expect(404);
  });

  it('inventory down: the timeout and retries run out and the answer is an explicit "unknown", not a zero', async () => {
    await breakDependency('inventory', { down: true });
    const response = await withClock(request(app.getHttpServer()).get('/inventory/sku-1'));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ sku: 'sku-1', available: 'unknown', source: 'fallback' });
    expect(app.get(ResilienceRegistry).retry('inventory').metrics.failedCallsWithRetry).toBe(1);
  });

  it('payment provider failing: "pending, outcome unknown"; once the breaker opens: "rejected, not charged" with 503 and Retry-After', async () => {
    await breakDependency('payments', { errorRate: 1 });
    const outcomes: Array<{ status: number; body: { status: string } }> = [];
    for (let i = 0; i < 12; i++) {
      const response = await withClock(request(app.getHttpServer()).post('/payments').send({ paymentId: `p-${i}`, amount: 999 }));
      outcomes.push({ status: response.status, body: response.body });
    }
    const breaker = app.get(ResilienceRegistry).circuitBreaker('payments');
    expect(breaker.state).toBe('OPEN');
    expect(outcomes[0]).toEqual({ status: 202, body: { status: 'pending', paymentId: 'p-0', outcome: 'unknown' } });
    const rejected = outcomes.filter((o) => o.body.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected.every((o) => o.status === 503)).toBe(true);

    const refused = await request(app.getHttpServer()).post('/payments').send({ paymentId: 'p-late', amount: 999 });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.body).toMatchObject({ status: 'rejected', paymentId: 'p-late', charged: false });
  });

  it('a payment succeeds again after the provider recovers and the breaker half-opens', async () => {
    await breakDependency('payments', { errorRate: 1 });
    for (let i = 0; i < 12; i++) await withClock(request(app.getHttpServer()).post('/payments').send({ paymentId: `p-${i}`, amount: 999 }));
    expect(app.get(ResilienceRegistry).circuitBreaker('payments').state).toBe('OPEN');
    await breakDependency('payments', { errorRate: 0 });
    await clock.advance(10_000);
    const response = await request(app.getHttpServer()).post('/payments').send({ paymentId: 'p-ok', amount: 999 });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ status: 'charged', paymentId: 'p-ok' });
    expect(app.get(ResilienceRegistry).circuitBreaker('payments').state).toBe('HALF_OPEN');
  });
});
