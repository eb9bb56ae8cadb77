import { AdaptiveLimitBounds, BaselineLimit } from './adaptive-limit';

/** Settings of {@link Gradient2Limit}. */
export interface Gradient2Settings extends AdaptiveLimitBounds {
  /** How much a new estimate moves the limit, in (0, 1]. Default 0.2. */
  readonly smoothing: number;
  /** Room the limit may grow by while latency stays at its baseline. Default 3. */
  readonly queueSize: number;
  /** Samples the long-term latency average spans. Default 600. */
  readonly longWindow: number;
}

/** Samples averaged plainly before the long-term average turns exponential. */
const WARMUP_SAMPLES = 10;

/**
 * Netflix concurrency-limits' Gradient2 algorithm
 * (`concurrency-limits-core/.../limit/Gradient2Limit.java`): the limit is
 * scaled by the gradient between the long-term average latency and the
 * latest sample, bounded to [0.5, 1] so outliers cannot halve it at once,
 * plus a fixed queue allowance; it does not grow while the application uses
 * less than half of it. When latency falls back after a long overload, the
 * long-term average is decayed so the limit recovers without waiting for it.
 * A no-load latency measured without a queue ({@link Gradient2Limit.onBaseline})
 * replaces the long-term average, which a lasting overload drifts to the
 * queued latency.
 */
export class Gradient2Limit implements BaselineLimit {
  private estimate: number;
  private longRtt = 0;
  private samples = 0;
  private warmupSum = 0;
  private readonly factor: number;

  constructor(private readonly settings: Gradient2Settings) {
    this.estimate = settings.initialLimit;
    this.factor = 2 / (settings.longWindow + 1);
  }

  get limit(): number {
    return this.estimate;
  }

  onSample(rttMs: number, inflight: number): void {
    const shortRtt = Math.max(rttMs, Number.EPSILON);
    if (this.samples < WARMUP_SAMPLES) {
      this.samples++;
      this.warmupSum += shortRtt;
      this.longRtt = this.warmupSum / this.samples;
    } else {
      this.longRtt = this.longRtt * (1 - this.factor) + shortRtt * this.factor;
    }
    if (this.longRtt / shortRtt > 2) this.longRtt *= 0.9;
    // Application-limited: nothing tells whether a higher limit would be served.
    if (inflight < this.estimate / 2) return;
    const { smoothing, queueSize, minLimit, maxLimit } = this.settings;
    const gradient = Math.max(0.5, Math.min(1, this.longRtt / shortRtt));
    const target = this.estimate * gradient + queueSize;
    const smoothed = this.estimate * (1 - smoothing) + target * smoothing;
    this.estimate = Math.max(minLimit, Math.min(maxLimit, smoothed));
  }

  onBaseline(rttMs: number): void {
    this.longRtt = Math.max(rttMs, Number.EPSILON);
    this.samples = Math.max(this.samples, WARMUP_SAMPLES);
  }
}
