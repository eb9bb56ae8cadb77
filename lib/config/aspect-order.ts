import type { PolicyKind } from '../kernel/resilience.constants';
import { findKey } from './relaxed-binding';
import { isPlainObject } from './plain-object';

/** The layers Resilience4j's Spring aspects order, with each aspect's default order (Ordered.LOWEST_PRECEDENCE - n). */
const SPRING_DEFAULTS: ReadonlyArray<readonly [PolicyKind, string, number]> = [
  ['retry', 'retryAspectOrder', 2 ** 31 - 1 - 5],
  ['circuitBreaker', 'circuitBreakerAspectOrder', 2 ** 31 - 1 - 4],
  ['rateLimiter', 'rateLimiterAspectOrder', 2 ** 31 - 1 - 3],
  ['timeLimiter', 'timeLimiterAspectOrder', 2 ** 31 - 1 - 2],
  ['bulkhead', 'bulkheadAspectOrder', 2 ** 31 - 1 - 1],
];

/**
 * The layer order that a file's `*-aspect-order` properties give in Spring
 * (a lower order is an outer aspect), as a full module `order` with the
 * other layers where `order` has them; `undefined` when the file sets none
 * or they keep `order`'s relative order of those layers.
 *
 * @param sections - the raw policy sections, by layer
 * @param order - the module's layer order
 */
export function orderFromAspectOrders(
  sections: Partial<Record<PolicyKind, unknown>>,
  order: readonly PolicyKind[],
): PolicyKind[] | undefined {
  let given = false;
  const ranked = SPRING_DEFAULTS.map(([layer, key, fallback], index) => {
    const section = sections[layer];
    const found = isPlainObject(section)
      ? Object.keys(section).find((k) => findKey(k, [key]) !== undefined)
      : undefined;
    const raw = found === undefined ? undefined : Number((section as Record<string, unknown>)[found]);
    if (raw !== undefined && Number.isFinite(raw)) given = true;
    return { layer, rank: raw !== undefined && Number.isFinite(raw) ? raw : fallback, index };
  });
  if (!given) return undefined;
  const spring = ranked.sort((a, b) => a.rank - b.rank || a.index - b.index).map((r) => r.layer);
  const layers = new Set<PolicyKind>(spring);
  const current = order.filter((k) => layers.has(k));
  if (current.every((k, i) => k === spring[i])) return undefined;
  let next = 0;
  return order.map((k) => (layers.has(k) ? spring[next++] : k));
}
