import { Controller, Get, Res, Type } from '@nestjs/common';
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
  class ResilienceMetricsController {
    constructor(readonly metrics: ResilienceMetrics) {}

    @Get()
    async scrape(@Res({ passthrough: true }) response: HeaderSetter): Promise<string> {
      const registry = this.metrics.requireRegistry('the /metrics endpoint of ResilienceEndpointsModule');
      response.header('Content-Type', registry.contentType);
      return registry.metrics();
    }
  }
  return ResilienceMetricsController;
}
