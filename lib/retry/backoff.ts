import { RetryConfig } from './retry.config';

/**
 * The wait before the retry that follows attempt `attempt` (1-based),
 * before any `Retry-After`: Resilience4j's fixed or exponential interval,
 * capped, then spread by the configured jitter or randomized wait.
 * `previous` is the last wait taken (decorrelated jitter grows from it).
 */
export function backoffDelay(config: RetryConfig, attempt: number, previous: number, random: () => number): number {
  const base = config.waitDuration;
  const cap = config.exponentialMaxWaitDuration;
  const bound = Math.min(
    cap,
    config.enableExponentialBackoff ? base * config.exponentialBackoffMultiplier ** (attempt - 1) : base,
  );
  if (config.enableRandomizedWait) {
    const spread = bound * config.randomizedWaitFactor;
    return bound - spread + random() * 2 * spread;
  }
  switch (config.jitter) {
    case 'none':
      return bound;
    case 'full':
      return random() * bound;
    case 'equal':
      return bound / 2 + (random() * bound) / 2;
    case 'decorrelated': {
      const upper = Math.max(base, previous * 3);
      return Math.min(cap, base + random() * (upper - base));
    }
  }
}
