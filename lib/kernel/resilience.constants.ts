/** Metadata key holding the policy layers a method's decorators declared. */
export const RESILIENCE_LAYERS = 'resilience4nest:layers';

/** The policies a method pipeline is composed of, in the default order (outermost first). */
export const DEFAULT_ORDER = [
  'idempotent',
  'fallback',
  'retry',
  'circuitBreaker',
  'rateLimiter',
  'timeLimiter',
  'bulkhead',
] as const;

/** One layer of a method pipeline. */
export type PolicyKind = (typeof DEFAULT_ORDER)[number];

/**
 * One layer a decorator may declare: a policy of the order, a hedge (always
 * right inside the retry) or a cache (always right outside the retry).
 */
export type LayerKind = PolicyKind | 'hedge' | 'cache';
