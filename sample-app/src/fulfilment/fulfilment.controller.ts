import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Idempotent, idempotencyTransaction, OutboxEnvelope, outboxEventId } from 'resilience4nest';
import { PaymentCaptured } from '../payments/payment-ledger';

/**
 * Starts a shipment for each captured payment. An event comes at least
 * once: again after a relay crashed between publishing and marking it
 * sent, and again after a consumer died before acknowledging it. Keyed on
 * the outbox event id, with the shipment written in the key's transaction,
 * the shipment is started once: a consumer killed mid-handling leaves no
 * shipment behind, one killed after the commit leaves a completed key.
 */
@Controller()
export class FulfilmentController {
  @EventPattern('payment.captured')
  @Idempotent({ key: outboxEventId, transactional: true })
  async onPaymentCaptured(@Payload() event: OutboxEnvelope<PaymentCaptured>, @Ctx() _context: unknown): Promise<void> {
    await idempotencyTransaction().query('INSERT INTO shop_shipments (payment_id) VALUES ($1)', [
      event.payload.paymentId,
    ]);
  }
}
