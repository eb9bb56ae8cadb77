import type { PolicyMetrics } from '../../kernel/telemetry';
import type { RateLimiterPolicy } from './rate-limiter.policy';

/** A rate limiter's series: its permits and waiting callers, read at scrape time. */
export const RATE_LIMITER_METRICS: PolicyMetrics<RateLimiterPolicy, undefined, never> = {
  policy: 'rateLimiter',
  start: () => undefined,
  series: [
    {
      family: {
        name: 'resilience4j_ratelimiter_available_permissions',
        type: 'gauge',
        help: 'The number of available permissions',
        combine: 'sum',
      },
      live: (limiter, _counts, out) => out.sample({ name: limiter.name }, limiter.metrics.availablePermissions),
    },
    {
      family: {
        name: 'resilience4j_ratelimiter_waiting_threads',
        type: 'gauge',
        help: 'The number of waiting threads',
        combine: 'sum',
      },
      live: (limiter, _counts, out) => out.sample({ name: limiter.name }, limiter.metrics.numberOfWaitingThreads),
    },
  ],
};
