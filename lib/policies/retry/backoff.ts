import { exponentialInterval, randomizedInterval } from '../../kernel/interval-function';
import { RetryConfig } from './retry.config';

/**
 * The wait before the retry that follows attempt `attempt` (1-based),
 * before any `Retry-After`, in whole ms. With `enableRandomizedWait` it is
 * Resilience4j's `IntervalFunction` exactly: the fixed or exponential
 * interval, randomized, then capped by `exponentialMaxWaitDuration` (the cap
 * applies only with exponential backoff). Otherwise the configured jitter
 * spreads the (capped) interval. `previous` is the last wait taken
 * (decorrelated jitter grows from it, bounded by the cap).
 */
export function backoffDelay(config: RetryConfig, attempt: number, previous: number, random: () => number): number {
  const base = config.waitDuration;
  const exponential = config.enableExponentialBackoff;
  if (config.enableRandomizedWait) {
    const interval = exponential
      ? exponentialInterval(base, config.exponentialBackoffMultiplier, attempt)
      : Math.floor(base);
    const randomized = randomizedInterval(interval, config.randomizedWaitFactor, random);
    return exponential ? Math.min(randomized, config.exponentialMaxWaitDuration) : randomized;
  }
  const bound = exponential
    ? exponentialInterval(base, config.exponentialBackoffMultiplier, attempt, config.exponentialMaxWaitDuration)
    : Math.floor(base);
  switch (config.jitter) {
    case 'none':
      return bound;
    case 'full':
      return Math.floor(random() * (bound + 1));
    case 'equal':
      return Math.floor(bound / 2 + random() * (bound / 2 + 1));
    case 'decorrelated': {
      const upper = Math.max(base, previous * 3);
      return Math.min(config.exponentialMaxWaitDuration, Math.floor(base + random() * (upper - base + 1)));
    }
  }
}
