import {
  DynamicModule,
  Logger,
  MiddlewareConsumer,
  Module,
  NestModule,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import { NO_ASYNC_OPTIONS } from './config/config.messages';
import { ResilienceModuleOptions } from './resilience.options';
import { DeadlineInterceptor } from './deadline.interceptor';
import { IdempotencyStore } from './idempotency/idempotency-store';
import { IdempotencyRegistry } from './idempotency/idempotency.registry';
import { nodeEventLoopDelayProbe } from './load-shedding/event-loop-delay';
import { LoadShedder } from './load-shedding/load-shedder';
import { loadSheddingDoor } from './load-shedding/load-shedding.door';
import { readLoadSheddingOptions } from './load-shedding/load-shedding.options';
import { DEFAULT_PRIORITY } from './load-shedding/priority.decorator';
import { routePriorities } from './load-shedding/route-priorities';
import { OBSERVABILITY_PROVIDERS } from './observability/observability.providers';
import { ResilienceExplorer } from './resilience.explorer';
import { MethodFallbacks } from './method-fallbacks';
import {
  ResilienceModuleAsyncOptions,
  RESILIENCE_MODULE_OPTIONS,
  ResilienceConfigurableModule,
} from './resilience.module-definition';
import { ResilienceRegistry } from './resilience.registry';
import { FaultInjector } from './fault-injection/fault-injector';

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
      useFactory: (options: ResilienceModuleOptions | undefined) => {
        // Only a forRootAsync factory can give no options; it usually means a config lookup found nothing.
        if (options === undefined || options === null) throw new Error(NO_ASYNC_OPTIONS(options));
        const logger = new Logger('ResilienceModule');
        return new ResilienceRegistry(options, (message) => logger.warn(message));
      },
    },
    {
      provide: IdempotencyRegistry,
      inject: [ResilienceRegistry],
      useFactory: (registry: ResilienceRegistry) => new IdempotencyRegistry(registry),
    },
    {
      provide: IdempotencyStore,
      inject: [IdempotencyRegistry],
      useFactory: (idempotency: IdempotencyRegistry) => idempotency.store,
    },
    {
      provide: LoadShedder,
      inject: [ResilienceRegistry],
      useFactory: (registry: ResilienceRegistry) => {
        const { clock, random, extras } = registry.options;
        const options = readLoadSheddingOptions(extras.loadShedding);
        return new LoadShedder(options, clock, random, options.eventLoopDelay && nodeEventLoopDelayProbe());
      },
    },
    {
      provide: FaultInjector,
      inject: [ResilienceRegistry],
      useFactory: (registry: ResilienceRegistry) => registry.faults,
    },
    MethodFallbacks,
    ResilienceExplorer,
    { provide: APP_INTERCEPTOR, useClass: DeadlineInterceptor },
    ...OBSERVABILITY_PROVIDERS,
  ],
  // The idempotency interceptor is created in each controller's module and needs the registry from there.
  exports: [
    ResilienceRegistry,
    IdempotencyRegistry,
    IdempotencyStore,
    LoadShedder,
    FaultInjector,
    ...OBSERVABILITY_PROVIDERS,
  ],
})
export class ResilienceModule
  extends ResilienceConfigurableModule
  implements NestModule, OnApplicationBootstrap, OnModuleDestroy
{
  constructor(
    private readonly registry: ResilienceRegistry,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly shedder: LoadShedder,
  ) {
    super();
  }

  /** With `loadShedding` set, puts the load shedder's door in front of every route, before guards, pipes and interceptors. */
  configure(consumer: MiddlewareConsumer): void {
    const shedder = this.shedder;
    if (this.registry.options.extras.loadShedding === undefined) return;
    const header = this.registry.options.deadline.header;
    const special = routePriorities(this.discovery, this.scanner);
    for (const [level, routes] of special)
      consumer.apply(loadSheddingDoor(shedder, level, header)).forRoutes(...routes);
    consumer
      .apply(loadSheddingDoor(shedder, DEFAULT_PRIORITY, header))
      .exclude(...[...special.values()].flat())
      .forRoutes('*');
  }

  /** Starts the event-loop delay sampler. */
  onApplicationBootstrap(): void {
    this.shedder.start();
  }

  /** Stops the event-loop delay sampler. */
  onModuleDestroy(): void {
    this.shedder.stop();
  }

  /** Registers the module with static options (all optional). */
  static forRoot(options: ResilienceModuleOptions & { isGlobal?: boolean } = {}): DynamicModule {
    return super.forRoot(options);
  }

  /** Registers the module with options from a factory, e.g. `ConfigService`. */
  static forRootAsync(options: ResilienceModuleAsyncOptions): DynamicModule {
    return super.forRootAsync(options);
  }
}
