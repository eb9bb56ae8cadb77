import type { PolicyMetrics } from '../../kernel/telemetry';
import type { BulkheadPolicy } from './bulkhead.policy';

/** What the binding counts of a bulkhead: the calls it refused. */
interface BulkheadCounts {
  rejected: number;
}

/** A bulkhead's series (thread-pool bulkheads too): its permits, its queue and the calls it refused. */
export const BULKHEAD_METRICS: PolicyMetrics<BulkheadPolicy, BulkheadCounts, BulkheadCounts> = {
  policy: 'bulkhead',
  start(bulkhead, { into }) {
    const counts = { rejected: 0 };
    into.push(bulkhead.onCallRejected(() => void counts.rejected++));
    return counts;
  },
  retire: {
    empty: () => ({ rejected: 0 }),
    add(into, _bulkhead, counts) {
      into.rejected += counts.rejected;
    },
  },
  series: [
    {
      family: {
        name: 'resilience4j_bulkhead_available_concurrent_calls',
        type: 'gauge',
        help: 'The number of available permissions',
        combine: 'sum',
      },
      live: (bulkhead, _counts, out) => out.sample({ name: bulkhead.name }, bulkhead.metrics.availableConcurrentCalls),
    },
    {
      family: {
        name: 'resilience4j_bulkhead_max_allowed_concurrent_calls',
        type: 'gauge',
        help: 'The maximum number of available permissions',
        combine: 'sum',
      },
      live: (bulkhead, _counts, out) => out.sample({ name: bulkhead.name }, bulkhead.metrics.maxAllowedConcurrentCalls),
    },
    {
      family: {
        name: 'resilience4nest_bulkhead_queue_depth',
        type: 'gauge',
        help: 'Calls waiting for a bulkhead permit',
        combine: 'sum',
      },
      live: (bulkhead, _counts, out) => out.sample({ name: bulkhead.name }, bulkhead.metrics.queueDepth),
    },
    {
      family: {
        name: 'resilience4nest_bulkhead_rejected_total',
        type: 'counter',
        help: 'Calls that left the bulkhead without a permit',
        combine: 'sum',
      },
      live: (bulkhead, counts, out) => out.sample({ name: bulkhead.name }, counts.rejected),
      retired: (name, counts, out) => out.sample({ name }, counts.rejected),
    },
  ],
};
