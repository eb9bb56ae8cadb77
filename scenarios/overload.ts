import { VirtualClock } from '../lib/kernel/clock';
import { LoadShedder } from '../lib/features/load-shedding/load-shedder';
import { LoadSheddingOptions, readLoadSheddingOptions } from '../lib/features/load-shedding/load-shedding.options';
import { PriorityLevel } from '../lib/features/load-shedding/priority.decorator';
import { mulberry32, percentile, ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * Overload: a server of fixed capacity (Little's law: `workers` requests in
 * service at a time, each taking about `serviceMs`, so capacity =
 * workers / serviceMs) offered 1×, 2× and 3× that rate by clients who give
 * up after `deadlineMs`. Without shedding, every request joins the queue and
 * is served in turn, long after its client left: goodput collapses. With
 * the load shedder at the door, the excess is refused at once and what is
 * admitted is served in time, critical requests first to keep their place.
 */

/** The knobs of the overload scenario. */
export interface OverloadSettings {
  readonly workers: number;
  /** Mean service time; each request takes a seeded uniform draw in [0.5, 1.5] × this. */
  readonly serviceMs: number;
  /** Clients give up (and count no goodput) after this long. */
  readonly deadlineMs: number;
  readonly runMs: number;
  /** Offered load as multiples of capacity. */
  readonly loads: readonly number[];
  /** Offered load at which the unloaded p99 is measured. */
  readonly unloadedLoad: number;
  /** Share of each class in the offered traffic. */
  readonly mix: Readonly<Record<PriorityLevel, number>>;
  readonly shedding: Readonly<Record<string, LoadSheddingOptions>>;
  readonly seed: number;
}

const PRIORITIES = { critical: 0, high: 0.1, normal: 0.3, low: 0.5 };

export const OVERLOAD_DEFAULTS: OverloadSettings = {
  workers: 20,
  serviceMs: 100,
  deadlineMs: 1000,
  runMs: 30_000,
  loads: [1, 2, 3],
  unloadedLoad: 0.3,
  mix: { critical: 0.1, high: 0.1, normal: 0.3, low: 0.5 },
  shedding: {
    'fixed cap 30': { maxConcurrentRequests: 30, priorities: PRIORITIES },
    'adaptive (gradient2)': {
      adaptive: { algorithm: 'gradient2', initialLimit: 20, minLimit: 10, maxLimit: 200 },
      priorities: PRIORITIES,
    },
  },
  seed: 7,
};

/** What one run measured. */
export interface OverloadRow {
  readonly policy: string;
  readonly load: number;
  readonly offered: number;
  /** Answers within the client's deadline, per second. */
  readonly goodput: number;
  /** Goodput as a share of capacity, in percent. */
  readonly goodputShare: number;
  readonly refused: number;
  /** p99 latency of admitted requests, in ms. */
  readonly admittedP99: number;
  /** Share of critical requests answered within their deadline, in percent. */
  readonly criticalSuccess: number;
  /** Goodput per second of scenario time. */
  readonly goodputPerSecond: readonly number[];
}

/** Every run of the scenario. */
export interface OverloadResult {
  readonly settings: OverloadSettings;
  readonly capacity: number;
  readonly unloadedP99: number;
  readonly rows: readonly OverloadRow[];
}

const LEVELS: readonly PriorityLevel[] = ['critical', 'high', 'normal', 'low'];

async function simulate(
  settings: OverloadSettings,
  policy: string,
  load: number,
  shedding: LoadSheddingOptions | undefined,
): Promise<OverloadRow> {
  const { workers, serviceMs, deadlineMs, runMs, mix, seed } = settings;
  const clock = new VirtualClock();
  const random = mulberry32(seed);
  const shedder =
    shedding === undefined ? undefined : new LoadShedder(readLoadSheddingOptions(shedding), clock, random);
  const capacity = (workers / serviceMs) * 1000;
  const rate = (capacity * load) / 1000;
  const queue: Array<() => void> = [];
  let free = workers;
  let refused = 0;
  const latencies: number[] = [];
  const good = new Array<number>(Math.ceil(runMs / 1000)).fill(0);
  const sent: Record<PriorityLevel, number> = { critical: 0, high: 0, normal: 0, low: 0 };
  const inTime: Record<PriorityLevel, number> = { critical: 0, high: 0, normal: 0, low: 0 };

  const startNext = (): void => {
    while (free > 0 && queue.length > 0) {
      free--;
      queue.shift()?.();
    }
  };
  const arrive = (level: PriorityLevel): void => {
    sent[level]++;
    const arrivedAt = clock.now();
    const admission = shedder?.tryAdmit(level);
    if (typeof admission === 'string') {
      refused++;
      return;
    }
    queue.push(() => {
      clock.setTimeout(
        () => {
          const latency = clock.now() - arrivedAt;
          latencies.push(latency);
          if (latency <= deadlineMs) {
            inTime[level]++;
            if (arrivedAt < runMs) good[Math.floor(arrivedAt / 1000)]++;
          }
          if (admission !== undefined) shedder?.release(admission, false);
          free++;
          startNext();
        },
        serviceMs * (0.5 + random()),
      );
    });
    startNext();
  };

  // Poisson arrivals, each of a class drawn from the mix.
  for (let t = -Math.log(1 - random()) / rate; t < runMs; t += -Math.log(1 - random()) / rate) {
    let draw = random();
    const level = LEVELS.find((l) => (draw -= mix[l]) < 0) ?? 'low';
    clock.setTimeout(() => arrive(level), t);
  }
  while (await clock.runNext());
  const answeredInTime = LEVELS.reduce((n, l) => n + inTime[l], 0);
  const goodput = answeredInTime / (runMs / 1000);
  return {
    policy,
    load,
    offered: LEVELS.reduce((n, l) => n + sent[l], 0),
    goodput,
    goodputShare: (goodput / capacity) * 100,
    refused,
    admittedP99: percentile(latencies, 99),
    criticalSuccess: sent.critical === 0 ? 100 : (inTime.critical / sent.critical) * 100,
    goodputPerSecond: good,
  };
}

/** Runs every policy at every offered load. */
export async function runOverload(overrides: Partial<OverloadSettings> = {}): Promise<OverloadResult> {
  const settings = { ...OVERLOAD_DEFAULTS, ...overrides };
  const capacity = (settings.workers / settings.serviceMs) * 1000;
  const unloaded = await simulate(settings, 'unloaded', settings.unloadedLoad, undefined);
  const rows: OverloadRow[] = [];
  for (const load of settings.loads) {
    rows.push(await simulate(settings, 'no shedding', load, undefined));
    for (const [policy, options] of Object.entries(settings.shedding))
      rows.push(await simulate(settings, policy, load, options));
  }
  return { settings, capacity, unloadedP99: unloaded.admittedP99, rows };
}

/** The printed table. */
export function overloadTable(r: OverloadResult): string {
  const s = r.settings;
  return [
    `overload: ${s.workers} workers × ${s.serviceMs} ms = capacity ${r.capacity} requests/s; clients give up after ${s.deadlineMs} ms; unloaded p99 ${Math.round(r.unloadedP99)} ms`,
    table(
      ['policy', 'offered', 'goodput/s', 'of capacity', 'refused', 'admitted p99', 'critical in time'],
      r.rows.map((row) => [
        row.policy,
        `${row.load}×`,
        row.goodput.toFixed(0),
        `${row.goodputShare.toFixed(1)}%`,
        String(row.refused),
        `${Math.round(row.admittedP99)} ms`,
        `${row.criticalSuccess.toFixed(1)}%`,
      ]),
    ),
  ].join('\n');
}

const COLORS: Record<string, string> = {
  'no shedding': '#d62728',
  'fixed cap 30': '#1f77b4',
  'adaptive (gradient2)': '#2ca02c',
};

/** Goodput per second at the highest offered load, per policy. */
export function overloadChart(r: OverloadResult): string {
  const load = Math.max(...r.settings.loads);
  return lineChart({
    title: `overload: goodput at ${load}× capacity (${r.capacity} requests/s)`,
    xLabel: 'time (s)',
    yLabel: 'answers within the deadline per second',
    series: r.rows
      .filter((row) => row.load === load)
      .map((row) => ({
        label: row.policy,
        points: row.goodputPerSecond.map((n, t) => [t + 0.5, n] as const),
        color: COLORS[row.policy] ?? '#7f7f7f',
      })),
    lines: [{ y: r.capacity, label: 'capacity' }],
  });
}

/** The scenario as the CLI runs it. */
export async function overload(): Promise<ScenarioReport> {
  const result = await runOverload();
  return { table: overloadTable(result), svg: overloadChart(result) };
}

/** A server shape the adaptive defaults are compared on. */
export interface PoolShape {
  readonly workers: number;
  readonly serviceMs: number;
}

/** Pools compared: the overload scenario's, and a small one of short queries like the load test's. */
export const DEFAULTS_POOLS: readonly PoolShape[] = [
  { workers: 20, serviceMs: 100 },
  { workers: 10, serviceMs: 20 },
];

/** Fixed caps tried per pool, as multiples of its workers. */
const CAP_FACTORS = [1, 1.25, 1.5, 2];

/** One pool's runs at 3×: fixed caps around its size, and each adaptive algorithm on its defaults. */
export interface DefaultsComparison {
  readonly pool: PoolShape;
  readonly rows: readonly OverloadRow[];
}

/** Runs fixed caps and the adaptive defaults (no priorities) at 3× overload on each pool. */
export async function runAdaptiveDefaults(pools: readonly PoolShape[] = DEFAULTS_POOLS): Promise<DefaultsComparison[]> {
  const comparisons: DefaultsComparison[] = [];
  for (const pool of pools) {
    const shedding: Record<string, LoadSheddingOptions> = {};
    for (const factor of CAP_FACTORS) {
      const cap = Math.round(pool.workers * factor);
      shedding[`fixed cap ${cap}`] = { maxConcurrentRequests: cap };
    }
    shedding['gradient2 (defaults)'] = { adaptive: { algorithm: 'gradient2' } };
    shedding['vegas (defaults)'] = { adaptive: { algorithm: 'vegas' } };
    const result = await runOverload({ ...pool, loads: [3], shedding });
    comparisons.push({ pool, rows: result.rows.filter((row) => row.policy !== 'no shedding') });
  }
  return comparisons;
}

/** The fixed cap an operator would pick: the smallest within 1% of the best goodput of the caps tried. */
export function bestFixedCap(rows: readonly OverloadRow[]): OverloadRow {
  const caps = rows.filter((row) => row.policy.startsWith('fixed cap'));
  const top = Math.max(...caps.map((row) => row.goodput));
  return caps.find((row) => row.goodput >= 0.99 * top) as OverloadRow;
}

/** The printed table: every run, and each adaptive row against its pool's best fixed cap. */
export function adaptiveDefaultsTable(comparisons: readonly DefaultsComparison[]): string {
  const rows: string[][] = [];
  for (const { pool, rows: runs } of comparisons) {
    const best = bestFixedCap(runs);
    for (const row of runs) {
      const adaptive = !row.policy.startsWith('fixed cap');
      rows.push([
        `${pool.workers} × ${pool.serviceMs} ms`,
        row === best ? `${row.policy} (best)` : row.policy,
        row.goodput.toFixed(0),
        `${row.goodputShare.toFixed(1)}%`,
        `${Math.round(row.admittedP99)} ms`,
        adaptive ? `${((row.goodput / best.goodput) * 100).toFixed(1)}%` : '',
        adaptive ? `${(row.admittedP99 / best.admittedP99).toFixed(2)}×` : '',
      ]);
    }
  }
  return [
    'adaptive defaults at 3× capacity, no priorities; best = smallest fixed cap within 1% of the best goodput of the caps tried',
    table(['pool', 'policy', 'goodput/s', 'of capacity', 'admitted p99', 'goodput / best', 'p99 / best'], rows),
  ].join('\n');
}

/** The scenario as the CLI runs it: the table, and goodput per second on the first pool. */
export async function adaptiveDefaults(): Promise<ScenarioReport> {
  const comparisons = await runAdaptiveDefaults();
  const [first] = comparisons;
  const svg = lineChart({
    title: `adaptive defaults: goodput at 3× capacity, ${first.pool.workers} workers × ${first.pool.serviceMs} ms`,
    xLabel: 'time (s)',
    yLabel: 'answers within the deadline per second',
    series: first.rows.map((row, i) => ({
      label: row.policy,
      points: row.goodputPerSecond.map((n, t) => [t + 0.5, n] as const),
      color: ['#1f77b4', '#9ecae1', '#6baed6', '#c6dbef', '#2ca02c', '#ff7f0e'][i] ?? '#7f7f7f',
    })),
    lines: [{ y: (first.pool.workers / first.pool.serviceMs) * 1000, label: 'capacity' }],
  });
  return { table: adaptiveDefaultsTable(comparisons), svg };
}
