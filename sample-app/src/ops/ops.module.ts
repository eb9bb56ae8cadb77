import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { IdempotencyStore } from 'resilience4nest';
import { idempotencyStoreFromEnv } from './idempotency-store';

/** Injection token of the idempotency store chosen from the environment. */
export const SHOP_IDEMPOTENCY_STORE = 'SHOP_IDEMPOTENCY_STORE';

/** Owns the idempotency store's connection: opened at start, closed at shutdown. */
@Global()
@Module({
  providers: [{ provide: SHOP_IDEMPOTENCY_STORE, useFactory: () => idempotencyStoreFromEnv() }],
  exports: [SHOP_IDEMPOTENCY_STORE],
})
export class OpsModule implements OnApplicationShutdown {
  constructor(
    @Inject(SHOP_IDEMPOTENCY_STORE) private readonly handle: { store: IdempotencyStore; close: () => Promise<void> },
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.handle.close();
  }
}
