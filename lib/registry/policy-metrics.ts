import type { PolicyMetrics } from '../kernel/telemetry';
import { BULKHEAD_METRICS } from '../policies/bulkhead/bulkhead.metrics';
import { CACHE_METRICS } from '../policies/cache/cache.metrics';
import { CIRCUIT_BREAKER_METRICS } from '../policies/circuit-breaker/circuit-breaker.metrics';
import { FALLBACK_METRICS } from '../policies/fallback/fallback.metrics';
import { HEDGE_METRICS } from '../policies/hedge/hedge.metrics';
import { RATE_LIMITER_METRICS } from '../policies/rate-limiter/rate-limiter.metrics';
import { RETRY_METRICS } from '../policies/retry/retry.metrics';
import { TIME_LIMITER_METRICS } from '../policies/time-limiter/time-limiter.metrics';

/**
 * The Prometheus series of each kind of policy the registry makes (hedges
 * included, and the fallback policies it tracks), in the order their families are
 * registered. Each is written in its policy's folder.
 */
export const POLICY_METRICS: readonly PolicyMetrics[] = [
  CIRCUIT_BREAKER_METRICS,
  RETRY_METRICS,
  BULKHEAD_METRICS,
  RATE_LIMITER_METRICS,
  TIME_LIMITER_METRICS,
  FALLBACK_METRICS,
  CACHE_METRICS,
  HEDGE_METRICS,
];
