import type { MetricWriter, PolicyMetrics } from '../../kernel/telemetry';
import type { TimeLimiter } from './time-limiter.policy';

const KINDS = ['successful', 'failed', 'timeout'];

/** A time limiter's counts of successful, failed and timed-out calls. */
type TimeLimiterCounts = [number, number, number];

function writeCalls(name: string, counts: readonly number[], out: MetricWriter): void {
  for (let i = 0; i < KINDS.length; i++) out.sample({ name, kind: KINDS[i] }, counts[i]);
}

/** Its calls since `seen`, its counts when the binding first saw it. */
const since = (limiter: TimeLimiter, seen: TimeLimiterCounts): TimeLimiterCounts => [
  limiter.successfulCalls - seen[0],
  limiter.failedCalls - seen[1],
  limiter.timedOutCalls - seen[2],
];

/** A time limiter's series: the calls it counts, since the binding first saw it. */
export const TIME_LIMITER_METRICS: PolicyMetrics<TimeLimiter, TimeLimiterCounts, TimeLimiterCounts> = {
  policy: 'timeLimiter',
  start: (limiter) => [limiter.successfulCalls, limiter.failedCalls, limiter.timedOutCalls],
  retire: {
    empty: () => [0, 0, 0],
    add(into, limiter, seen) {
      const counts = since(limiter, seen);
      for (let i = 0; i < counts.length; i++) into[i] += counts[i];
    },
  },
  series: [
    {
      family: {
        name: 'resilience4j_timelimiter_calls_total',
        type: 'counter',
        help: 'The number of time-limited calls, by outcome (timeout includes an expired request deadline)',
        combine: 'sum',
      },
      live: (limiter, seen, out) => writeCalls(limiter.name, since(limiter, seen), out),
      retired: (name, counts, out) => writeCalls(name, counts, out),
    },
  ],
};
