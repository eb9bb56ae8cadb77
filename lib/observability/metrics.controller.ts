import { Controller, Get, Res, Type } from '@nestjs/common';
import { Priority } from '../features/load-shedding/priority.decorator';
import { MetricsRegistry } from './observability.options';
import { ResilienceMetrics } from './resilience-metrics';

/** The part of an Express response or Fastify reply the controller uses. */
interface HeaderSetter {
  header(name: string, value: string): unknown;
}

/**
 * A controller serving the metrics registry (every metric in it, not only
 * ours) at `path` in the Prometheus text format, or OpenMetrics if the
 * registry is set to it.
 */
export function createMetricsController(path: string): Type<unknown> {
  @Controller(path)
  // Operators must see the service when it is shedding load.
  @Priority('critical')
  class ResilienceMetricsController {
    private readonly registry: MetricsRegistry;

    constructor(metrics: ResilienceMetrics) {
      // Checked while the application is created, not at the first scrape.
      this.registry = metrics.requireRegistry("ResilienceEndpointsModule's metrics endpoint");
    }

    @Get()
    async scrape(@Res({ passthrough: true }) response: HeaderSetter): Promise<string> {
      response.header('Content-Type', this.registry.contentType);
      return this.registry.metrics();
    }
  }
  return ResilienceMetricsController;
}
