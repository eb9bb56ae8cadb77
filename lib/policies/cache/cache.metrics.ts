import type { PolicyMetrics } from '../../kernel/telemetry';
import type { CachePolicy } from './cache.policy';

const RESULTS = ['hit', 'miss', 'stale', 'coalesced'] as const;

/** A cache's series: its calls by how they were answered, read from its own counters at scrape time. */
export const CACHE_METRICS: PolicyMetrics<CachePolicy, undefined, never> = {
  policy: 'cache',
  start: () => undefined,
  series: [
    {
      family: {
        name: 'resilience4nest_cache_calls_total',
        type: 'counter',
        help: 'Calls through a cache, by how they were answered: hit (stored, not called), miss (called), stale (the last known good after a failure), coalesced (shared a concurrent call)',
        combine: 'sum',
      },
      live(cache, _counts, out) {
        const m = cache.metrics;
        for (const result of RESULTS) out.sample({ name: cache.name, result }, m[result]);
      },
    },
  ],
};
