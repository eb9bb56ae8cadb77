import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { ResilienceModule, ResilienceModuleOptions } from 'resilience4nest';
import { loadResilienceYaml } from './config/load-config';
import { DownstreamModule } from './downstream/downstream.module';
import { InventoryClient } from './inventory/inventory.client';
import { InventoryController } from './inventory/inventory.controller';
import { LoadProbeController, QuoteService } from './load-probe/load-probe.controller';
import { PaymentsClient } from './payments/payments.client';
import { PaymentsController } from './payments/payments.controller';
import { ProductsController } from './products/products.controller';
import { ExchangeRatesClient } from './rates/exchange-rates.client';
import { RecommendationsClient } from './recommendations/recommendations.client';

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [loadResilienceYaml] }),
    ResilienceModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService) => config.getOrThrow<ResilienceModuleOptions>('resilience4j'),
    }),
    DownstreamModule,
  ],
  controllers: [InventoryController, PaymentsController, ProductsController, LoadProbeController],
  providers: [InventoryClient, PaymentsClient, ExchangeRatesClient, RecommendationsClient, QuoteService],
})
export class AppModule {}
