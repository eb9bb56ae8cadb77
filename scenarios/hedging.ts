import { Injectable } from '@nestjs/common';
import { currentSignal, Hedge, HedgeConfigInput, ResilienceRegistry, VirtualClock } from '../lib';
import { bootScenario, grouped, mulberry32, percentile, ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * "The Tail at Scale" (docs/scenarios.md, hedging): a dependency whose
 * median answer takes 10 ms, but one call in twenty takes ten times as long.
 * Sending a second copy of a call that has not answered by the 95th
 * percentile, and taking the first answer, cuts the caller's tail for a few
 * percent more calls. Under overload, when half the calls are slow, a hedge
 * at a fixed delay would add half as many calls again; the retry budget
 * holds the extra load to its ratio.
 *
 * Each call's latency is drawn independently from a seeded generator:
 * log-normal around the median (σ 0.25), ten times that for a slow call.
 * A cancelled attempt stops at once (it honours its signal).
 */

/** The knobs of the run. */
export interface HedgingSettings {
  /** Calls per second, evenly spaced. */
  readonly rate: number;
  /** Calls per variant. */
  readonly calls: number;
  /** The dependency's median latency, in ms. */
  readonly medianMs: number;
  /** Share of calls that are slow (10× the median) when healthy. */
  readonly slowShare: number;
  /** Share of calls that are slow under overload. */
  readonly overloadSlowShare: number;
  readonly seed: number;
  /** Write a line on stderr as each row finishes. */
  readonly progress: boolean;
}

/** 500 calls/s, 20,000 calls per variant, 10 ms median, 5% slow; half slow under overload. */
export const HEDGING_DEFAULTS: HedgingSettings = {
  rate: 500,
  calls: 20_000,
  medianMs: 10,
  slowShare: 0.05,
  overloadSlowShare: 0.5,
  seed: 23,
  progress: false,
};

/** One row of the experiment. */
export interface HedgingVariant {
  readonly label: string;
  /** The hedge instance, or none (calls go straight to the dependency). */
  readonly hedge?: HedgeConfigInput;
  /** The dependency is overloaded (half the calls slow). */
  readonly overloaded: boolean;
}

/** A budget large enough never to say no: hedging as if unbounded. */
const UNBOUNDED = { ratio: 1, maxTokens: 1_000_000 };
const TEN_PERCENT = { ratio: 0.1, maxTokens: 10 };

/** Healthy with and without hedging at the p95; overloaded with a fixed delay, unbounded and within a 10% budget. */
export const HEDGING_VARIANTS: readonly HedgingVariant[] = [
  { label: 'healthy, no hedging', overloaded: false },
  { label: 'healthy, hedge at p95', hedge: { delay: 'p95', budget: TEN_PERCENT }, overloaded: false },
  {
    label: 'healthy, hedge at p95, up to 2',
    hedge: { delay: 'p95', maxHedgedAttempts: 2, budget: TEN_PERCENT },
    overloaded: false,
  },
  { label: 'overloaded, no hedging', overloaded: true },
  { label: 'overloaded, hedge at 15 ms, no budget', hedge: { delay: 15, budget: UNBOUNDED }, overloaded: true },
  { label: 'overloaded, hedge at 15 ms, 10% budget', hedge: { delay: 15, budget: TEN_PERCENT }, overloaded: true },
];

@Injectable()
class HedgingRun {
  settings: HedgingSettings = HEDGING_DEFAULTS;
  slowShare = HEDGING_DEFAULTS.slowShare;
  random: () => number = Math.random;
}

/** The dependency: a log-normal latency around the median, ten times it for a slow call; stops when aborted. */
@Injectable()
class Dependency {
  calls = 0;

  constructor(
    private readonly clock: VirtualClock,
    private readonly run: HedgingRun,
  ) {}

  get(): Promise<void> {
    this.calls++;
    const { random, settings } = this.run;
    const slow = random() < this.run.slowShare;
    // Box–Muller: a standard normal from two uniform draws.
    const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const ms = settings.medianMs * Math.exp(0.25 * normal) * (slow ? 10 : 1);
    const signal = currentSignal();
    return new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(resolve, ms);
      signal?.addEventListener(
        'abort',
        () => {
          this.clock.clearTimeout(timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
}

@Injectable()
class Caller {
  constructor(private readonly dependency: Dependency) {}

  @Hedge('dependency')
  async hedged(): Promise<void> {
    return this.dependency.get();
  }

  async plain(): Promise<void> {
    return this.dependency.get();
  }
}

/** What one variant measured. */
export interface HedgingRow {
  readonly label: string;
  readonly calls: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  /** Calls the dependency received beyond one per caller's call, in % of the caller's calls. */
  readonly extraLoadPercent: number;
  readonly hedged: number;
  readonly budgetDenied: number;
  /** The hedge delay in force at the end, in ms (`undefined` without hedging). */
  readonly delayMs?: number;
  /** Caller latencies, sorted. */
  readonly latencies: readonly number[];
}

/** Every variant. */
export interface HedgingResult {
  readonly settings: HedgingSettings;
  readonly rows: readonly HedgingRow[];
}

/** Runs one variant on a fresh app and clock. */
export async function runHedgingVariant(
  variant: HedgingVariant,
  settings: HedgingSettings = HEDGING_DEFAULTS,
): Promise<HedgingRow> {
  const { moduleRef, clock } = await bootScenario([HedgingRun, Dependency, Caller], {
    hedging: { instances: { dependency: { safe: true, ...variant.hedge } } },
  });
  try {
    const run = moduleRef.get(HedgingRun);
    run.settings = settings;
    run.slowShare = variant.overloaded ? settings.overloadSlowShare : settings.slowShare;
    run.random = mulberry32(settings.seed);
    const caller = moduleRef.get(Caller);
    const interval = 1000 / settings.rate;
    const latencies: number[] = [];
    let outstanding = 0;
    for (let i = 0; i < settings.calls; i++) {
      const started = clock.now();
      outstanding++;
      void (variant.hedge === undefined ? caller.plain() : caller.hedged()).then(() => {
        latencies.push(clock.now() - started);
        outstanding--;
      });
      await clock.advance(interval);
    }
    while (outstanding > 0) await clock.advance(100);
    if (settings.progress) process.stderr.write(`  ${variant.label}: ${grouped(settings.calls)} calls done\n`);
    latencies.sort((a, b) => a - b);
    const hedge = moduleRef.get(ResilienceRegistry).hedges[0];
    const metrics = variant.hedge === undefined ? undefined : hedge.metrics;
    return {
      label: variant.label,
      calls: settings.calls,
      p50Ms: percentile(latencies, 50),
      p95Ms: percentile(latencies, 95),
      p99Ms: percentile(latencies, 99),
      p999Ms: percentile(latencies, 99.9),
      extraLoadPercent: ((moduleRef.get(Dependency).calls - settings.calls) / settings.calls) * 100,
      hedged: metrics?.hedged ?? 0,
      budgetDenied: metrics?.budgetDenied ?? 0,
      delayMs: variant.hedge === undefined ? undefined : hedge.currentDelay,
      latencies,
    };
  } finally {
    await moduleRef.close();
  }
}

/** Runs every variant. */
export async function runHedging(
  settings: Partial<HedgingSettings> = {},
  variants: readonly HedgingVariant[] = HEDGING_VARIANTS,
): Promise<HedgingResult> {
  const s = { ...HEDGING_DEFAULTS, ...settings };
  const rows: HedgingRow[] = [];
  for (const variant of variants) rows.push(await runHedgingVariant(variant, s));
  return { settings: s, rows };
}

const ms = (n: number): string => `${n.toFixed(1)} ms`;

/** The printed table. */
export function hedgingTable(r: HedgingResult): string {
  const s = r.settings;
  return [
    `hedging: ${grouped(s.calls)} calls per row at ${s.rate}/s to a dependency with a ${s.medianMs} ms median; ${s.slowShare * 100}% of calls take 10x as long`,
    `(${s.overloadSlowShare * 100}% when overloaded); @Hedge with the delay shown; latencies of the caller, extra load = calls beyond one per call`,
    table(
      ['', 'p50', 'p95', 'p99', 'p99.9', 'extra load', 'hedges', 'budget denied', 'delay at end'],
      r.rows.map((row) => [
        row.label,
        ms(row.p50Ms),
        ms(row.p95Ms),
        ms(row.p99Ms),
        ms(row.p999Ms),
        `${row.extraLoadPercent.toFixed(1)} %`,
        grouped(row.hedged),
        grouped(row.budgetDenied),
        row.delayMs === undefined ? '—' : ms(row.delayMs),
      ]),
    ),
    'reference (Dean & Barroso, "The Tail at Scale", CACM 2013): a hedge held until the 95th-percentile latency cuts the tail',
    'for about 5% more requests; the 10% budget lets hedges add at most a tenth of the calls (plus the half-full start of 5 tokens).',
  ].join('\n');
}

/** Share of the caller's calls slower than x, per row. */
export function hedgingChart(r: HedgingResult): string {
  const rows = r.rows.filter((row) => !row.label.startsWith('overloaded'));
  const steps = Array.from({ length: 101 }, (_, i) => i * 2);
  return lineChart({
    title: 'hedging: share of calls slower than x (healthy dependency, 5% slow tail)',
    xLabel: 'caller latency x (ms)',
    yLabel: 'calls slower than x (%)',
    yMax: 6,
    series: rows.map((row) => ({
      label: `${row.label}: p99 ${ms(row.p99Ms)}, p99.9 ${ms(row.p999Ms)}, +${row.extraLoadPercent.toFixed(1)}% load`,
      points: steps.map((x) => [x, (slowerThan(row.latencies, x) / row.latencies.length) * 100] as const),
    })),
    lines: [
      { y: 1, label: 'p99' },
      { y: 0.1, label: 'p99.9' },
    ],
  });
}

/** How many of the sorted `values` exceed `x`. */
function slowerThan(values: readonly number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return values.length - lo;
}

/** The scenario as the CLI runs it. */
export async function hedging(): Promise<ScenarioReport> {
  const result = await runHedging({ progress: true });
  return { table: hedgingTable(result), svg: hedgingChart(result) };
}
