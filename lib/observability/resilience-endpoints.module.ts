import { DynamicModule, Module, ModuleMetadata, Provider, Type } from '@nestjs/common';
import { createMetricsController } from './metrics.controller';
import { readEndpointsOptions, ResilienceEndpointsOptions } from './observability.options';
import { RESILIENCE_STATUS_OPTIONS, ResilienceStatus } from './resilience-status';
import { createStatusAdminController, createStatusController } from './status.controller';
import { createOutboxAdminController, createOutboxStatusController } from './outbox-observability';

/**
 * Opt-in HTTP endpoints over the (global) `ResilienceModule`: `/metrics` in
 * the Prometheus text format, and status endpoints in the manner of Spring
 * Boot Actuator's `circuitbreakers` and `circuitbreakerevents`. The status
 * routes need `status.guards`, or `status.public: true` said on purpose;
 * routes that change state exist only when `status.writable` names their
 * guards.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     ResilienceModule.forRoot(options),
 *     ResilienceEndpointsModule.forRoot({ metrics: true, status: { path: 'ops/resilience', guards: [AdminGuard], writable: { guards: [AdminGuard] } } }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class ResilienceEndpointsModule {
  /**
   * The endpoints module serving what `options` turns on.
   *
   * @param options - which endpoints to serve; all are off by default
   * @param imports - modules whose providers the given guard classes need
   * @throws Error naming the key and value when an option is invalid
   */
  static forRoot(options: ResilienceEndpointsOptions = {}, imports: ModuleMetadata['imports'] = []): DynamicModule {
    const resolved = readEndpointsOptions(options);
    const controllers: Type<unknown>[] = [];
    const providers: Provider[] = [];
    if (resolved.metrics !== undefined) controllers.push(createMetricsController(resolved.metrics.path));
    const status = resolved.status;
    if (status !== undefined) {
      providers.push({ provide: RESILIENCE_STATUS_OPTIONS, useValue: status }, ResilienceStatus);
      // Before the generic `:resource` routes, so `/outbox` is not taken for a policy name.
      controllers.push(createOutboxStatusController(status.path, status.guards));
      controllers.push(createStatusController(status.path, status.guards));
      if (status.writableGuards !== undefined) {
        controllers.push(createStatusAdminController(status.path, [...status.guards, ...status.writableGuards]));
        controllers.push(createOutboxAdminController(status.path, [...status.guards, ...status.writableGuards]));
      }
    }
    return { module: ResilienceEndpointsModule, imports, controllers, providers };
  }
}
