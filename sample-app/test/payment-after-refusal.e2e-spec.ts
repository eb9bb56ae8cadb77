import { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import request from 'supertest';
import { PostgresIdempotencyStore, ResilienceRegistry, VirtualClock } from 'resilience4nest';
import { serverOrSkip } from '../../test/support/server-env';
import { Dependencies } from '../src/downstream/dependencies';
import { bootSampleApp } from './boot';
import { ClockDriver } from './clock-driver';

/**
 * The sequence that once charged a customer twice for one Idempotency-Key,
 * end to end over HTTP with the keys in PostgreSQL: attempt 1 reaches the
 * provider, which charges and never answers; the timeout that follows opens
 * the breaker; the retry's attempt 2 is refused by the open breaker. That
 * refusal must not make the payment look as if it never left.
 */
describe('sample app: a payment whose retry is refused after the provider charged', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let table: string;
  let app: INestApplication;
  let clock: VirtualClock;
  let driver: ClockDriver;
  let dependencies: Dependencies;

  beforeAll(async () => {
    pool = new Pool({ connectionString: url, max: 5 });
    table = `idem_sample_${randomUUID().replace(/-/g, '')}`;
    ({ app, clock, driver } = await bootSampleApp(['error'], 'express', (moduleClock) => ({
      store: new PostgresIdempotencyStore({ pool, table, clock: moduleClock }),
      close: async () => undefined,
    })));
    dependencies = app.get(Dependencies);
  });

  afterAll(async () => {
    driver.restore();
    await app.close();
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    await pool.end();
  });

  const pay = () =>
    driver.answer(
      request(app.getHttpServer())
        .post('/payments')
        .set('idempotency-key', 'order-42')
        .set('x-customer-id', 'c-1')
        .send({ paymentId: 'p-42', amount: 999 }),
    );

  it('charges once and answers "pending" (202), never "not charged"; the client\'s retry with the same key gets that one charge', async () => {
    const registry = app.get(ResilienceRegistry);
    const breaker = registry.circuitBreaker('payments');
    // The provider has been failing: the breaker holds 9 failures, one short of its minimum of 10 calls.
    for (let i = 0; i < 9; i++)
      await breaker.execute(() => Promise.reject(new Error('provider unavailable'))).catch(() => undefined);
    expect(breaker.state).toBe('CLOSED');
    await request(app.getHttpServer()).post('/admin/dependencies/payments').send({ loseReplies: true }).expect(201);

    const first = await pay();
    const chargesAfterFirst = dependencies.charges.size;
    expect(breaker.state).toBe('OPEN');
    expect(registry.retry('payments').metrics.failedCallsWithRetry).toBe(1);

    // The client retries with the same key once the provider answers again, the breaker's 10 s are over
    // and the key's 30 s lease has run out.
    await request(app.getHttpServer()).post('/admin/dependencies/payments').send({ loseReplies: false }).expect(201);
    await clock.advance(30_000);
    const retried = await pay();

    const chargeIds = [...dependencies.charges.values()].map((c) => c.chargeId);
    expect({
      chargesAfterFirst,
      chargeIds,
      first: [first.status, first.body],
      retried: [retried.status, retried.body],
    }).toEqual({
      chargesAfterFirst: 1,
      chargeIds: ['ch_1'],
      first: [202, { status: 'pending', paymentId: 'p-42', outcome: 'unknown' }],
      // The reconciler finds the charge under the attempt's downstream key: the answer is that one charge.
      retried: [201, { status: 'charged', paymentId: 'p-42', chargeId: 'ch_1' }],
    });
  });
});
