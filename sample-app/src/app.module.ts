import { HttpModule } from '@nestjs/axios';
import { Module } from '@nestjs/common';
import { ConditionalModule, ConfigModule, ConfigService } from '@nestjs/config';
import { TerminusModule } from '@nestjs/terminus';
import {
  IdempotencyStore,
  PostgresOutboxStore,
  RedisCacheStore,
  RedisStreamsPublisher,
  ResilienceEndpointsModule,
  ResilienceModule,
  ResilienceModuleOptions,
} from 'resilience4nest';
import { loadResilienceYaml } from './config/load-config';
import { Dependencies } from './downstream/dependencies';
import { DownstreamModule } from './downstream/downstream.module';
import { SHOP_EVENTS, ShopEvents } from './events/shop-events';
import { FulfilmentModule } from './fulfilment/fulfilment.module';
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
import { ExchangeRatesClient, ratesCache } from './rates/exchange-rates.client';
import { RecommendationsClient } from './recommendations/recommendations.client';

/**
 * The shop's resilience options: the YAML's `resilience4j` block, with
 * the rates and recommendations caches (functions, which YAML cannot hold),
 * idempotency keys in the chosen store and, when the shop has a database
 * and Redis, the outbox that adds its events to Redis streams.
 */
export function shopResilienceOptions(
  config: ConfigService,
  dependencies: Dependencies,
  idempotency: { store: IdempotencyStore },
  database: ShopDatabase,
  events: ShopEvents,
): ResilienceModuleOptions {
  const { pool } = database;
  const { redis } = events;
  return {
    ...config.getOrThrow<ResilienceModuleOptions>('resilience4j'),
    cache: {
      instances: {
        // With Redis, a new pod starts with the last known rates (a warm start); without, in memory.
        rates: {
          ...ratesCache(config.get<string | number>('shop.rates.max-staleness') ?? '10m'),
          ...(redis === undefined ? {} : { store: new RedisCacheStore({ client: redis }) }),
        },
        recommendations: { coalesce: true },
      },
    },
    idempotency: {
      store: idempotency.store,
      reconciler: paymentReconciler(dependencies),
    },
    ...(pool === undefined || redis === undefined
      ? {}
      : {
          outbox: { store: new PostgresOutboxStore({ pool }), publisher: RedisStreamsPublisher({ client: redis }) },
        }),
  };
}

/**
 * Whether the shop records payments and publishes `payment.captured`: it
 * needs `DATABASE_URL` (the payments, the outbox, the fulfilment keys) and
 * `REDIS_URL` (the streams).
 */
export function shopPublishesEvents(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.DATABASE_URL && env.REDIS_URL);
}

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [loadResilienceYaml] }),
    DownstreamModule,
    HttpModule,
    OpsModule,
    ResilienceModule.forRootAsync({
      inject: [ConfigService, Dependencies, SHOP_IDEMPOTENCY_STORE, SHOP_DATABASE, SHOP_EVENTS],
      useFactory: shopResilienceOptions,
    }),
    ConditionalModule.registerWhen(FulfilmentModule, shopPublishesEvents, { debug: false }),
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
    ExchangeRatesClient,
    RecommendationsClient,
    QuoteService,
    StockPool,
  ],
})
export class AppModule {}
