import { HttpModule } from '@nestjs/axios';
import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { TerminusModule } from '@nestjs/terminus';
import {
  IdempotencyStore,
  PostgresOutboxStore,
  ResilienceEndpointsModule,
  ResilienceModule,
  ResilienceModuleOptions,
} from 'resilience4nest';
import { loadResilienceYaml } from './config/load-config';
import { Dependencies } from './downstream/dependencies';
import { DownstreamModule } from './downstream/downstream.module';
import { LocalEvents } from './events/local-events';
import { FulfilmentService } from './fulfilment/fulfilment.service';
import { InventoryClient } from './inventory/inventory.client';
import { InventoryController } from './inventory/inventory.controller';
import { LoadProbeController, QuoteService, StockPool } from './load-probe/load-probe.controller';
import { HealthController } from './ops/health.controller';
import { OperatorGuard } from './ops/operator.guard';
import { OpsModule, SHOP_IDEMPOTENCY_STORE } from './ops/ops.module';
import { SHOP_DATABASE, ShopDatabase } from './ops/shop-database';
import { PaymentLedger } from './payments/payment-ledger';
import { paymentReconciler } from './payments/payment-reconciler';
import { PaymentsClient } from './payments/payments.client';
import { PaymentsController } from './payments/payments.controller';
import { ProductsController } from './products/products.controller';
import { ExchangeRatesClient } from './rates/exchange-rates.client';
import { RecommendationsClient } from './recommendations/recommendations.client';

/**
 * The shop's resilience options: the YAML's `resilience4j` block, with
 * idempotency keys in the chosen store and, when the shop has a database,
 * the outbox that publishes its events through the in-process transport.
 */
export function shopResilienceOptions(
  config: ConfigService,
  dependencies: Dependencies,
  idempotency: { store: IdempotencyStore },
  database: ShopDatabase,
  events: LocalEvents,
): ResilienceModuleOptions {
  const { pool } = database;
  return {
    ...config.getOrThrow<ResilienceModuleOptions>('resilience4j'),
    idempotency: {
      store: idempotency.store,
      reconciler: paymentReconciler(dependencies),
    },
    ...(pool === undefined ? {} : { outbox: { store: new PostgresOutboxStore({ pool }), publisher: events } }),
  };
}

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [loadResilienceYaml] }),
    DownstreamModule,
    HttpModule,
    OpsModule,
    ResilienceModule.forRootAsync({
      inject: [ConfigService, Dependencies, SHOP_IDEMPOTENCY_STORE, SHOP_DATABASE, LocalEvents],
      useFactory: shopResilienceOptions,
    }),
    ResilienceEndpointsModule.forRoot({
      metrics: true,
      status: { guards: [OperatorGuard], writable: { guards: [OperatorGuard] } },
    }),
    TerminusModule,
  ],
  controllers: [InventoryController, PaymentsController, ProductsController, LoadProbeController, HealthController],
  providers: [
    InventoryClient,
    PaymentsClient,
    PaymentLedger,
    FulfilmentService,
    ExchangeRatesClient,
    RecommendationsClient,
    QuoteService,
    StockPool,
  ],
})
export class AppModule {}
