import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { Idempotent, OutboxEnvelope, outboxEventId } from 'resilience4nest';
import { LocalEvents } from '../events/local-events';
import { SHOP_DATABASE, ShopDatabase } from '../ops/shop-database';
import { PaymentCaptured } from '../payments/payment-ledger';

/**
 * Starts a shipment for each captured payment. The relay delivers an event
 * at least once (twice after a crash between publishing and marking it
 * sent); keyed on the outbox event id, the shipment is started once.
 */
@Injectable()
export class FulfilmentService implements OnModuleInit {
  constructor(
    private readonly events: LocalEvents,
    @Inject(SHOP_DATABASE) private readonly database: ShopDatabase,
  ) {}

  onModuleInit(): void {
    this.events.subscribe('payment.captured', (event) =>
      this.onPaymentCaptured(event as OutboxEnvelope<PaymentCaptured>),
    );
  }

  @Idempotent({ key: outboxEventId })
  async onPaymentCaptured(event: OutboxEnvelope<PaymentCaptured>): Promise<void> {
    await this.database.pool?.query('INSERT INTO shop_shipments (payment_id) VALUES ($1)', [event.payload.paymentId]);
  }
}
