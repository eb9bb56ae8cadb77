import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { Priority, ResilienceHealthIndicator } from 'resilience4nest';

/** `GET /health`: the breakers that registered a health indicator, and the share of fallback answers. */
@Controller('health')
// Probes must get through while the shop sheds load.
@Priority('critical')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly resilience: ResilienceHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.resilience.check(), () => this.resilience.checkFallbacks()]);
  }
}
