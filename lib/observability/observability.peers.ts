import type { HealthIndicatorService } from '@nestjs/terminus';
import type { OptionalPeer } from '../kernel/optional-peer';
import type { MetricsRegistry } from './observability.options';

/** prom-client: its default registry, when the application gives none. */
export const PROM_CLIENT: OptionalPeer<{ register: MetricsRegistry }> = {
  name: 'prom-client',
  // Loaded on first use, never imported: an absent optional peer fails only the feature that needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('prom-client'),
  explicitly: 'give your own registry: ResilienceModule.forRoot({ metrics: { registry } }) with a prom-client Registry',
};

/** @nestjs/terminus: the health indicator's result builder. */
export const TERMINUS: OptionalPeer<{ HealthIndicatorService: new () => HealthIndicatorService }> = {
  name: '@nestjs/terminus',
  // Loaded on first use, never imported: an absent optional peer fails only the feature that needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('@nestjs/terminus'),
};
