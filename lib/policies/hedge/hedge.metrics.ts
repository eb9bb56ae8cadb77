import type { MetricWriter, PolicyMetrics } from '../../kernel/telemetry';
import type { HedgePolicy } from './hedge.policy';

const KINDS = ['hedged', 'winner', 'cancelled'];

/** A hedge's attempts by kind, in the order of `KINDS`. */
type HedgeCounts = [number, number, number];

function counts(hedge: HedgePolicy): HedgeCounts {
  const m = hedge.metrics;
  return [m.hedged, m.winner, m.cancelled];
}

function writeCalls(name: string, counts: readonly number[], out: MetricWriter): void {
  for (let i = 0; i < KINDS.length; i++) out.sample({ name, kind: KINDS[i] }, counts[i]);
}

/**
 * A hedge's series: its own counters, read at scrape time; those of an
 * evicted key (or undeclared name) are kept under its name.
 */
export const HEDGE_METRICS: PolicyMetrics<HedgePolicy, undefined, HedgeCounts> = {
  policy: 'hedge',
  start: () => undefined,
  retire: {
    empty: () => [0, 0, 0],
    add(into, hedge) {
      const own = counts(hedge);
      for (let i = 0; i < own.length; i++) into[i] += own[i];
    },
  },
  series: [
    {
      family: {
        name: 'resilience4nest_hedge_calls_total',
        type: 'counter',
        help: 'Hedged attempts started, calls a hedge answered, and attempts cancelled because another answered first',
        combine: 'sum',
      },
      live: (hedge, _counts, out) => writeCalls(hedge.name, counts(hedge), out),
      retired: (name, counts, out) => writeCalls(name, counts, out),
    },
  ],
};
