import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { ResilienceRegistry, VirtualClock } from 'resilience4nest';
import { Dependencies } from '../src/downstream/dependencies';
import { PLATFORMS } from '../../test/support/platforms';
import { bootSampleApp } from './boot';
import { ClockDriver } from './clock-driver';

/**
 * The sample app against its real (simulated, loopback) dependencies, with
 * the module's time on a virtual clock: an outage is waited out by moving
 * the clock, not by sleeping.
 */
describe.each(PLATFORMS)('sample app under failure (%s)', (platform) => {
  let app: INestApplication;
  let clock: VirtualClock;
  let driver: ClockDriver;

  beforeEach(async () => {
    ({ app, clock, driver } = await bootSampleApp(['error'], platform));
  });

  afterEach(async () => {
    driver.restore();
    await app.close();
  });

  const breakDependency = (name: string, change: object) =>
    request(app.getHttpServer()).post(`/admin/dependencies/${name}`).send(change).expect(201);

  const withClock = (pending: request.Test) => driver.answer(pending);

  it('answers from the live inventory while it is healthy, and 404 for an unknown SKU (no fallback for an answer)', async () => {
    await request(app.getHttpServer())
      .get('/inventory/sku-1')
      .expect(200, { sku: 'sku-1', available: 12, source: 'inventory' });
    await request(app.getHttpServer()).get('/inventory/sku-404').expect(404);
    // The HttpService request carried the attempt's time left: its 500 ms limit, inside the 3 s default budget.
    expect(app.get(Dependencies).inventory.lastDeadlineHeader).toBe('500');
  });

  it('inventory down: the timeout and retries run out and the answer is an explicit "unknown", not a zero', async () => {
    await breakDependency('inventory', { down: true });
    const response = await withClock(request(app.getHttpServer()).get('/inventory/sku-1'));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ sku: 'sku-1', available: 'unknown', source: 'fallback' });
    expect(app.get(ResilienceRegistry).retry('inventory').metrics.failedCallsWithRetry).toBe(1);
    // Each timed-out attempt unsubscribed its HttpService request: the inventory saw all three connections closed.
    const inventory = app.get(Dependencies).inventory;
    for (let turn = 0; turn < 100 && inventory.abandoned < 3; turn++) await VirtualClock.settle();
    expect(inventory.abandoned).toBe(3);
    expect(inventory.hangingRequests).toBe(0);
  });

  it('payment provider failing: "pending, outcome unknown"; once the breaker opens: "rejected, not charged" with 503 and Retry-After', async () => {
    await breakDependency('payments', { errorRate: 1 });
    let openedAt = Number.NaN;
    app
      .get(ResilienceRegistry)
      .circuitBreaker('payments')
      .onStateTransition(({ to }) => {
        if (to === 'OPEN') openedAt = clock.now();
      });
    const outcomes: Array<{ status: number; body: { status: string } }> = [];
    for (let i = 0; i < 12; i++) {
      const response = await withClock(
        request(app.getHttpServer())
          .post('/payments')
          .set('x-customer-id', 'c-1')
          .set('idempotency-key', `key-${i}`)
          .send({ paymentId: `p-${i}`, amount: 999 }),
      );
      outcomes.push({ status: response.status, body: response.body });
    }
    const breaker = app.get(ResilienceRegistry).circuitBreaker('payments');
    expect(breaker.state).toBe('OPEN');
    expect(outcomes[0]).toEqual({ status: 202, body: { status: 'pending', paymentId: 'p-0', outcome: 'unknown' } });
    const rejected = outcomes.filter((o) => o.body.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected.every((o) => o.status === 503)).toBe(true);

    const refused = await request(app.getHttpServer())
      .post('/payments')
      .set('x-customer-id', 'c-1')
      .set('idempotency-key', 'key-late')
      .send({ paymentId: 'p-late', amount: 999 });
    expect(refused.status).toBe(503);
    // Retry-After is the time left of the 10 s the breaker stays open, in whole seconds rounded up.
    expect(refused.headers['retry-after']).toBe(String(Math.ceil((openedAt + 10_000 - clock.now()) / 1000)));
    expect(refused.body).toMatchObject({ status: 'rejected', paymentId: 'p-late', charged: false });
  });

  it('a payment succeeds again after the provider recovers and the breaker half-opens', async () => {
    await breakDependency('payments', { errorRate: 1 });
    for (let i = 0; i < 12; i++)
      await withClock(
        request(app.getHttpServer())
          .post('/payments')
          .set('x-customer-id', 'c-1')
          .set('idempotency-key', `key-${i}`)
          .send({ paymentId: `p-${i}`, amount: 999 }),
      );
    expect(app.get(ResilienceRegistry).circuitBreaker('payments').state).toBe('OPEN');
    await breakDependency('payments', { errorRate: 0 });
    await clock.advance(10_000);
    const response = await request(app.getHttpServer())
      .post('/payments')
      .set('x-customer-id', 'c-1')
      .set('idempotency-key', 'key-ok')
      .send({ paymentId: 'p-ok', amount: 999 });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ status: 'charged', paymentId: 'p-ok' });
    expect(app.get(ResilienceRegistry).circuitBreaker('payments').state).toBe('HALF_OPEN');
  });

  it('refuses a payment that does not say which customer pays: 401, nothing charged', async () => {
    const response = await request(app.getHttpServer())
      .post('/payments')
      .set('idempotency-key', 'key-anonymous')
      .send({ paymentId: 'p-anonymous', amount: 999 });
    expect(response.status).toBe(401);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.body.detail).toContain("option 'principal' of @Idempotent on PaymentsController.pay");
    expect(app.get(Dependencies).payments.served).toBe(0);
  });

  it('product page: every part answers while the dependencies are healthy', async () => {
    const { body } = await request(app.getHttpServer()).get('/products/sku-1?currency=EUR').expect(200);
    expect(body).toEqual({
      sku: 'sku-1',
      available: 12,
      price: { currency: 'EUR', amount: 23.39, fresh: true },
      recommendations: ['sku-3'],
    });
  });

  it('recommendations down: dropped from the page, nothing invented; the rest answers', async () => {
    await breakDependency('recommendations', { down: true });
    const response = await withClock(request(app.getHttpServer()).get('/products/sku-1'));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      sku: 'sku-1',
      available: 12,
      price: { currency: 'GBP', amount: 19.99, fresh: true },
    });
  });

  it('rates down: the last known rate, flagged not fresh, until it is too old; then an explicit 503', async () => {
    await request(app.getHttpServer()).get('/products/sku-3?currency=USD').expect(200);
    await breakDependency('rates', { errorRate: 1 });
    await clock.advance(60_000);
    const stale = await withClock(request(app.getHttpServer()).get('/products/sku-3?currency=USD'));
    expect(stale.status).toBe(200);
    expect(stale.body.price).toEqual({ currency: 'USD', amount: 9.53, fresh: false, rateAgeMs: expect.any(Number) });
    expect(stale.body.price.rateAgeMs).toBeGreaterThanOrEqual(60_000);

    await clock.advance(10 * 60_000);
    const tooOld = await withClock(request(app.getHttpServer()).get('/products/sku-3?currency=USD'));
    expect(tooOld.status).toBe(503);
    expect(tooOld.body.message).toBe(
      'no exchange rate for USD: the rates API is unavailable and no rate young enough to quote on is known',
    );

    const never = await withClock(request(app.getHttpServer()).get('/products/sku-3?currency=JPY'));
    expect(never.status).toBe(503);
    expect(never.body.message).toBe(
      'no exchange rate for JPY: the rates API is unavailable and no rate young enough to quote on is known',
    );
  });
});
