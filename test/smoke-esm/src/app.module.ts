import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { TerminusModule } from '@nestjs/terminus';
import { ResilienceModule, ResilienceModuleOptions } from 'resilience4nest';
import { CatalogController } from './catalog.controller.js';
import { CatalogService } from './catalog.service.js';
import { HealthController } from './health.controller.js';
import { Supplier } from './supplier.js';

/** The `resilience4j:` settings, as an application would load them through @nestjs/config. */
export const resilienceSettings = (): { resilience4j: ResilienceModuleOptions } => ({
  resilience4j: {
    retry: { instances: { supplier: { maxAttempts: 3, waitDuration: '10ms' } } },
    timeLimiter: { instances: { supplier: { timeoutDuration: '100ms' } } },
    circuitBreaker: {
      instances: {
        supplier: {
          slidingWindowSize: 2,
          minimumNumberOfCalls: 2,
          waitDurationInOpenState: '1m',
          registerHealthIndicator: true,
          allowHealthIndicatorToFail: true,
        },
      },
    },
    bulkhead: { instances: { supplier: { maxConcurrentCalls: 1, maxWaitDuration: 0 } } },
    idempotency: { principal: () => 'shop' },
  },
});

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [resilienceSettings] }),
    ResilienceModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService) => config.getOrThrow<ResilienceModuleOptions>('resilience4j'),
    }),
    TerminusModule,
  ],
  controllers: [CatalogController, HealthController],
  providers: [CatalogService, Supplier],
})
export class AppModule {}
