/**
 * Resilience4j's `IntervalFunction` arithmetic, shared by the retry backoff
 * and the circuit breaker's wait in OPEN: whole milliseconds throughout.
 */

/**
 * The exponential interval of attempt `attempt` (1-based): `initial`
 * multiplied `attempt - 1` times, truncated to whole ms at every step
 * (100, 150, 225, 337, 505 for 100 × 1.5), then capped at `max`.
 */
export function exponentialInterval(
  initial: number,
  multiplier: number,
  attempt: number,
  max = Number.POSITIVE_INFINITY,
): number {
  let interval = Math.floor(initial);
  for (let step = 1; step < attempt && interval < max; step++) interval = Math.floor(interval * multiplier);
  return Math.min(interval, max);
}

/**
 * `interval` spread uniformly over whole ms in `interval × [1 − factor, 1 + factor]`,
 * and at least 1 ms, as Resilience4j's randomized intervals.
 */
export function randomizedInterval(interval: number, factor: number, random: () => number): number {
  const delta = interval * factor;
  const min = interval - delta;
  // The extra 1 gives the upper bound the same chance as every other whole ms once truncated.
  return Math.floor(Math.max(1, min + random() * (2 * delta + 1)));
}
