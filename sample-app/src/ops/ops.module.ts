import { Global, Inject, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { IdempotencyStore } from 'resilience4nest';
import { SHOP_EVENTS, ShopEvents, shopEventsFromEnv } from '../events/shop-events';
import { idempotencyStoreFromEnv } from './idempotency-store';
import { SHOP_DATABASE, ShopDatabase, shopDatabaseFromEnv } from './shop-database';

/** Injection token of the idempotency store chosen from the environment. */
export const SHOP_IDEMPOTENCY_STORE = 'SHOP_IDEMPOTENCY_STORE';

/**
 * Owns the connections (the idempotency store's, the shop's database and
 * its Redis Streams transport), opened at start, closed at shutdown.
 */
@Global()
@Module({
  providers: [
    { provide: SHOP_IDEMPOTENCY_STORE, useFactory: () => idempotencyStoreFromEnv() },
    { provide: SHOP_DATABASE, useFactory: () => shopDatabaseFromEnv() },
    { provide: SHOP_EVENTS, useFactory: () => shopEventsFromEnv() },
  ],
  exports: [SHOP_IDEMPOTENCY_STORE, SHOP_DATABASE, SHOP_EVENTS],
})
export class OpsModule implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(SHOP_IDEMPOTENCY_STORE) private readonly handle: { store: IdempotencyStore; close: () => Promise<void> },
    @Inject(SHOP_DATABASE) private readonly database: ShopDatabase,
    @Inject(SHOP_EVENTS) private readonly events: ShopEvents,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.database.migrate();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.handle.close();
    await this.database.close();
    await this.events.close();
  }
}
