import { Measurement, measure } from './measure';
import { ns, printHeading, printTable, spread, times } from './report';
import { BenchSection } from './section';
import { bootNest } from './subjects';

/**
 * Each decorator alone on the same method, to see where the full stack's
 * cost comes from. Each row includes the trampoline and pipeline call,
 * so the rows add up to more than the full stack. All rows, bare included,
 * run after our time limiter has enabled AsyncLocalStorage (see overhead.ts).
 */
export const layers: BenchSection = {
  name: 'layers',
  summary: 'ns per call of each decorator alone (where the full stack spends its time)',
  async run() {
    const { app, service } = await bootNest();
    let results: Measurement[];
    try {
      results = await measure([
        { label: 'bare async method', call: () => service.bare(1), expect: 2 },
        { label: '@Retry', call: () => service.retryOnly(1), expect: 2 },
        { label: '@Timeout', call: () => service.timeoutOnly(1), expect: 2 },
        { label: '@CircuitBreaker', call: () => service.breakerOnly(1), expect: 2 },
        { label: '@Bulkhead', call: () => service.bulkheadOnly(1), expect: 2 },
        { label: '@Fallback', call: () => service.fallbackOnly(1), expect: 2 },
        { label: '@RateLimiter', call: () => service.rateLimiterOnly(1), expect: 2 },
        { label: 'all five (full stack)', call: () => service.fullStack(1), expect: 2 },
      ]);
      if (service.fallbacks > 0) throw new Error(`a fallback ran ${service.fallbacks} times on the happy path`);
    } finally {
      await app.close();
    }
    const base = results[0];
    printHeading('Each layer alone (happy path)');
    printTable(
      [
        { heading: 'decorators', align: 'left' },
        { heading: 'ns/call' },
        { heading: 'added ns' },
        { heading: 'ratio to bare' },
        { heading: 'spread' },
      ],
      results.map((m) => [
        m.label,
        ns(m.nsPerCall),
        m === base ? '—' : ns(m.nsPerCall - base.nsPerCall),
        times(m.nsPerCall / base.nsPerCall),
        spread(m.spread),
      ]),
    );
    console.log('');
    console.log(
      'All rows in one process after AsyncLocalStorage is enabled (the bare row pays its promise hooks too); median of interleaved rounds.',
    );
  },
};
