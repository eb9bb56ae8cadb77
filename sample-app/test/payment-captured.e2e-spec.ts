import { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import request from 'supertest';
import {
  IdempotencyOutcomeEvent,
  IdempotencyRegistry,
  Outbox,
  outboxEventId,
  PostgresIdempotencyStore,
} from 'resilience4nest';
import { LocalEvents } from '../src/events/local-events';
import { serverOrSkip } from '../../test/support/server-env';
import { shopDatabase } from '../src/ops/shop-database';
import { bootSampleApp } from './boot';
import { ClockDriver } from './clock-driver';

const CONSUMER = 'FulfilmentService.onPaymentCaptured';

/**
 * The shop with its database: a charged payment is recorded with its
 * `payment.captured` event in one transaction, the outbox relay publishes
 * the event through the in-process transport, and fulfilment starts one
 * shipment for it, even when the relay publishes it twice.
 */
describe('sample app: payment.captured through the outbox', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  // A database of its own: the shop uses its default table names.
  const name = `shop_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const shopUrl = Object.assign(new URL(url), { pathname: `/${name}` }).toString();
  let admin: Pool;
  let pool: Pool;
  let app: INestApplication;
  let driver: ClockDriver;
  const outcomes: IdempotencyOutcomeEvent[] = [];
  let waiters: Array<() => void> = [];
  /** Events the in-process transport delivered. */
  const delivered: string[] = [];

  beforeAll(async () => {
    admin = new Pool({ connectionString: url, max: 1 });
    await admin.query(`CREATE DATABASE ${name}`);
    pool = new Pool({ connectionString: shopUrl, max: 8 });
    // Dropping the database at the end ends any connection still open, which the pool then reports.
    pool.on('error', () => undefined);
    ({ app, driver } = await bootSampleApp(
      ['error'],
      'express',
      (clock) => ({ store: new PostgresIdempotencyStore({ pool, clock }), close: async () => undefined }),
      undefined,
      {},
      () => shopDatabase(pool),
    ));
    app.get(LocalEvents).subscribe('payment.captured', async (data) => void delivered.push(outboxEventId(data)));
    app.get(IdempotencyRegistry).onOutcome((event) => {
      if (event.name !== CONSUMER) return;
      outcomes.push(event);
      for (const wake of waiters) wake();
      waiters = [];
    });
  });

  afterAll(async () => {
    driver.restore();
    await app.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  /** Resolves once the consumer has seen `count` events. */
  const consumed = async (count: number) => {
    while (outcomes.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const rows = async (table: string) => (await pool.query(`SELECT * FROM ${table}`)).rows;
  /**
   * The outbox rows once the relay has marked what it published: it marks an
   * event sent after its publish returns, which can be after the consumer
   * has handled it. Each look is a query, at most 2,000 of them.
   */
  const outboxOnceMarked = async () => {
    for (let look = 0; look < 2000; look++) {
      const events = await rows('resilience4nest_outbox');
      if (events.every((event) => event.state !== 'pending')) return events;
    }
    throw new Error('the relay left an outbox event pending');
  };
  const pay = (key: string, paymentId: string) =>
    request(app.getHttpServer())
      .post('/payments')
      .set('idempotency-key', key)
      .set('x-customer-id', 'c-1')
      .send({ paymentId, amount: 1999 });

  it('one capture, one event, one shipment, though the relay publishes the event twice', async () => {
    const charged = await pay('order-1', 'p-1').expect(201);
    expect(charged.body).toMatchObject({ status: 'charged', paymentId: 'p-1' });
    // The client's retry replays the answer: no second capture, no second event.
    await pay('order-1', 'p-1').expect(201, charged.body);
    await consumed(1);
    const [event] = await outboxOnceMarked();
    expect(event).toMatchObject({ topic: 'payment.captured', key: 'p-1', state: 'sent' });
    expect(event.payload).toEqual({ paymentId: 'p-1', chargeId: charged.body.chargeId, amount: 1999 });

    // What a relay that crashed after publishing, before marking the event sent, leaves behind.
    await pool.query(
      `UPDATE resilience4nest_outbox SET state = 'pending', sent_at = NULL, lease_owner = NULL, available_at = 0 WHERE id = $1`,
      [event.id],
    );
    app.get(Outbox).relay?.wake();
    await consumed(2);

    expect(delivered).toEqual([event.id, event.id]);
    expect(outcomes.map((o) => [o.outcome, o.key])).toEqual([
      ['executed', event.id],
      ['replayed', event.id],
    ]);
    expect(await rows('shop_payments')).toEqual([
      { payment_id: 'p-1', charge_id: charged.body.chargeId, amount: 1999 },
    ]);
    expect((await rows('shop_shipments')).map((s) => s.payment_id)).toEqual(['p-1']);
    expect((await outboxOnceMarked()).map((e) => e.state)).toEqual(['sent']);
  });
});
