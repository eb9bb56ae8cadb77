import { DynamicModule, Logger, Module } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { ResilienceModuleOptions } from './config/module-options';
import { DeadlineInterceptor } from './deadline.interceptor';
import { IdempotencyStore } from './idempotency/idempotency-store';
import { IdempotencyRegistry } from './idempotency/idempotency.registry';
import { OBSERVABILITY_PROVIDERS } from './observability/observability.providers';
import { ResilienceExplorer } from './resilience.explorer';
import {
  RESILIENCE_ASYNC_OPTIONS_TYPE,
  RESILIENCE_MODULE_OPTIONS,
  ResilienceConfigurableModule,
} from './resilience.module-definition';
import { ResilienceRegistry } from './resilience.registry';

/**
 * The resilience module: named policy instances from options, decorators
 * wired at bootstrap, and the request deadline scope. Global by default.
 *
 * @example
 * ```ts
 * @Module({ imports: [ResilienceModule.forRoot({ retry: { instances: { inventory: { maxAttempts: 4 } } } })] })
 * export class AppModule {}
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: ResilienceRegistry,
      inject: [RESILIENCE_MODULE_OPTIONS],
      useFactory: (options: ResilienceModuleOptions) => {
        const logger = new Logger('ResilienceModule');
        return new ResilienceRegistry(options, (message) => logger.warn(message));
      },
    },
    {
      provide: IdempotencyRegistry,
      inject: [ResilienceRegistry],
      useFactory: (registry: ResilienceRegistry) => new IdempotencyRegistry(registry),
    },
    { provide: IdempotencyStore, inject: [IdempotencyRegistry], useFactory: (idempotency: IdempotencyRegistry) => idempotency.store },
    ResilienceExplorer,
    { provide: APP_INTERCEPTOR, useClass: DeadlineInterceptor },
    ...OBSERVABILITY_PROVIDERS,
  ],
  // The idempotency interceptor is created in each controller's module and needs the registry from there.
  exports: [ResilienceRegistry, IdempotencyRegistry, IdempotencyStore, ...OBSERVABILITY_PROVIDERS],
})
export class ResilienceModule extends ResilienceConfigurableModule {
  /** Registers the module with static options (all optional). */
  static forRoot(options: ResilienceModuleOptions & { isGlobal?: boolean } = {}): DynamicModule {
    return super.forRoot(options);
  }

  /** Registers the module with options from a factory, e.g. `ConfigService`. */
  static forRootAsync(options: typeof RESILIENCE_ASYNC_OPTIONS_TYPE): DynamicModule {
    return super.forRootAsync(options);
  }
}
