import { AdaptiveLimitBounds, BaselineLimit, log10Step } from './adaptive-limit';

/** Settings of {@link VegasLimit}. */
export interface VegasSettings extends AdaptiveLimitBounds {
  /** How much a new estimate moves the limit, in (0, 1]. Default 1. */
  readonly smoothing: number;
}

/**
 * Netflix concurrency-limits' Vegas algorithm
 * (`concurrency-limits-core/.../limit/VegasLimit.java`), after TCP Vegas:
 * the queue is estimated as `limit × (1 − minRtt / rtt)`; with no queue the
 * limit grows by β = 6·log10(limit), below α = 3·log10(limit) by log10(limit),
 * above β it shrinks by log10(limit), and a dropped request shrinks it.
 * The no-load latency (`minRtt`) is the least latency seen since it was last
 * measured afresh ({@link VegasLimit.onBaseline}), so that a lasting change
 * of the baseline is learnt. A request dropped sooner than that counts for
 * neither: it ended before it could have been served, so it says nothing of
 * the queue behind the limit. Its client gave up on time spent before it
 * was let in (in the event loop or the kernel's queue), which the limit does
 * not govern, or it was refused further in at once (an open breaker).
 *
 * Between α and β the limit holds, so a limit coming down stops at β queued.
 * Measured afresh under a lowered limit that requests filled, it grows back
 * from that limit and stops at α, the least queue it keeps. A window is read
 * once its requests have finished, so the one after a raise was let in
 * mostly under the lower limit and shows less queue than the raised limit
 * holds: it does not raise the limit again (TCP Vegas, likewise, adjusts
 * once per round trip).
 */
export class VegasLimit implements BaselineLimit {
  private estimate: number;
  private rttNoLoad = 0;
  /** Whether the last window raised the limit: the next one was let in mostly under the lower limit. */
  private raised = false;

  constructor(private readonly settings: VegasSettings) {
    this.estimate = settings.initialLimit;
  }

  get limit(): number {
    return this.estimate;
  }

  onSample(rttMs: number, inflight: number, dropped: boolean): void {
    const rtt = Math.max(rttMs, Number.EPSILON);
    if (this.rttNoLoad === 0 || rtt < this.rttNoLoad) {
      // Dropped this soon, it waited for nothing behind the limit: no sign of the queue, nor a no-load latency.
      if (!dropped) this.rttNoLoad = rtt;
      return;
    }
    const current = this.estimate;
    const step = log10Step(current);
    const justRaised = this.raised;
    this.raised = false;
    let next: number;
    if (dropped) {
      next = current - step;
    } else if (inflight * 2 < current) {
      return;
    } else {
      const queue = Math.ceil(current * (1 - this.rttNoLoad / rtt));
      const alpha = 3 * step;
      const beta = 6 * step;
      if (queue <= step) next = current + beta;
      else if (queue < alpha) next = current + step;
      else if (queue > beta) next = current - step;
      else return;
      // Let in mostly under the limit before the raise, the window shows less queue than the raise holds.
      if (justRaised && next > current) return;
    }
    const { minLimit, maxLimit, smoothing } = this.settings;
    const bounded = Math.max(minLimit, Math.min(maxLimit, next));
    this.estimate = (1 - smoothing) * current + smoothing * bounded;
    this.raised = next > current;
  }

  onBaseline(rttMs: number, heldLimit: number | undefined): void {
    this.rttNoLoad = Math.max(rttMs, Number.EPSILON);
    if (heldLimit !== undefined) this.estimate = Math.min(this.estimate, heldLimit);
  }
}
