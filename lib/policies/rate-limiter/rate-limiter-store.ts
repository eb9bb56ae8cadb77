/** What a shared rate limiter asks its store for on each acquire. */
export interface RateLimiterStoreRequest {
  /** The instance name; instances of the same name in every process share one limit. */
  readonly name: string;
  /** Permits wanted (0 with `drain`). */
  readonly permits: number;
  /** Permits per period. */
  readonly limitForPeriod: number;
  /** Length of a period, in ms (fractions allowed). */
  readonly limitRefreshPeriodMs: number;
  /** Longest the caller may wait for its permits, in ms; permits are reserved only when the wait fits. */
  readonly timeoutMs: number;
  /** Drain the permits left in the current period instead of acquiring. */
  readonly drain: boolean;
}

/** The store's answer: Resilience4j's `reservePermission` computed on the shared state. */
export interface RateLimiterStoreAnswer {
  /** Whether the permits were reserved (always false for a drain). */
  readonly reserved: boolean;
  /** ms until the permits asked for are free (0: at once), whether or not they were reserved. */
  readonly waitMs: number;
  /** Permits left in the current period after this step (negative while permits of later periods are reserved). */
  readonly availablePermissions: number;
  /** ms until the next period starts. */
  readonly nextPeriodInMs: number;
  /** Permits a drain took away. */
  readonly drained: number;
}

/** What a shared rate limiter gives back: permits an acquire took after the caller had given up on it. */
export interface RateLimiterStoreRelease {
  /** The instance name. */
  readonly name: string;
  /** Permits to give back. */
  readonly permits: number;
  /** Permits per period. */
  readonly limitForPeriod: number;
  /** Length of a period, in ms (fractions allowed). */
  readonly limitRefreshPeriodMs: number;
}

/**
 * Where shared rate limiters (`shared: true`) keep their permits, so that
 * several processes share one limit. Module option `rateLimiterStore`.
 */
export interface RateLimiterStore {
  /** Acquires (or drains) permits in one atomic step. */
  acquire(request: RateLimiterStoreRequest): Promise<RateLimiterStoreAnswer>;
  /**
   * Optional: gives back permits an acquire took although its caller had
   * already given up on it (the answer came after `storeTimeout`), so an
   * acquire stalled in the store is never charged late. Permits are given
   * back only while the period they were taken in lasts, and never past
   * `limitForPeriod`. A store without it keeps such permits charged.
   */
  release?(request: RateLimiterStoreRelease): Promise<void>;
}

/** True when `value` can serve as a {@link RateLimiterStore}. */
export function isRateLimiterStore(value: unknown): value is RateLimiterStore {
  return value !== null && typeof value === 'object' && typeof (value as RateLimiterStore).acquire === 'function';
}
