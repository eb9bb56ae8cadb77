import { DurationHistogram, OutcomeHistograms } from '../../kernel/duration-histogram';
import type { MetricWriter, PolicyMetrics } from '../../kernel/telemetry';
import type { CircuitBreakerState } from './circuit-breaker.events';
import type { CircuitBreakerPolicy } from './circuit-breaker.policy';

const STATES: readonly CircuitBreakerState[] = [
  'CLOSED',
  'OPEN',
  'HALF_OPEN',
  'DISABLED',
  'FORCED_OPEN',
  'METRICS_ONLY',
];
// Resilience4j's Micrometer binding labels states with the enum name in lower case.
const STATE_LABELS = STATES.map((s) => s.toLowerCase());
const CALL_KINDS = ['successful', 'failed', 'ignored'] as const;

/** What the binding counts of a breaker: the durations of its recorded calls by outcome, and its refused calls. */
interface BreakerCounts {
  readonly calls: OutcomeHistograms;
  notPermitted: number;
}

const empty = (histogram: () => DurationHistogram): BreakerCounts => ({
  calls: [histogram(), histogram(), histogram()],
  notPermitted: 0,
});

/** A breaker's series, under Resilience4j's Micrometer names and labels. */
export const CIRCUIT_BREAKER_METRICS: PolicyMetrics<CircuitBreakerPolicy, BreakerCounts, BreakerCounts> = {
  policy: 'circuitBreaker',
  start(breaker, { into, histogram }) {
    const counts = empty(histogram);
    into.push(breaker.recordDurationsInto(counts.calls));
    // The breaker's own count restarts with each window; the Prometheus counter must not.
    into.push(breaker.onCallNotPermitted(() => void counts.notPermitted++));
    return counts;
  },
  retire: {
    empty,
    add(into, _breaker, counts) {
      into.notPermitted += counts.notPermitted;
      for (let k = 0; k < CALL_KINDS.length; k++) into.calls[k].addAll(counts.calls[k]);
    },
  },
  series: [
    {
      family: {
        name: 'resilience4j_circuitbreaker_state',
        type: 'gauge',
        help: 'The states of the circuit breaker (1 in the current state, else 0)',
        combine: 'sum',
      },
      live(breaker, _counts, out) {
        const state = breaker.state;
        for (let i = 0; i < STATES.length; i++)
          out.sample({ name: breaker.name, state: STATE_LABELS[i] }, STATES[i] === state ? 1 : 0);
      },
    },
    {
      family: {
        name: 'resilience4j_circuitbreaker_calls_seconds',
        type: 'histogram',
        help: 'Duration of the calls the circuit breaker recorded, by outcome',
        combine: 'sum',
      },
      live: (breaker, counts, out) => writeCalls(breaker.name, counts, out),
      retired: (name, counts, out) => writeCalls(name, counts, out),
    },
    {
      family: {
        name: 'resilience4j_circuitbreaker_not_permitted_calls_total',
        type: 'counter',
        help: 'Total number of not permitted calls',
        combine: 'sum',
      },
      live: (breaker, counts, out) => out.sample({ name: breaker.name, kind: 'not_permitted' }, counts.notPermitted),
      retired: (name, counts, out) => out.sample({ name, kind: 'not_permitted' }, counts.notPermitted),
    },
    {
      family: {
        name: 'resilience4j_circuitbreaker_failure_rate',
        type: 'gauge',
        help: 'The failure rate of the circuit breaker (percent, -1 below minimumNumberOfCalls)',
        combine: 'max',
      },
      live: (breaker, _counts, out) => out.sample({ name: breaker.name }, breaker.metrics.failureRate),
    },
    {
      family: {
        name: 'resilience4j_circuitbreaker_slow_call_rate',
        type: 'gauge',
        help: 'The slow call rate of the circuit breaker (percent, -1 below minimumNumberOfCalls)',
        combine: 'max',
      },
      live: (breaker, _counts, out) => out.sample({ name: breaker.name }, breaker.metrics.slowCallRate),
    },
    {
      family: {
        name: 'resilience4j_circuitbreaker_buffered_calls',
        type: 'gauge',
        help: 'The number of buffered calls stored in the sliding window',
        combine: 'sum',
      },
      live(breaker, _counts, out) {
        const m = breaker.metrics;
        out.sample({ name: breaker.name, kind: 'successful' }, m.numberOfSuccessfulCalls);
        out.sample({ name: breaker.name, kind: 'failed' }, m.numberOfFailedCalls);
      },
    },
    {
      family: {
        name: 'resilience4j_circuitbreaker_slow_calls',
        type: 'gauge',
        help: 'The number of slow calls in the sliding window',
        combine: 'sum',
      },
      live(breaker, _counts, out) {
        const m = breaker.metrics;
        out.sample({ name: breaker.name, kind: 'successful' }, m.numberOfSlowSuccessfulCalls);
        out.sample({ name: breaker.name, kind: 'failed' }, m.numberOfSlowFailedCalls);
      },
    },
  ],
};

function writeCalls(name: string, counts: BreakerCounts, out: MetricWriter): void {
  for (let k = 0; k < CALL_KINDS.length; k++) out.histogram(name, CALL_KINDS[k], counts.calls[k]);
}
