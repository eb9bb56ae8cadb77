import { AdaptiveLimit, BaselineLimit } from './adaptive-limit';
import { WindowedLimit } from './windowed-limit';

/** Settings of {@link BaselineProbe}. */
export interface BaselineProbeSettings {
  /** Finished requests per latency sample, and per probe. */
  readonly windowSize: number;
  /** A probe runs about every `probeMultiplier × limit` samples (with jitter). */
  readonly probeMultiplier: number;
  /** The limit never falls below this, even while probing. */
  readonly minLimit: number;
  /** Uniform [0, 1) source for the probe jitter. */
  readonly random: () => number;
}

/**
 * Measures an algorithm's no-load latency with the queue drained, at the
 * start and now and then after. Under a lasting overload every request is
 * queued behind the limit, so an algorithm that learns its baseline from
 * what it serves learns a queued latency, and its limit settles that much
 * above the server's capacity: Vegas's own probe takes the latency of the
 * moment, Gradient2's long-term average drifts to it. A probe halves the
 * limit (not below `minLimit`) until a window of requests admitted with no
 * more than that in flight has finished, then restores it; once the others
 * admitted within the halved limit have finished too, the average latency
 * of all of them is the baseline, given with the halved limit when requests
 * filled it (Vegas grows back from there). Netflix concurrency-limits'
 * `GradientLimit` probes the same way, lowering its limit while it measures.
 * Between probes, the algorithm reads one sample per window
 * ({@link WindowedLimit}).
 */
export class BaselineProbe implements AdaptiveLimit {
  private readonly windowed: WindowedLimit;
  private probeLimit = 0;
  /** Requests admitted within the probe limit still to be heard from; 0 when not probing. */
  private awaited = 0;
  /** Whether the limit is held at the probe limit. */
  private holding = false;
  private sinceProbe = 0;
  private nextProbe = 0;
  private served = 0;
  private servedSum = 0;
  /** Whether a request of the probe was let in with the probe limit full. */
  private filled = false;

  constructor(
    private readonly algorithm: BaselineLimit,
    private readonly settings: BaselineProbeSettings,
  ) {
    this.windowed = new WindowedLimit(algorithm, settings.windowSize);
    this.startProbe();
  }

  get limit(): number {
    return this.holding ? Math.min(this.probeLimit, this.algorithm.limit) : this.algorithm.limit;
  }

  onSample(rttMs: number, inflight: number, dropped: boolean): void {
    // Admitted with more in flight than the probe allows: queued, or no part of the probe.
    if (this.awaited === 0 || inflight > this.probeLimit) {
      if (this.holding) return;
      this.windowed.onSample(rttMs, inflight, dropped);
      if (this.awaited === 0 && ++this.sinceProbe >= this.nextProbe * this.algorithm.limit) this.startProbe();
      return;
    }
    if (inflight === this.probeLimit) this.filled = true;
    if (!dropped) {
      this.served++;
      this.servedSum += rttMs;
    }
    if (--this.awaited > 0) {
      // After a window, the limit is restored; the requests still in flight within the probe limit are the
      // longest of those admitted, and the average waits for them so as not to keep only the short ones.
      if (this.awaited === this.probeLimit) this.holding = false;
      return;
    }
    this.holding = false;
    if (this.served > 0)
      this.algorithm.onBaseline(this.servedSum / this.served, this.filled ? this.probeLimit : undefined);
    this.sinceProbe = 0;
    this.nextProbe = (0.5 + this.settings.random() * 0.5) * this.settings.probeMultiplier * this.settings.windowSize;
  }

  private startProbe(): void {
    this.holding = true;
    this.probeLimit = Math.max(this.settings.minLimit, Math.floor(this.algorithm.limit / 2));
    this.awaited = this.settings.windowSize + this.probeLimit;
    this.served = 0;
    this.servedSum = 0;
    this.filled = false;
  }
}
