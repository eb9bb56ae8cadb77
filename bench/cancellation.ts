import { CANCELLATION_GROUPS, LABELS } from './cancellation-worker';
import { Measurement, measureInFreshProcess } from './measure';
import { ns, printHeading, printTable, spread } from './report';
import { BenchSection } from './section';

/**
 * What every attempt's signal costs, by how the attempt is made visible:
 * the default (its synchronous part sees the attempt, a signal is made only
 * when asked for), entering an AsyncLocalStorage context per attempt
 * (`attemptContext: 'always'`), and a caller's own signal given to
 * `execute`. Each group runs in a process of its own beside the bare call.
 */
export const cancellation: BenchSection = {
  name: 'cancellation',
  summary:
    "what an attempt's signal costs: made on demand, an AsyncLocalStorage context per attempt, a caller's signal",
  async run() {
    printHeading('Cancellation: what an attempt signal costs (code pipeline with a 1 s time limit)');
    const rows: string[][] = [];
    for (const group of CANCELLATION_GROUPS) {
      console.error(`cancellation: timing '${group}' in a fresh process…`);
      const results = await measureInFreshProcess<Measurement[]>('cancellation-worker.ts', [group]);
      const bare = results.find((r) => r.label === LABELS.bare)!;
      for (const result of results) {
        if (result === bare) continue;
        rows.push([
          result.label,
          ns(result.nsPerCall),
          ns(result.nsPerCall - bare.nsPerCall),
          ns(bare.nsPerCall),
          spread(result.spread),
        ]);
      }
    }
    printTable(
      [
        { heading: 'path', align: 'left' },
        { heading: 'ns/call', align: 'right' },
        { heading: 'added', align: 'right' },
        { heading: 'bare in its process', align: 'right' },
        { heading: 'spread', align: 'right' },
      ],
      rows,
    );
    console.log(
      'Each group in a fresh process; "added" is over the bare call timed beside it. Median of interleaved rounds.',
    );
  },
};
