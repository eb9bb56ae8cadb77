import { lastValueFrom, retry, timeout } from 'rxjs';
import { ResilienceRegistry } from '../lib';
import { measure } from './measure';
import { ns, printHeading, printTable, spread, times, verdict } from './report';
import { BenchSection } from './section';
import { bootNest } from './subjects';

const TARGET_VS_RXJS = 1.5;

const LABELS = {
  bare: 'bare Observable',
  rxjs: 'rxjs timeout + retry operators',
  ours: '@Retry + @Timeout (Observable)',
} as const;

/**
 * Per-subscription cost of a decorated Observable method next to rxjs's own
 * `timeout` + `retry` operators with the same settings (1 s, 3 attempts
 * 500 ms apart) on the same source. Each call builds the Observable and
 * subscribes once, through `lastValueFrom`, on every row alike.
 */
export const observable: BenchSection = {
  name: 'observable',
  summary: `ns per subscription: @Retry + @Timeout on an Observable vs rxjs's timeout + retry (target ≤ ${TARGET_VS_RXJS}×)`,
  async run() {
    const { app, service } = await bootNest();
    let results;
    try {
      results = await measure([
        { label: LABELS.bare, call: () => lastValueFrom(service.bareObservable(1)), expect: 2 },
        {
          label: LABELS.rxjs,
          call: () =>
            lastValueFrom(service.bareObservable(1).pipe(timeout({ each: 1000 }), retry({ count: 2, delay: 500 }))),
          expect: 2,
        },
        { label: LABELS.ours, call: () => lastValueFrom(service.retryTimeoutObservable(1)), expect: 2 },
      ]);
      const retried = app.get(ResilienceRegistry).retry('bench').metrics;
      if (retried.successfulCallsWithRetry + retried.failedCallsWithRetry + retried.failedCallsWithoutRetry > 0) {
        throw new Error(`the decorated Observable left the happy path: ${JSON.stringify(retried)}`);
      }
    } finally {
      await app.close();
    }
    const [bare, rxjs, ours] = results;
    printHeading('Observable — @Retry + @Timeout vs rxjs timeout + retry (happy path)');
    printTable(
      [
        { heading: 'path', align: 'left' },
        { heading: 'ns/subscription' },
        { heading: 'added ns' },
        { heading: 'ratio to rxjs' },
        { heading: 'spread' },
      ],
      results.map((m) => [
        m.label,
        ns(m.nsPerCall),
        m === bare ? '—' : ns(m.nsPerCall - bare.nsPerCall),
        m === bare ? '—' : times(m.nsPerCall / rxjs.nsPerCall),
        spread(m.spread),
      ]),
    );
    const perCall = ours.nsPerCall / rxjs.nsPerCall;
    const added = (ours.nsPerCall - bare.nsPerCall) / (rxjs.nsPerCall - bare.nsPerCall);
    console.log('');
    console.log(
      verdict(`≤ ${TARGET_VS_RXJS}× rxjs's operators (ns per subscription)`, times(perCall), perCall <= TARGET_VS_RXJS),
    );
    console.log(
      `  added over the bare Observable: ${ns(ours.nsPerCall - bare.nsPerCall)} vs ${ns(rxjs.nsPerCall - bare.nsPerCall)} ns (${times(added)})`,
    );
    console.log('');
    console.log(
      [
        `Sequential subscriptions through lastValueFrom to of(x + 1) on a Nest provider; median of ${ours.rounds.length} interleaved rounds.`,
        `Both stacks: 1 s per value, 3 attempts 500 ms apart. Ours also keeps retry metrics and budget rules, runs the`,
        `source in the attempt's deadline scope (AsyncLocalStorage) and calls the decorated method itself.`,
      ].join('\n'),
    );
  },
};
