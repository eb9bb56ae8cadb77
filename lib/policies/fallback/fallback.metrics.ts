import type { PolicyMetrics } from '../../kernel/telemetry';
import { countReportedCalls, FallbackPolicy } from './fallback.policy';

/** What the binding counts of a fallback policy: its answers by handler, and its method's calls when they are counted. */
interface FallbackCounts {
  readonly byKind: Map<string, number>;
  /** With `own`, the policy's count when the binding first saw it; else the calls counted since. */
  calls: number;
  /** The method's calls are counted (the binding option `countCalls` is given). */
  readonly counted: boolean;
  /** The calls are the policy's own count (see {@link countReportedCalls}), read at scrape time. */
  readonly own: boolean;
}

const add = (byKind: Map<string, number>, kind: string): void => void byKind.set(kind, (byKind.get(kind) ?? 0) + 1);

/** A fallback policy's series: the calls its handlers answered, and the calls of the method it guards. */
export const FALLBACK_METRICS: PolicyMetrics<FallbackPolicy, FallbackCounts, never> = {
  policy: 'fallback',
  start(policy, { into, countCalls }) {
    const own = countCalls === countReportedCalls;
    const counts: FallbackCounts = {
      byKind: new Map(),
      calls: own ? policy.reportedCalls : 0,
      counted: countCalls !== undefined,
      own,
    };
    if (countCalls !== undefined && !own) into.push(countCalls(policy, () => void counts.calls++));
    into.push(policy.onFallback((event) => add(counts.byKind, event.errorClass.name)));
    // A cache inside the method answered with its last known good: a degraded answer of the method too.
    into.push(policy.onStaleAnswer(() => add(counts.byKind, 'stale')));
    return counts;
  },
  series: [
    {
      family: {
        name: 'resilience4nest_fallback_calls_total',
        type: 'counter',
        help: 'Calls answered by a fallback, by the error class whose handler answered',
        combine: 'sum',
      },
      live(policy, { byKind }, out) {
        for (const [kind, count] of byKind) out.sample({ name: policy.name, kind }, count);
      },
    },
    {
      family: {
        name: 'resilience4nest_fallback_guarded_calls_total',
        type: 'counter',
        help: 'Calls of methods with a fallback, however answered (the denominator of the fallback share)',
        combine: 'sum',
      },
      live(policy, { calls, counted, own }, out) {
        if (counted) out.sample({ name: policy.name }, own ? policy.reportedCalls - calls : calls);
      },
    },
  ],
};
