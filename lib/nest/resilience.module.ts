import {
  DynamicModule,
  Logger,
  MiddlewareConsumer,
  Module,
  NestModule,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, HttpAdapterHost, MetadataScanner, ModuleRef } from '@nestjs/core';
import { NO_ASYNC_OPTIONS, SPRING_DEFAULTS_APPLY } from '../config/config.messages';
import { ResilienceModuleOptions } from '../options/resilience.options';
import { IdempotencyStore } from '../features/idempotency/idempotency-store';
import { InboundDeadline } from './inbound-deadline';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { nodeEventLoopDelayProbe } from '../features/load-shedding/event-loop-delay';
import { LoadShedder } from '../features/load-shedding/load-shedder';
import { loadSheddingDoor } from '../features/load-shedding/load-shedding.door';
import { readLoadSheddingOptions } from '../features/load-shedding/load-shedding.options';
import { DEFAULT_PRIORITY } from '../features/load-shedding/priority.decorator';
import { routePriorities } from '../features/load-shedding/route-priorities';
import { Outbox } from '../features/outbox/outbox';
import { OBSERVABILITY_PROVIDERS } from '../observability/observability.providers';
import { ResilienceExplorer } from './resilience.explorer';
import {
  ResilienceModuleAsyncOptions,
  RESILIENCE_MODULE_OPTIONS,
  ResilienceConfigurableModule,
} from './resilience.module-definition';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { FaultInjector } from '../features/fault-injection/fault-injector';
import { ResilienceReload } from './resilience-reload';

/** The part of a Fastify instance the module uses. */
interface FastifyHooks {
  addHook(name: 'preHandler', hook: InboundDeadline['fastifyHook']): void;
}

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
        const registry = new ResilienceRegistry(options, (message) => logger.warn(message));
        // A reader who skimmed the table of differences learns here that the file's rules are Resilience4j's.
        if (registry.options.binding === 'spring') logger.log(SPRING_DEFAULTS_APPLY);
        return registry;
      },
    },
    {
      provide: IdempotencyRegistry,
      inject: [ResilienceRegistry, ModuleRef],
      useFactory: (registry: ResilienceRegistry, moduleRef: ModuleRef) => new IdempotencyRegistry(registry, moduleRef),
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
    ResilienceReload,
    ResilienceExplorer,
    Outbox,
    ...OBSERVABILITY_PROVIDERS,
  ],
  // The idempotency interceptor is created in each controller's module and needs the registry from there.
  exports: [
    ResilienceRegistry,
    IdempotencyRegistry,
    IdempotencyStore,
    LoadShedder,
    FaultInjector,
    Outbox,
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
    private readonly adapterHost: HttpAdapterHost,
  ) {
    super();
  }

  /**
   * Puts the module's work at the server's door, before guards, pipes and
   * interceptors: with `loadShedding` set, the load shedder's door; then,
   * with `deadline` set, the inbound deadline scope (a middleware on Express,
   * a `preHandler` hook on Fastify, which runs after the body is parsed).
   * Without `deadline` nothing is installed, so routes pay nothing for it.
   */
  configure(consumer: MiddlewareConsumer): void {
    const { extras, deadline, clock } = this.registry.options;
    if (extras.loadShedding !== undefined) this.mountDoor(consumer, deadline.header);
    if (!deadline.inbound) return;
    const adapter = this.adapterHost?.httpAdapter;
    // A microservice-only application has no HTTP adapter, and no inbound HTTP deadline to read.
    if (adapter === undefined || adapter === null) return;
    const logger = new Logger('ResilienceModule');
    const inbound = new InboundDeadline(deadline, clock, (message) => logger.warn(message));
    if (adapter.getType() === 'fastify') adapter.getInstance<FastifyHooks>().addHook('preHandler', inbound.fastifyHook);
    else consumer.apply(inbound.middleware).forRoutes('*');
  }

  private mountDoor(consumer: MiddlewareConsumer, header: string): void {
    const shedder = this.shedder;
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
