import { Global, Inject, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { IdempotencyStore } from 'resilience4nest';
import { LocalEvents } from '../events/local-events';
import { idempotencyStoreFromEnv } from './idempotency-store';
import { SHOP_DATABASE, ShopDatabase, shopDatabaseFromEnv } from './shop-database';

/** Injection token of the idempotency store chosen from the environment. */
export const SHOP_IDEMPOTENCY_STORE = 'SHOP_IDEMPOTENCY_STORE';

/**
 * Owns the connections (the idempotency store's and the shop's database,
 * opened at start, closed at shutdown) and the in-process event transport.
 */
@Global()
@Module({
  providers: [
    { provide: SHOP_IDEMPOTENCY_STORE, useFactory: () => idempotencyStoreFromEnv() },
    { provide: SHOP_DATABASE, useFactory: () => shopDatabaseFromEnv() },
    LocalEvents,
  ],
  exports: [SHOP_IDEMPOTENCY_STORE, SHOP_DATABASE, LocalEvents],
})
export class OpsModule implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(SHOP_IDEMPOTENCY_STORE) private readonly handle: { store: IdempotencyStore; close: () => Promise<void> },
    @Inject(SHOP_DATABASE) private readonly database: ShopDatabase,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.database.migrate();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.handle.close();
    await this.database.close();
  }
}
