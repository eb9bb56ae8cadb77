import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { bootSampleApp } from './boot';
import { ClockDriver } from './clock-driver';

/** One sample of a Prometheus text exposition, e.g. `value('resilience4j_circuitbreaker_state', { name: 'payments', state: 'open' })`. */
function sampleOf(scrape: string, metric: string, labels: Record<string, string>): number | undefined {
  for (const line of scrape.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== metric) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (
      Object.entries(labels).every(([k, v]) => found[k] === v) &&
      Object.keys(found).length === Object.keys(labels).length
    )
      return Number(match[3]);
  }
  return undefined;
}

describe('sample app: what /metrics shows after each defence acted', () => {
  let app: INestApplication;
  let driver: ClockDriver;

  beforeAll(async () => {
    ({ app, driver } = await bootSampleApp(false));
  });

  afterAll(async () => {
    driver.restore();
    await app.close();
  });

  const server = () => app.getHttpServer();
  const configure = (name: string, change: object) =>
    request(server()).post(`/admin/dependencies/${name}`).send(change).expect(201);
  const pay = (key: string, paymentId: string) =>
    driver.answer(
      request(server())
        .post('/payments')
        .set('x-customer-id', 'c-1')
        .set('idempotency-key', key)
        .send({ paymentId, amount: 999 }),
    );

  it('counts a replay, retries spent and denied by the budget, an open breaker, coalesced calls, a timeout and fallbacks', async () => {
    // An idempotent replay: the same key twice, one charge.
    expect((await pay('k-replay', 'p-replay')).status).toBe(201);
    const replay = await pay('k-replay', 'p-replay');
    expect(replay.headers['idempotent-replayed']).toBe('true');

    // The provider fails every call. The budget holds 5.1 tokens (half of 10, plus 0.1 for the success):
    // payments 1 and 2 make 3 attempts each, payment 3 makes 2 and is denied its third, payment 4 is denied
    // its second. That is 1 + 3 + 3 + 2 + 1 = 10 calls, filling the breaker's window at 9/10 failed: it opens.
    await configure('payments', { errorRate: 1 });
    const answers: number[] = [];
    for (let i = 0; i < 12; i++) answers.push((await pay(`k-${i}`, `p-${i}`)).status);
    // Pending (202, outcome unknown) while calls reach the provider; rejected (503, not charged) once it is open.
    expect(answers).toEqual([...Array(4).fill(202), ...Array(8).fill(503)]);

    // Recommendations hang: 12 concurrent views of one product share one call (cache 'recommendations'
    // coalesces), which times out; every page goes without recommendations and the bulkhead refuses none.
    await configure('recommendations', { down: true });
    const pages = await driver.answerAll(Array.from({ length: 12 }, () => request(server()).get('/products/sku-2')));
    expect(pages.every((p) => p.status === 200 && p.body.recommendations === undefined)).toBe(true);

    const scrape = (await request(server()).get('/metrics').expect(200)).text;
    const value = (metric: string, labels: Record<string, string>) => sampleOf(scrape, metric, labels);

    expect(value('resilience4nest_cache_calls_total', { name: 'recommendations', result: 'coalesced' })).toBe(11);
    expect(value('resilience4nest_cache_calls_total', { name: 'recommendations', result: 'miss' })).toBe(1);
    expect(value('resilience4nest_bulkhead_rejected_total', { name: 'recommendations' })).toBe(0);
    expect(value('resilience4j_bulkhead_max_allowed_concurrent_calls', { name: 'recommendations' })).toBe(10);
    expect(value('resilience4j_bulkhead_available_concurrent_calls', { name: 'recommendations' })).toBe(10);
    expect(value('resilience4j_timelimiter_calls_total', { name: 'recommendations', kind: 'timeout' })).toBe(1);
    expect(value('resilience4j_circuitbreaker_calls_seconds_count', { name: 'recommendations', kind: 'failed' })).toBe(
      1,
    );
    expect(
      value('resilience4nest_fallback_calls_total', { name: 'RecommendationsClient.alsoBought', kind: 'Error' }),
    ).toBe(12);

    // payments may fail the health check and is OPEN: /health is down, and says which breaker and why.
    const health = await request(server()).get('/health');
    expect(health.status).toBe(503);
    expect(health.body.error.circuitBreakers).toMatchObject({ status: 'down' });
    expect(JSON.stringify(health.body.error.circuitBreakers)).toContain('payments');
  });
});
