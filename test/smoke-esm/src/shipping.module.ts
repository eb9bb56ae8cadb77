import { Controller, Injectable, Module } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Idempotent, outboxEventId, ResilienceModule, type OutboxEnvelope } from 'resilience4nest';

/** The orders the consumer shipped, one entry per handler body that ran. */
@Injectable()
export class Shipments {
  readonly orders: string[] = [];
}

/** A consumer of `order.created` events sent through the outbox's Redis Streams transport, idempotent on the event id. */
@Controller()
export class ShippingController {
  constructor(private readonly shipments: Shipments) {}

  @EventPattern('order.created')
  @Idempotent({ key: outboxEventId })
  async onOrderCreated(@Payload() event: OutboxEnvelope<{ orderId: string }>, @Ctx() _context: unknown): Promise<void> {
    this.shipments.orders.push(event.payload.orderId);
  }
}

@Module({
  imports: [ResilienceModule.forRoot({})],
  controllers: [ShippingController],
  providers: [Shipments],
})
export class ShippingModule {}
