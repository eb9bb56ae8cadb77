import { Injectable } from '@nestjs/common';
import { Bulkhead, BulkheadFullError, Fallback, ResilienceRegistry, VirtualClock } from '../lib';
import { bootScenario, mulberry32, percentile, ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * Little's law (docs/scenarios.md, bulkhead): a service with 200 worker threads sends 60 requests a second to a reviews
 * service. At 50 ms that keeps 3 workers busy; when reviews slows to 4 s it
 * would need 60 x 4 = 240, more than the service has, so every endpoint
 * stalls, including those that never touch reviews. A bulkhead of 40 on
 * the reviews call sheds the excess at once and leaves 160 workers to the
 * rest.
 *
 * The model: a thread-per-request server of 200 workers with a FIFO queue
 * for requests waiting for one. Product pages (60/s) call reviews while
 * holding their worker; the other endpoints (240/s) take 20 ms of work.
 * Arrivals are Poisson, from a seeded generator. Callers give up after 1 s,
 * but the server does not know that and still serves what it queued (as a
 * plain thread pool does). A request succeeds when answered within 1 s.
 */

/** The knobs of the run; the defaults are the reference figures plus the other endpoints'. */
export interface BulkheadSettings {
  readonly workers: number;
  /** Product pages per second, each calling reviews. */
  readonly reviewsRate: number;
  /** Requests per second to the other endpoints. */
  readonly otherRate: number;
  /** Work of one request to another endpoint, in ms. */
  readonly otherWorkMs: number;
  readonly reviewsFastMs: number;
  readonly reviewsSlowMs: number;
  /** When reviews slows down, in ms. */
  readonly slowFromMs: number;
  /** How long traffic runs, in ms (reviews stays slow to the end). */
  readonly runMs: number;
  /** How long a caller waits for its answer, in ms. */
  readonly clientTimeoutMs: number;
  /** The bulkhead on the reviews call. */
  readonly bulkhead: number;
  readonly seed: number;
}

/** The reference's 200 workers, 60/s to reviews at 50 ms then 4 s, and a bulkhead of 40. */
export const BULKHEAD_DEFAULTS: BulkheadSettings = {
  workers: 200,
  reviewsRate: 60,
  otherRate: 240,
  otherWorkMs: 20,
  reviewsFastMs: 50,
  reviewsSlowMs: 4000,
  slowFromMs: 10_000,
  runMs: 60_000,
  clientTimeoutMs: 1000,
  bulkhead: 40,
  seed: 42,
};

const SAMPLE_MS = 250;

/** The run's settings, shared by the dependency and the driver. */
@Injectable()
class BulkheadRun {
  settings: BulkheadSettings = BULKHEAD_DEFAULTS;
}

/** The reviews service: 50 ms, then 4 s from `slowFromMs` on. */
@Injectable()
class ReviewsService {
  constructor(
    private readonly clock: VirtualClock,
    private readonly run: BulkheadRun,
  ) {}

  fetch(productId: number): Promise<string[]> {
    const s = this.run.settings;
    const ms = this.clock.now() >= s.slowFromMs ? s.reviewsSlowMs : s.reviewsFastMs;
    return new Promise((resolve) => this.clock.setTimeout(() => resolve([`review of product ${productId}`]), ms));
  }
}

/** What a product page shows of reviews: the reviews, or `null` when they were left out. */
type ReviewsPart = string[] | null;

/** The reviews call as most code has it: nothing between the page and the slow service. */
@Injectable()
class PlainReviewsClient {
  constructor(private readonly reviews: ReviewsService) {}

  async forProduct(productId: number): Promise<ReviewsPart> {
    return this.reviews.fetch(productId);
  }
}

/** The reviews call behind a bulkhead; a page refused a permit is served without reviews. */
@Injectable()
class GuardedReviewsClient {
  constructor(private readonly reviews: ReviewsService) {}

  @Fallback(BulkheadFullError, 'withoutReviews')
  @Bulkhead('reviews')
  async forProduct(productId: number): Promise<ReviewsPart> {
    return this.reviews.fetch(productId);
  }

  withoutReviews(): ReviewsPart {
    return null;
  }
}

/** The server's threads: `size` workers and a FIFO queue of requests waiting for one. */
class WorkerPool {
  busy = 0;
  private readonly waiting: Array<() => void> = [];
  private head = 0;

  constructor(readonly size: number) {}

  get queued(): number {
    return this.waiting.length - this.head;
  }

  acquire(): Promise<void> {
    if (this.busy < this.size) {
      this.busy++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    if (this.head < this.waiting.length) {
      const next = this.waiting[this.head];
      this.waiting[this.head++] = undefined as never;
      next(); // the worker passes straight to the next request
      return;
    }
    this.busy--;
  }
}

/** One request as its caller saw it. */
interface RequestRecord {
  readonly kind: 'reviews' | 'other';
  readonly arrivedAt: number;
  answeredAt?: number;
  withReviews?: boolean;
}

/** Figures for one kind of endpoint. */
export interface EndpointFigures {
  /** Requests that arrived while reviews was slow. */
  readonly requests: number;
  /** Of those, answered within the callers' timeout. */
  readonly answeredInTime: number;
  /** `answeredInTime / requests`, in percent. */
  readonly successRate: number;
  /** Latency to the answer (however late), in ms. */
  readonly p50: number;
  readonly p99: number;
}

/** What one run measured. */
export interface BulkheadRow {
  readonly label: string;
  readonly others: EndpointFigures;
  readonly pages: EndpointFigures & { readonly withReviews: number; readonly withoutReviews: number };
  /** Most workers held by product pages at a sample. */
  readonly maxWorkersOnReviews: number;
  /** Longest queue for a worker. */
  readonly maxQueued: number;
  readonly bulkheadRejected: number;
  /** Sampled every 250 ms: `[seconds, workers held by pages, requests queued for a worker]`. */
  readonly samples: ReadonlyArray<readonly [number, number, number]>;
  /** Other endpoints' requests answered in time, per second of arrival. */
  readonly othersInTimePerSecond: readonly number[];
}

/** Both runs. */
export interface BulkheadResult {
  readonly settings: BulkheadSettings;
  readonly none: BulkheadRow;
  readonly guarded: BulkheadRow;
}

/** Poisson arrival times in [0, runMs) for `rate` per second, from `random`. */
function arrivals(rate: number, runMs: number, random: () => number): number[] {
  const times: number[] = [];
  for (let t = -Math.log(1 - random()) * (1000 / rate); t < runMs; t += -Math.log(1 - random()) * (1000 / rate)) {
    times.push(Math.floor(t));
  }
  return times;
}

function figures(records: readonly RequestRecord[], timeoutMs: number): EndpointFigures {
  const latencies = records.map((r) => (r.answeredAt ?? Number.POSITIVE_INFINITY) - r.arrivedAt);
  const answeredInTime = latencies.filter((l) => l <= timeoutMs).length;
  return {
    requests: records.length,
    answeredInTime,
    successRate: records.length === 0 ? Number.NaN : (100 * answeredInTime) / records.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** Runs the server for `runMs` with the plain or the guarded reviews client, then drains it. */
export async function runBulkheadVariant(
  guarded: boolean,
  settings: BulkheadSettings = BULKHEAD_DEFAULTS,
): Promise<BulkheadRow> {
  const client = guarded ? GuardedReviewsClient : PlainReviewsClient;
  const { moduleRef, clock } = await bootScenario([BulkheadRun, ReviewsService, client], {
    bulkhead: { instances: { reviews: { maxConcurrentCalls: settings.bulkhead, maxWaitDuration: 0 } } },
  });
  try {
    moduleRef.get(BulkheadRun).settings = settings;
    const reviews = moduleRef.get<PlainReviewsClient | GuardedReviewsClient>(client);
    let bulkheadRejected = 0;
    if (guarded)
      moduleRef
        .get(ResilienceRegistry)
        .bulkhead('reviews')
        .onCallRejected(() => void bulkheadRejected++);

    const pool = new WorkerPool(settings.workers);
    let onReviews = 0;
    const records: RequestRecord[] = [];
    const serve = async (record: RequestRecord): Promise<void> => {
      await pool.acquire();
      try {
        if (record.kind === 'reviews') {
          onReviews++;
          try {
            record.withReviews = (await reviews.forProduct(records.length)) !== null;
          } finally {
            onReviews--;
          }
        } else {
          await new Promise<void>((resolve) => clock.setTimeout(resolve, settings.otherWorkMs));
        }
      } finally {
        pool.release();
      }
      record.answeredAt = clock.now();
    };
    const random = mulberry32(settings.seed);
    const schedule = (kind: RequestRecord['kind'], rate: number): void => {
      for (const at of arrivals(rate, settings.runMs, random)) {
        clock.setTimeout(() => {
          const record: RequestRecord = { kind, arrivedAt: clock.now() };
          records.push(record);
          void serve(record);
        }, at);
      }
    };
    schedule('reviews', settings.reviewsRate);
    schedule('other', settings.otherRate);

    const samples: Array<readonly [number, number, number]> = [];
    let maxQueued = 0;
    for (let t = 0; t < settings.runMs; t += SAMPLE_MS) {
      await clock.advance(SAMPLE_MS);
      maxQueued = Math.max(maxQueued, pool.queued);
      samples.push([clock.now() / 1000, onReviews, pool.queued]);
    }
    // Drain: every queued request is still served; bounded by the backlog a 200-worker pool can clear.
    for (let i = 0; i < 3600 && records.some((r) => r.answeredAt === undefined); i++) await clock.advance(1000);

    const slow = records.filter((r) => r.arrivedAt >= settings.slowFromMs);
    const others = slow.filter((r) => r.kind === 'other');
    const pages = slow.filter((r) => r.kind === 'reviews');
    const othersInTimePerSecond = Array.from({ length: settings.runMs / 1000 }, () => 0);
    for (const r of records) {
      if (r.kind === 'other' && r.answeredAt !== undefined && r.answeredAt - r.arrivedAt <= settings.clientTimeoutMs) {
        othersInTimePerSecond[Math.floor(r.arrivedAt / 1000)]++;
      }
    }
    return {
      label: guarded ? `bulkhead of ${settings.bulkhead} on reviews` : 'no bulkhead',
      others: figures(others, settings.clientTimeoutMs),
      pages: {
        ...figures(pages, settings.clientTimeoutMs),
        withReviews: pages.filter((r) => r.withReviews === true).length,
        withoutReviews: pages.filter((r) => r.withReviews === false).length,
      },
      maxWorkersOnReviews: Math.max(...samples.map(([, w]) => w)),
      maxQueued,
      bulkheadRejected,
      samples,
      othersInTimePerSecond,
    };
  } finally {
    await moduleRef.close();
  }
}

/** Runs without and with the bulkhead. */
export async function runBulkhead(settings: Partial<BulkheadSettings> = {}): Promise<BulkheadResult> {
  const s = { ...BULKHEAD_DEFAULTS, ...settings };
  return { settings: s, none: await runBulkheadVariant(false, s), guarded: await runBulkheadVariant(true, s) };
}

const ms = (v: number): string =>
  Number.isFinite(v) ? (v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`) : 'never';
const pct = (v: number): string => `${v.toFixed(1)}%`;

/** The printed table, with the reference arithmetic above ours. */
export function bulkheadTable(r: BulkheadResult): string {
  const s = r.settings;
  const wanted = (s.reviewsRate * s.reviewsSlowMs) / 1000;
  const row = (x: BulkheadRow): string[] => [
    x.label,
    String(x.maxWorkersOnReviews),
    pct(x.others.successRate),
    ms(x.others.p50),
    ms(x.others.p99),
    pct(x.pages.successRate),
    `${x.pages.withReviews}/${x.pages.withoutReviews}`,
    ms(x.pages.p99),
    String(x.maxQueued),
  ];
  return [
    `bulkhead: ${s.workers} workers; product pages ${s.reviewsRate}/s call reviews (${s.reviewsFastMs} ms, then ${s.reviewsSlowMs / 1000} s from t=${s.slowFromMs / 1000} s);`,
    `other endpoints ${s.otherRate}/s of ${s.otherWorkMs} ms; Poisson arrivals for ${s.runMs / 1000} s; callers give up after ${s.clientTimeoutMs / 1000} s`,
    `reference: ${s.reviewsRate}/s x ${s.reviewsFastMs} ms = ${(s.reviewsRate * s.reviewsFastMs) / 1000} workers; ${s.reviewsRate}/s x ${s.reviewsSlowMs / 1000} s = ${wanted} wanted > ${s.workers}: ` +
      `every endpoint stalls; a bulkhead of ${s.bulkhead} leaves ${s.workers - s.bulkhead} workers to the rest`,
    `ours, over requests arriving while reviews is slow (success = answered within ${s.clientTimeoutMs / 1000} s):`,
    table(
      [
        '',
        'workers on reviews',
        'others ok',
        'others p50',
        'others p99',
        'pages ok',
        'with/without reviews',
        'pages p99',
        'max queued',
      ],
      [row(r.none), row(r.guarded)],
    ),
    `the bulkhead refused ${r.guarded.bulkheadRejected} reviews calls at once; those pages were served without reviews (@Fallback(BulkheadFullError)).`,
  ].join('\n');
}

/** Workers held by product pages and other endpoints' requests answered in time, over time. */
export function bulkheadChart(r: BulkheadResult): string {
  const s = r.settings;
  const perSecond = (row: BulkheadRow): Array<readonly [number, number]> =>
    row.othersInTimePerSecond.map((n, t) => [t + 0.5, n] as const);
  const workers = (row: BulkheadRow): Array<readonly [number, number]> => row.samples.map(([t, w]) => [t, w] as const);
  return lineChart({
    title: `bulkhead: ${s.workers} workers, reviews slows from ${s.reviewsFastMs} ms to ${s.reviewsSlowMs / 1000} s at ${s.reviewsRate} requests/s`,
    xLabel: 'time (s)',
    yLabel: 'workers / requests per second',
    series: [
      { label: 'no bulkhead: workers held by product pages', points: workers(r.none), color: '#d62728' },
      { label: `bulkhead ${s.bulkhead}: workers held by product pages`, points: workers(r.guarded), color: '#1f77b4' },
      {
        label: 'no bulkhead: other endpoints answered within 1 s, per second',
        points: perSecond(r.none),
        color: '#d62728',
        dashed: true,
      },
      {
        label: `bulkhead ${s.bulkhead}: other endpoints answered within 1 s, per second`,
        points: perSecond(r.guarded),
        color: '#1f77b4',
        dashed: true,
      },
    ],
    lines: [{ y: s.workers, label: `${s.workers} workers` }],
    bands: [{ from: s.slowFromMs / 1000, to: s.runMs / 1000, label: `reviews takes ${s.reviewsSlowMs / 1000} s` }],
  });
}

/** The scenario as the CLI runs it. */
export async function bulkhead(): Promise<ScenarioReport> {
  const result = await runBulkhead();
  return { table: bulkheadTable(result), svg: bulkheadChart(result) };
}
