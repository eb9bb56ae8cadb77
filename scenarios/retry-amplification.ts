import { Injectable } from '@nestjs/common';
import { ResilienceRegistry, Retry, RetryConfigInput, VirtualClock } from '../lib';
import { bootScenario, mulberry32, percentile, ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * "Retries multiply" (docs/scenarios.md, retry-amplification): a web
 * tier, an API tier and a data tier each making up to 3 attempts turn one
 * user request into 3 x 3 x 3 = 27 calls to a failing bottom service; even 2 attempts
 * per layer is 8. The cure: retry at one layer (the one closest to the
 * dependency) and give it a retry budget, so a mass failure damps itself.
 *
 * Three providers call each other, each method under its own `@Retry`
 * instance (maxAttempts 1 = that layer does not retry). The bottom service
 * answers in 20 ms, and fails with a 503 from t=10 s to t=70 s. Waits are
 * exponential from 100 ms with full jitter from a seeded generator.
 */

/** The knobs of the run. */
export interface AmplificationSettings {
  /** User requests per second, evenly spaced. */
  readonly rate: number;
  readonly outageFromMs: number;
  readonly outageToMs: number;
  /** Traffic runs this long, in ms. */
  readonly runMs: number;
  /** The bottom service's answer time, in ms. */
  readonly latencyMs: number;
  readonly seed: number;
}

/** 10 user requests/s for 80 s; the bottom service fails from t=10 s to t=70 s. */
export const AMPLIFICATION_DEFAULTS: AmplificationSettings = {
  rate: 10,
  outageFromMs: 10_000,
  outageToMs: 70_000,
  runMs: 80_000,
  latencyMs: 20,
  seed: 7,
};

/** Where retries happen. */
export interface AmplificationVariant {
  readonly label: string;
  readonly web: RetryConfigInput;
  readonly api: RetryConfigInput;
  readonly data: RetryConfigInput;
  /** The reference figure: calls at the bottom per user request while it fails. */
  readonly reference: string;
}

const BUDGET = { ratio: 0.1, maxTokens: 10 };

/** Retrying at every layer (3 and 2 attempts), at one layer, and at one layer with a 10% budget. */
export const AMPLIFICATION_VARIANTS: readonly AmplificationVariant[] = [
  {
    label: 'every layer, 3 attempts',
    web: { maxAttempts: 3 },
    api: { maxAttempts: 3 },
    data: { maxAttempts: 3 },
    reference: '27',
  },
  {
    label: 'every layer, 2 attempts',
    web: { maxAttempts: 2 },
    api: { maxAttempts: 2 },
    data: { maxAttempts: 2 },
    reference: '8',
  },
  {
    label: 'data layer only, 3 attempts',
    web: { maxAttempts: 1 },
    api: { maxAttempts: 1 },
    data: { maxAttempts: 3 },
    reference: '3',
  },
  {
    label: 'data layer only, 3 attempts, 10% budget',
    web: { maxAttempts: 1 },
    api: { maxAttempts: 1 },
    data: { maxAttempts: 3, budget: BUDGET },
    reference: '<= 1.1',
  },
];

/** The bottom service's 503. */
class ServiceUnavailable extends Error {
  readonly status = 503;

  constructor() {
    super('503 Service Unavailable');
  }
}

/** One user request, carried down the layers so the bottom can count its calls. */
interface UserRequest {
  readonly startedAt: number;
  calls: number;
  settledAt?: number;
  ok?: boolean;
}

@Injectable()
class AmplificationRun {
  settings: AmplificationSettings = AMPLIFICATION_DEFAULTS;
}

/** The bottom service: 20 ms per call, a 503 during the outage. */
@Injectable()
class BottomService {
  readonly callsPerSecond: number[] = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly run: AmplificationRun,
  ) {}

  async query(request: UserRequest): Promise<string> {
    const s = this.run.settings;
    request.calls++;
    const second = Math.floor(this.clock.now() / 1000);
    this.callsPerSecond[second] = (this.callsPerSecond[second] ?? 0) + 1;
    const failing = this.clock.now() >= s.outageFromMs && this.clock.now() < s.outageToMs;
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, s.latencyMs));
    if (failing) throw new ServiceUnavailable();
    return 'row';
  }
}

@Injectable()
class DataTier {
  constructor(private readonly bottom: BottomService) {}

  @Retry('data')
  async read(request: UserRequest): Promise<string> {
    return this.bottom.query(request);
  }
}

@Injectable()
class ApiTier {
  constructor(private readonly data: DataTier) {}

  @Retry('api')
  async get(request: UserRequest): Promise<string> {
    return this.data.read(request);
  }
}

@Injectable()
class WebTier {
  constructor(private readonly api: ApiTier) {}

  @Retry('web')
  async handle(request: UserRequest): Promise<string> {
    return this.api.get(request);
  }
}

/** What one variant measured. */
export interface AmplificationRow {
  readonly label: string;
  readonly reference: string;
  /** User requests that started and ended during the outage. */
  readonly requests: number;
  /** Calls those requests made to the bottom service. */
  readonly bottomCalls: number;
  readonly callsPerRequest: number;
  /** Most calls any one request made. */
  readonly maxCallsPerRequest: number;
  /** Median time for a request in the outage to fail, in ms. */
  readonly p50FailMs: number;
  /** Retries the budget refused. */
  readonly budgetDenied: number;
  /** Calls reaching the bottom service per second. */
  readonly callsPerSecond: readonly number[];
  /** Requests outside the outage that failed (should be 0). */
  readonly healthyFailures: number;
}

/** Every variant. */
export interface AmplificationResult {
  readonly settings: AmplificationSettings;
  readonly rows: readonly AmplificationRow[];
}

/** Runs one variant on a fresh app and clock. */
export async function runAmplificationVariant(
  variant: AmplificationVariant,
  settings: AmplificationSettings = AMPLIFICATION_DEFAULTS,
): Promise<AmplificationRow> {
  const shared: RetryConfigInput = {
    waitDuration: 100,
    enableExponentialBackoff: true,
    exponentialBackoffMultiplier: 2,
    jitter: 'full',
  };
  const { moduleRef, clock } = await bootScenario([AmplificationRun, BottomService, DataTier, ApiTier, WebTier], {
    random: mulberry32(settings.seed),
    retry: {
      instances: {
        web: { ...shared, ...variant.web },
        api: { ...shared, ...variant.api },
        data: { ...shared, ...variant.data },
      },
    },
  });
  try {
    moduleRef.get(AmplificationRun).settings = settings;
    const web = moduleRef.get(WebTier);
    const requests: UserRequest[] = [];
    const interval = 1000 / settings.rate;
    for (let t = 0; t < settings.runMs; t += interval) {
      const request: UserRequest = { startedAt: clock.now(), calls: 0 };
      requests.push(request);
      web.handle(request).then(
        () => Object.assign(request, { settledAt: clock.now(), ok: true }),
        () => Object.assign(request, { settledAt: clock.now(), ok: false }),
      );
      await clock.advance(interval);
    }
    for (let i = 0; i < 600 && requests.some((r) => r.settledAt === undefined); i++) await clock.advance(1000);

    const inOutage = (r: UserRequest): boolean =>
      r.startedAt >= settings.outageFromMs && r.startedAt < settings.outageToMs;
    // Whole lives inside the outage, so no request's count is cut short by the recovery.
    const outage = requests.filter((r) => inOutage(r) && r.settledAt! <= settings.outageToMs);
    const bottomCalls = outage.reduce((n, r) => n + r.calls, 0);
    const bottom = moduleRef.get(BottomService);
    return {
      label: variant.label,
      reference: variant.reference,
      requests: outage.length,
      bottomCalls,
      callsPerRequest: bottomCalls / outage.length,
      maxCallsPerRequest: Math.max(...outage.map((r) => r.calls)),
      p50FailMs: percentile(
        outage.filter((r) => r.ok === false).map((r) => r.settledAt! - r.startedAt),
        50,
      ),
      budgetDenied: moduleRef.get(ResilienceRegistry).retry('data').metrics.budgetDenied,
      callsPerSecond: Array.from({ length: Math.ceil(settings.runMs / 1000) }, (_, t) => bottom.callsPerSecond[t] ?? 0),
      healthyFailures: requests.filter((r) => !inOutage(r) && r.ok !== true).length,
    };
  } finally {
    await moduleRef.close();
  }
}

/** Runs every variant. */
export async function runRetryAmplification(
  settings: Partial<AmplificationSettings> = {},
  variants: readonly AmplificationVariant[] = AMPLIFICATION_VARIANTS,
): Promise<AmplificationResult> {
  const s = { ...AMPLIFICATION_DEFAULTS, ...settings };
  const rows: AmplificationRow[] = [];
  for (const variant of variants) rows.push(await runAmplificationVariant(variant, s));
  return { settings: s, rows };
}

/** The printed table. */
export function retryAmplificationTable(r: AmplificationResult): string {
  const s = r.settings;
  return [
    `retry-amplification: web -> api -> data -> bottom service, ${s.rate} user requests/s; the bottom answers in ${s.latencyMs} ms and fails with 503`,
    `from t=${s.outageFromMs / 1000} s to t=${s.outageToMs / 1000} s; @Retry waits 100 ms x 2^n with full jitter (seeded); figures for the requests that started and failed within the outage`,
    table(
      ['', 'calls/request ref', 'ours', 'max', 'requests', 'bottom calls/s', 'time to fail p50', 'budget denied'],
      r.rows.map((row) => [
        row.label,
        row.reference,
        Number.isInteger(row.callsPerRequest) ? String(row.callsPerRequest) : row.callsPerRequest.toFixed(3),
        String(row.maxCallsPerRequest),
        String(row.requests),
        (row.callsPerRequest * s.rate).toFixed(1),
        `${(row.p50FailMs / 1000).toFixed(2)} s`,
        String(row.budgetDenied),
      ]),
    ),
    `reference: 1,000 requests/s with a 10% budget reach the dependency at most 1,000 + 100 = 1,100 times a second (1.1 per request); the budget here holds at most ${BUDGET.maxTokens} tokens,`,
    `filled before the outage, and the failing bottom deposits nothing, so after those ${BUDGET.maxTokens} retries every request makes one call.`,
  ].join('\n');
}

/** Calls reaching the bottom service per second, per variant. */
export function retryAmplificationChart(r: AmplificationResult): string {
  const s = r.settings;
  return lineChart({
    title: 'retry-amplification: calls reaching a failing bottom service',
    xLabel: 'time (s)',
    yLabel: 'calls to the bottom service per second',
    series: r.rows.map((row) => ({
      label: `${row.label}: ${row.callsPerRequest.toFixed(2)} calls per request`,
      points: row.callsPerSecond.map((n, t) => [t, n] as const),
    })),
    lines: [{ y: s.rate, label: `${s.rate} user requests/s` }],
    bands: [{ from: s.outageFromMs / 1000, to: s.outageToMs / 1000, label: 'bottom service failing' }],
  });
}

/** The scenario as the CLI runs it. */
export async function retryAmplification(): Promise<ScenarioReport> {
  const result = await runRetryAmplification();
  return { table: retryAmplificationTable(result), svg: retryAmplificationChart(result) };
}
