import { SetMetadata } from '@nestjs/common';

/** The load-shedding classes, from the last shed to the first. */
export const PRIORITY_LEVELS = ['critical', 'high', 'normal', 'low'] as const;

/** A request's load-shedding class. */
export type PriorityLevel = (typeof PRIORITY_LEVELS)[number];

/** The class of a request that names none. */
export const DEFAULT_PRIORITY: PriorityLevel = 'normal';

/** Metadata key under which `@Priority` records a route's class. */
export const PRIORITY_METADATA = 'resilience4nest:priority';

/** Whether `value` names a load-shedding class. */
export function isPriorityLevel(value: unknown): value is PriorityLevel {
  return typeof value === 'string' && (PRIORITY_LEVELS as readonly string[]).includes(value);
}

/**
 * The load-shedding class of a controller's routes or of one route: under
 * overload, lower classes give up their share of the concurrency limit first
 * and `critical` is shed last (module option `loadShedding.priorities`).
 * A route's own `@Priority` wins over its controller's; undecorated routes are `normal`.
 *
 * @example
 * ```ts
 * @Post('payments')
 * @Priority('critical')
 * pay(@Body() body: PaymentDto) { ... }
 * ```
 * @throws TypeError when `level` is not one of `critical`, `high`, `normal`, `low`
 */
export function Priority(level: PriorityLevel): ClassDecorator & MethodDecorator {
  if (!isPriorityLevel(level)) {
    throw new TypeError(
      `resilience4nest: @Priority(${JSON.stringify(level)}) must be one of ${PRIORITY_LEVELS.map((l) => `'${l}'`).join(', ')}`,
    );
  }
  return SetMetadata(PRIORITY_METADATA, level);
}
