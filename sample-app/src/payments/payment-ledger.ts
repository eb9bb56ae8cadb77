import { Inject, Injectable } from '@nestjs/common';
import { Outbox } from 'resilience4nest';
import { SHOP_DATABASE, ShopDatabase } from '../ops/shop-database';

/** The event the shop publishes when a payment is charged. */
export interface PaymentCaptured {
  readonly paymentId: string;
  readonly chargeId: string;
  readonly amount: number;
}

/**
 * Records captured payments. The payment row and its `payment.captured`
 * event are written in one transaction, so the event is published (by the
 * outbox relay, at least once) if and only if the payment was recorded.
 */
@Injectable()
export class PaymentLedger {
  constructor(
    @Inject(SHOP_DATABASE) private readonly database: ShopDatabase,
    private readonly outbox: Outbox,
  ) {}

  /** Records the capture and adds its event; the event id, or `undefined` when the shop has no database or no outbox. */
  async recordCapture(capture: PaymentCaptured): Promise<string | undefined> {
    const { pool } = this.database;
    if (pool === undefined || !this.outbox.configured) return undefined;
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO shop_payments (payment_id, charge_id, amount) VALUES ($1, $2, $3)', [
        capture.paymentId,
        capture.chargeId,
        capture.amount,
      ]);
      const eventId = await this.outbox.add('payment.captured', capture, { tx: client, key: capture.paymentId });
      await client.query('COMMIT');
      return eventId;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }
}
