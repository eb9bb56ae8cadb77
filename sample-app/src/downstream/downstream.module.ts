import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DependenciesController } from './dependencies.controller';
import { SimulatedDependency } from './simulated-dependency';
import { INVENTORY_API, PAYMENT_PROVIDER } from './tokens';

/** Stock levels by SKU, as the simulated inventory service knows them. */
const STOCK: Record<string, number> = { 'sku-1': 12, 'sku-2': 0, 'sku-3': 4 };

/** Starts the simulated third parties the sample depends on, on free loopback ports. */
@Global()
@Module({
  controllers: [DependenciesController],
  providers: [
    {
      provide: INVENTORY_API,
      useFactory: () =>
        SimulatedDependency.start('inventory', (req) => {
          const sku = decodeURIComponent((req.url ?? '').split('/').pop() ?? '');
          return sku in STOCK ? { status: 200, body: { sku, available: STOCK[sku] } } : { status: 404, body: { error: `no sku ${sku}` } };
        }),
    },
    {
      provide: PAYMENT_PROVIDER,
      useFactory: () => {
        // A real provider deduplicates on the idempotency key, which is what makes retrying a charge safe.
        const charges = new Map<string, { chargeId: string; amount: number }>();
        return SimulatedDependency.start('payments', (req, body) => {
          const key = String(req.headers['idempotency-key'] ?? '');
          const { amount } = (body ?? {}) as { amount?: number };
          if (!key || typeof amount !== 'number') return { status: 400, body: { error: 'idempotency-key and amount are required' } };
          const charge = charges.get(key) ?? { chargeId: `ch_${charges.size + 1}`, amount };
          charges.set(key, charge);
          return { status: 201, body: charge };
        });
      },
    },
  ],
  exports: [INVENTORY_API, PAYMENT_PROVIDER],
})
export class DownstreamModule implements OnApplicationShutdown {
  constructor(
    @Inject(INVENTORY_API) private readonly inventory: SimulatedDependency,
    @Inject(PAYMENT_PROVIDER) private readonly payments: SimulatedDependency,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.inventory.close(), this.payments.close()]);
  }
}
