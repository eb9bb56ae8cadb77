import { Injectable } from '@nestjs/common';
import { ResilienceRegistry, Retry, RetryConfigInput, RetryMetrics, VirtualClock } from '../lib';
import { bootScenario, grouped, ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * "Retries are demand" (docs/scenarios.md, retry-storm): a server that
 * completes 100 requests a second, a base load of 80/s with a one-minute
 * spike to 140/s, and callers that retry a failed request 2 s later. The
 * reference model, which this scenario keeps:
 *
 * - no queue and no timeouts: in each second the server completes the
 *   first `capacity` requests that reach it and refuses the rest at once
 *   (here with a 503, which the module's Retry retries by default);
 * - a failed request is retried exactly 2 s later (no jitter), and a retry
 *   that fails again is retried again: the model puts no cap on attempts;
 * - retries and first attempts are the same load to the server.
 *
 * The model's "retry, no budget" row is `min(failed, CAPACITY * 10)`: even
 * there the callers send at most 1,000 retries a second. Our callers have
 * that ceiling too in that row (a retry past it is not sent, as the model's
 * min() drops it), and an extra row shows the storm with no ceiling at all.
 * The 10% row uses the module's retry budget (`ratio: 0.1`): each success
 * deposits a tenth of a token, so a server completing 100/s funds 10
 * retries a second, the model's `CAPACITY * 0.1`.
 */

/** The knobs of the storm; the defaults are the reference model's. */
export interface RetryStormSettings {
  /** Length of the run in seconds. Default 600, as the reference model's. */
  readonly seconds: number;
  /** Requests the server completes per second. Default 100. */
  readonly capacity: number;
  /** Requests per second outside the spike. Default 80. */
  readonly baseRate: number;
  /** Requests per second during the spike. Default 140. */
  readonly spikeRate: number;
  /** First second of the spike. Default 60. */
  readonly spikeFrom: number;
  /** First second after the spike. Default 120. */
  readonly spikeTo: number;
  /** Wait before a retry, in ms. Default 2,000. */
  readonly retryDelayMs: number;
}

/** The reference storm: 100/s capacity, 80/s with 140/s from t=60 to t=120, retries 2 s later, 600 s. */
export const RETRY_STORM_DEFAULTS: RetryStormSettings = {
  seconds: 600,
  capacity: 100,
  baseRate: 80,
  spikeRate: 140,
  spikeFrom: 60,
  spikeTo: 120,
  retryDelayMs: 2000,
};

/** The reference model's figures for one row. */
export interface StormReference {
  readonly peak: number;
  readonly at150: number;
  readonly recoveredAt: number;
}

/** One way the callers retry. */
export interface StormVariant {
  readonly label: string;
  /** The callers' retry instance (merged over the shared settings). */
  readonly retry: RetryConfigInput;
  /** Most retries the callers send in one second (the model's `CAPACITY * budget`), if any. */
  readonly retryCeiling?: (settings: RetryStormSettings) => number;
  /** What the reference model prints for this row. */
  readonly reference?: StormReference;
}

/** The reference model places no cap on attempts; this is "as many as it takes" within any run here. */
const UNBOUNDED_ATTEMPTS = 1_000_000;

/** The reference model's three rows, and the unbudgeted storm without its ceiling. */
export const STORM_VARIANTS: readonly StormVariant[] = [
  { label: 'no retries', retry: { maxAttempts: 1 }, reference: { peak: 140, at150: 80, recoveredAt: 120 } },
  {
    label: 'retry, no budget',
    retry: { maxAttempts: UNBOUNDED_ATTEMPTS },
    retryCeiling: (s) => s.capacity * 10,
    reference: { peak: 1140, at150: 780, recoveredAt: 218 },
  },
  {
    label: 'retry budget 10% of capacity',
    retry: { maxAttempts: UNBOUNDED_ATTEMPTS, budget: { ratio: 0.1, maxTokens: 10 } },
    reference: { peak: 150, at150: 80, recoveredAt: 120 },
  },
  { label: 'retry, no budget, no ceiling', retry: { maxAttempts: UNBOUNDED_ATTEMPTS } },
];

/** What one row measured. */
export interface StormRow {
  readonly label: string;
  readonly reference?: StormReference;
  /** Requests reaching the server in each second (first attempts and retries). */
  readonly offered: readonly number[];
  readonly peak: number;
  readonly at150: number;
  /** First second from the end of the spike on at which the offered load is within capacity; `null` if never. */
  readonly recoveredAt: number | null;
  /** Retries the callers sent. */
  readonly retriesSent: number;
  /** Retries the callers' ceiling dropped. */
  readonly retriesDropped: number;
  /** Requests that failed for good within the run. */
  readonly failedForGood: number;
  /** The retry instance's counters. */
  readonly metrics: RetryMetrics;
}

/** Everything the scenario measured. */
export interface RetryStormResult {
  readonly settings: RetryStormSettings;
  readonly rows: readonly StormRow[];
}

/** The server is past its capacity for this second. */
class Overloaded extends Error {
  readonly status = 503;

  constructor() {
    super('503 Service Unavailable: over capacity');
  }
}

/** The callers' retry ceiling for this second is spent; the retry is not sent (not retryable). */
class RetryNotSent extends Error {}

/** Shared by the server and the callers of one run. */
@Injectable()
class StormRun {
  settings: RetryStormSettings = RETRY_STORM_DEFAULTS;
  retryCeiling = Number.POSITIVE_INFINITY;
}

/** Completes the first `capacity` requests of each second and refuses the rest at once. */
@Injectable()
class StormServer {
  readonly offered: number[] = [];
  private readonly completed: number[] = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly run: StormRun,
  ) {}

  handle(): void {
    const second = Math.floor(this.clock.now() / 1000);
    this.offered[second] = (this.offered[second] ?? 0) + 1;
    const done = this.completed[second] ?? 0;
    if (done >= this.run.settings.capacity) throw new Overloaded();
    this.completed[second] = done + 1;
  }
}

/** One request's attempts so far. */
interface StormRequest {
  attempts: number;
}

/** The callers: one call per request, retried by the module's `@Retry('callers')`. */
@Injectable()
class StormCallers {
  retriesSent = 0;
  retriesDropped = 0;
  private readonly retriesBySecond: number[] = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly server: StormServer,
    private readonly run: StormRun,
  ) {}

  @Retry('callers')
  async send(request: StormRequest): Promise<void> {
    if (request.attempts++ > 0) {
      const second = Math.floor(this.clock.now() / 1000);
      const sent = this.retriesBySecond[second] ?? 0;
      if (sent >= this.run.retryCeiling) {
        this.retriesDropped++;
        throw new RetryNotSent('retry ceiling of this second reached');
      }
      this.retriesBySecond[second] = sent + 1;
      this.retriesSent++;
    }
    this.server.handle();
  }
}

/** Requests per second at second `t`. */
function rateAt(s: RetryStormSettings, t: number): number {
  return t >= s.spikeFrom && t < s.spikeTo ? s.spikeRate : s.baseRate;
}

/** Runs one row on the real module: fresh app, fresh clock. */
export async function runStormVariant(
  variant: StormVariant,
  settings: RetryStormSettings = RETRY_STORM_DEFAULTS,
): Promise<StormRow> {
  const { moduleRef, clock } = await bootScenario([StormRun, StormServer, StormCallers], {
    retry: { instances: { callers: { waitDuration: settings.retryDelayMs, jitter: 'none', ...variant.retry } } },
  });
  try {
    const run = moduleRef.get(StormRun);
    run.settings = settings;
    run.retryCeiling = variant.retryCeiling?.(settings) ?? Number.POSITIVE_INFINITY;
    const server = moduleRef.get(StormServer);
    const callers = moduleRef.get(StormCallers);
    let failedForGood = 0;
    const fail = (): void => void failedForGood++;
    const arrive = (): void => void callers.send({ attempts: 0 }).catch(fail);
    for (let t = 0; t < settings.seconds; t++) {
      // This second's new requests, spread evenly over it.
      const n = rateAt(settings, t);
      for (let i = 0; i < n; i++) clock.setTimeout(arrive, Math.floor((i * 1000) / n));
      await clock.advance(1000);
    }
    const offered = Array.from({ length: settings.seconds }, (_, t) => server.offered[t] ?? 0);
    const recovered = offered.findIndex((load, t) => t >= settings.spikeTo && load <= settings.capacity);
    return {
      label: variant.label,
      reference: variant.reference,
      offered,
      peak: Math.max(...offered),
      at150: offered[150] ?? Number.NaN,
      recoveredAt: recovered < 0 ? null : recovered,
      retriesSent: callers.retriesSent,
      retriesDropped: callers.retriesDropped,
      failedForGood,
      metrics: moduleRef.get(ResilienceRegistry).retry('callers').metrics,
    };
  } finally {
    await moduleRef.close();
  }
}

/**
 * The reference model, line for line: `retries` on or off, and at most
 * `CAPACITY * budget` retries a second. Returns the offered load per second.
 */
export function referenceModel(
  retries: boolean,
  budget: number,
  s: RetryStormSettings = RETRY_STORM_DEFAULTS,
): number[] {
  const pending = new Map<number, number>();
  const trace: number[] = [];
  for (let t = 0; t < s.seconds; t++) {
    const offered = rateAt(s, t) + (pending.get(t) ?? 0);
    pending.delete(t);
    trace.push(offered);
    const failed = Math.max(0, offered - s.capacity);
    if (retries) pending.set(t + 2, (pending.get(t + 2) ?? 0) + Math.min(failed, Math.trunc(s.capacity * budget)));
  }
  return trace;
}

/** Runs every row. */
export async function runRetryStorm(
  settings: Partial<RetryStormSettings> = {},
  variants: readonly StormVariant[] = STORM_VARIANTS,
): Promise<RetryStormResult> {
  const s = { ...RETRY_STORM_DEFAULTS, ...settings };
  const rows: StormRow[] = [];
  for (const variant of variants) rows.push(await runStormVariant(variant, s));
  return { settings: s, rows };
}

const dash = '—';

/** The printed table: the reference model's figures beside ours. */
export function retryStormTable(result: RetryStormResult): string {
  const s = result.settings;
  const rows = result.rows.map((r) => [
    r.label,
    r.reference ? grouped(r.reference.peak) : dash,
    grouped(r.peak),
    r.reference ? grouped(r.reference.at150) : dash,
    Number.isNaN(r.at150) ? dash : grouped(r.at150),
    r.reference ? `t=${r.reference.recoveredAt}` : dash,
    r.recoveredAt === null ? 'never' : `t=${r.recoveredAt}`,
    grouped(r.retriesSent),
    grouped(r.metrics.budgetDenied),
    grouped(r.retriesDropped),
    grouped(r.failedForGood),
  ]);
  return [
    `retry-storm: server completes ${s.capacity}/s; load ${s.baseRate}/s, ${s.spikeRate}/s from t=${s.spikeFrom} to t=${s.spikeTo} (${(s.spikeRate / s.capacity).toFixed(1)}x capacity);`,
    `failed requests retried ${s.retryDelayMs / 1000} s later by @Retry (no attempt cap); ${s.seconds} s on the virtual clock`,
    table(
      [
        '',
        'peak/s ref',
        'ours',
        'at t=150 ref',
        'ours',
        'recovered ref',
        'ours',
        'retries sent',
        'budget denied',
        'over ceiling',
        'failed',
      ],
      rows,
    ),
    `"retry, no budget": the reference model's callers send at most ${grouped(s.capacity * 10)} retries/s (its min(failed, CAPACITY * 10)); ours drop a retry past that ceiling too.`,
    `"retry budget 10%": the module's RetryBudget, ratio 0.1, maxTokens 10 (a success deposits 0.1 token, a retry takes 1).`,
  ].join('\n');
}

/** Offered load per second, one line per row. */
export function retryStormChart(result: RetryStormResult): string {
  const s = result.settings;
  const shown = Math.min(s.seconds, 300);
  return lineChart({
    title: 'retry-storm: load offered to a server that completes 100 requests/s',
    xLabel: 'time (s)',
    yLabel: 'requests reaching the server per second',
    series: result.rows.map((r) => ({
      label: `${r.label}: peak ${grouped(r.peak)}/s`,
      points: r.offered.slice(0, shown).map((y, t) => [t, y] as const),
    })),
    lines: [{ y: s.capacity, label: `capacity ${s.capacity}/s` }],
    bands: [{ from: s.spikeFrom, to: s.spikeTo, label: `spike ${s.spikeRate}/s` }],
  });
}

/** The scenario as the CLI runs it. */
export async function retryStorm(): Promise<ScenarioReport> {
  const result = await runRetryStorm();
  return { table: retryStormTable(result), svg: retryStormChart(result) };
}
