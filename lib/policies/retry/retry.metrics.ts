import type { MetricWriter, PolicyMetrics } from '../../kernel/telemetry';
import type { RetryPolicy } from './retry.policy';

const KINDS = ['successful_without_retry', 'successful_with_retry', 'failed_without_retry', 'failed_with_retry'];

/** A retry's calls by kind, then its budget denials, as one array. */
type RetryCounts = [number, number, number, number, number];

function counts(retry: RetryPolicy): RetryCounts {
  const m = retry.metrics;
  return [
    m.successfulCallsWithoutRetry,
    m.successfulCallsWithRetry,
    m.failedCallsWithoutRetry,
    m.failedCallsWithRetry,
    m.budgetDenied,
  ];
}

function writeCalls(name: string, counts: readonly number[], out: MetricWriter): void {
  for (let i = 0; i < KINDS.length; i++) out.sample({ name, kind: KINDS[i] }, counts[i]);
}

/** A retry's series: its own counters, read at scrape time. */
export const RETRY_METRICS: PolicyMetrics<RetryPolicy, undefined, RetryCounts> = {
  policy: 'retry',
  start: () => undefined,
  retire: {
    empty: () => [0, 0, 0, 0, 0],
    add(into, retry) {
      const own = counts(retry);
      for (let i = 0; i < own.length; i++) into[i] += own[i];
    },
  },
  series: [
    {
      family: {
        name: 'resilience4j_retry_calls_total',
        type: 'counter',
        help: 'The number of calls, by whether they succeeded and were retried',
        combine: 'sum',
      },
      live(retry, _counts, out) {
        const m = retry.metrics;
        writeCalls(
          retry.name,
          [
            m.successfulCallsWithoutRetry,
            m.successfulCallsWithRetry,
            m.failedCallsWithoutRetry,
            m.failedCallsWithRetry,
          ],
          out,
        );
      },
      retired: (name, counts, out) => writeCalls(name, counts, out),
    },
    {
      family: {
        name: 'resilience4nest_retry_budget_denied_total',
        type: 'counter',
        help: 'Retries the retry budget denied (the original error propagated)',
        combine: 'sum',
      },
      live: (retry, _counts, out) => out.sample({ name: retry.name }, retry.metrics.budgetDenied),
      retired: (name, counts, out) => out.sample({ name }, counts[4]),
    },
  ],
};
