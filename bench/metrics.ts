import { DynamicModule, INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Registry } from 'prom-client';
import { VirtualClock } from '../lib/kernel/clock';
import {
  ResilienceEndpointsModule,
  ResilienceMetricsBinding,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
} from '../lib';
import { DEFAULT_MEASURE, Measurement, measure, MeasureOptions } from './measure';
import { ns, printHeading, printTable, spread, times, verdict } from './report';
import { BenchSection } from './section';
import { BENCH_OPTIONS, BenchService } from './subjects';

const ADDED_NS_TARGET = 500;
const SCRAPE_INSTANCES = 1_000;
const SCRAPES = 31;
const HEADLINE_MEASURE: MeasureOptions = { ...DEFAULT_MEASURE, rounds: 21 };

@Module({})
class MetricsBenchModule {
  /** The bench provider under `ResilienceModule` with BENCH_OPTIONS plus `options`. */
  static with(options: ResilienceModuleOptions, imports: DynamicModule[] = []): DynamicModule {
    return {
      module: MetricsBenchModule,
      imports: [ResilienceModule.forRoot({ ...BENCH_OPTIONS, ...options }), ...imports],
      providers: [BenchService],
    };
  }
}

async function boot(module: DynamicModule): Promise<{ app: INestApplicationContext; service: BenchService }> {
  const app = await NestFactory.createApplicationContext(module, { logger: false });
  return { app, service: app.get(BenchService) };
}

/**
 * What binding the metrics adds to a call on the happy
 * path, as the same decorated methods timed in an application with metrics
 * off and one with metrics on (and one that also keeps the status
 * endpoints' event buffers). The layers that record per call (the breaker's
 * duration histogram, the time limiter's outcome counts, the fallback
 * method's call count) are also timed alone. Then the cost of one scrape.
 */
export const metrics: BenchSection = {
  name: 'metrics',
  summary: 'ns per call that Prometheus metrics add to the full stack; ms per scrape of 1,000 instances per policy',
  async run() {
    const off = await boot(MetricsBenchModule.with({ metrics: false }));
    const on = await boot(MetricsBenchModule.with({ metrics: { registry: new Registry() } }));
    const journal = await boot(
      MetricsBenchModule.with({ metrics: { registry: new Registry() } }, [
        ResilienceEndpointsModule.forRoot({ status: { public: true } }),
      ]),
    );
    let results: Measurement[];
    try {
      // The headline pair gets more rounds: the difference sought is small beside the round-to-round noise.
      const headline = await measure(
        [
          { label: 'bare async method', call: () => off.service.bare(1), expect: 2 },
          { label: 'full stack, metrics off', call: () => off.service.fullStack(1), expect: 2 },
          { label: 'full stack, metrics on', call: () => on.service.fullStack(1), expect: 2 },
          {
            label: 'full stack, metrics on + status event buffers',
            call: () => journal.service.fullStack(1),
            expect: 2,
          },
        ],
        HEADLINE_MEASURE,
      );
      const layers = await measure([
        { label: '@CircuitBreaker, metrics off', call: () => off.service.breakerOnly(1), expect: 2 },
        { label: '@CircuitBreaker, metrics on', call: () => on.service.breakerOnly(1), expect: 2 },
        { label: '@Timeout, metrics off', call: () => off.service.timeoutOnly(1), expect: 2 },
        { label: '@Timeout, metrics on', call: () => on.service.timeoutOnly(1), expect: 2 },
        { label: '@Fallback, metrics off', call: () => off.service.fallbackOnly(1), expect: 2 },
        { label: '@Fallback, metrics on', call: () => on.service.fallbackOnly(1), expect: 2 },
      ]);
      results = [...headline, ...layers];
      for (const { service } of [off, on, journal]) {
        if (service.fallbacks > 0) throw new Error(`a fallback ran ${service.fallbacks} times on the happy path`);
      }
    } finally {
      await Promise.all([off.app.close(), on.app.close(), journal.app.close()]);
    }

    const get = (label: string): Measurement => results.find((m) => m.label === label)!;
    const base = get('bare async method');
    printHeading('What metrics add per call (happy path)');
    const pairs: Array<[string, string]> = [
      ['full stack, metrics off', 'full stack, metrics on'],
      ['full stack, metrics off', 'full stack, metrics on + status event buffers'],
      ['@CircuitBreaker, metrics off', '@CircuitBreaker, metrics on'],
      ['@Timeout, metrics off', '@Timeout, metrics on'],
      ['@Fallback, metrics off', '@Fallback, metrics on'],
    ];
    printTable(
      [
        { heading: 'path', align: 'left' },
        { heading: 'ns/call' },
        { heading: 'vs bare' },
        { heading: 'added by metrics, ns' },
        { heading: 'spread' },
      ],
      [
        [base.label, ns(base.nsPerCall), '1.00×', '—', spread(base.spread)],
        ...pairs.flatMap(([a, b], i) => [
          ...(i > 0 && a === pairs[i - 1][0]
            ? []
            : [[a, ns(get(a).nsPerCall), times(get(a).nsPerCall / base.nsPerCall), '—', spread(get(a).spread)]]),
          [
            b,
            ns(get(b).nsPerCall),
            times(get(b).nsPerCall / base.nsPerCall),
            ns(get(b).nsPerCall - get(a).nsPerCall),
            spread(get(b).spread),
          ],
        ]),
      ],
    );
    const added = get('full stack, metrics on').nsPerCall - get('full stack, metrics off').nsPerCall;
    console.log('');
    console.log(
      verdict(
        `metrics add ≤ ${ADDED_NS_TARGET} ns per call to the full stack`,
        `${ns(added)} ns`,
        added <= ADDED_NS_TARGET,
      ),
    );
    console.log('');
    console.log(
      `Same provider and options in three application contexts in one process (metrics: false; metrics on with its own prom-client ` +
        `registry; the same plus ResilienceEndpointsModule status event buffers of 100). Median of ${base.rounds.length} interleaved rounds ` +
        `(layers alone: ${get('@Fallback, metrics on').rounds.length}). ` +
        `Event buffers are opt-in and shown for their cost only.`,
    );

    await scrapeCost();
  },
};

/** ms per `registry.metrics()` with SCRAPE_INSTANCES instances of each policy bound. */
async function scrapeCost(): Promise<void> {
  const registry = new ResilienceRegistry({ clock: new VirtualClock(), maxUndeclaredInstances: SCRAPE_INSTANCES });
  for (let i = 0; i < SCRAPE_INSTANCES; i++) {
    registry.circuitBreaker(`cb-${i}`);
    registry.retry(`retry-${i}`);
    registry.bulkhead(`bulkhead-${i}`);
    registry.timeLimiter(`limiter-${i}`);
  }
  const promRegistry = new Registry();
  const binding = new ResilienceMetricsBinding(registry, { registry: promRegistry });
  const durations: number[] = [];
  let bytes = 0;
  try {
    for (let i = 0; i < SCRAPES; i++) {
      const start = process.hrtime.bigint();
      bytes = (await promRegistry.metrics()).length;
      durations.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  } finally {
    binding.close();
    registry.dispose();
  }
  durations.sort((a, b) => a - b);
  printHeading('Cost of one scrape');
  printTable(
    [
      { heading: 'instances bound', align: 'left' },
      { heading: 'ms per scrape (median)' },
      { heading: 'fastest' },
      { heading: 'slowest' },
      { heading: 'exposition size' },
    ],
    [
      [
        `${SCRAPE_INSTANCES.toLocaleString('en-US')} each of breaker, retry, bulkhead, time limiter`,
        durations[durations.length >> 1].toFixed(1),
        durations[0].toFixed(1),
        durations[durations.length - 1].toFixed(1),
        `${(bytes / 1024 / 1024).toFixed(1)} MiB`,
      ],
    ],
  );
  console.log('');
  console.log(`Paid by the scraper, once per scrape (${SCRAPES} scrapes in a row), never by a call.`);
}
