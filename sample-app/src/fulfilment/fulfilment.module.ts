import { BeforeApplicationShutdown, INestApplication, Module } from '@nestjs/common';
import { CustomStrategy } from '@nestjs/microservices';
import { RedisStreamsServer, RedisStreamsServerOptions } from 'resilience4nest';
import { FulfilmentController } from './fulfilment.controller';

/** The consumer group of the shop's fulfilment: each event is shipped by one of its consumers. */
export const FULFILMENT_GROUP = 'fulfilment';

/**
 * Fulfilment: the `payment.captured` consumer. Its handler needs idempotency
 * keys in PostgreSQL (it ships in the key's transaction), so the shop loads
 * this module only with `DATABASE_URL` and `REDIS_URL`. At shutdown the
 * consumer stops before the connections it uses are closed.
 */
@Module({ controllers: [FulfilmentController] })
export class FulfilmentModule implements BeforeApplicationShutdown {
  /** The consumer {@link startFulfilmentConsumer} started. */
  consumer: RedisStreamsServer | undefined;

  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer?.close();
  }
}

/** How {@link startFulfilmentConsumer} reads the stream: `RedisStreamsServer`'s options but the group. */
export type FulfilmentConsumerOptions = Omit<RedisStreamsServerOptions, 'group'>;

/**
 * Connects the fulfilment consumer to an initialized application and starts
 * it: a `RedisStreamsServer` in group {@link FULFILMENT_GROUP}, reading the
 * `payment.captured` stream. An entry is acknowledged once its shipment
 * committed; one a dead consumer left pending is taken over after
 * `claimIdle` (30 s unless given) by a live consumer of the group.
 */
export async function startFulfilmentConsumer(
  app: INestApplication,
  options: FulfilmentConsumerOptions,
): Promise<void> {
  const consumer = RedisStreamsServer({ ...options, group: FULFILMENT_GROUP });
  app.get(FulfilmentModule).consumer = consumer;
  app.connectMicroservice<CustomStrategy>({ strategy: consumer });
  await app.startAllMicroservices();
}
