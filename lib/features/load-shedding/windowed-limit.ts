import { AdaptiveLimit } from './adaptive-limit';

/**
 * Feeds an adaptive limit one sample per window of finished requests: the
 * window's average latency and the most requests it saw in flight (Netflix
 * concurrency-limits' `WindowedLimit`). One request's latency varies with
 * its own work; a window's average varies far less, so an algorithm that
 * compares latencies reads queueing rather than the spread of service
 * times. A dropped request closes its window at once: a drop needs no
 * averaging to be believed.
 */
export class WindowedLimit implements AdaptiveLimit {
  private count = 0;
  private sum = 0;
  private maxInflight = 0;

  /**
   * @param delegate - the algorithm fed once per window
   * @param windowSize - finished requests per window
   */
  constructor(
    private readonly delegate: AdaptiveLimit,
    private readonly windowSize: number,
  ) {}

  get limit(): number {
    return this.delegate.limit;
  }

  onSample(rttMs: number, inflight: number, dropped: boolean): void {
    this.count++;
    this.sum += rttMs;
    if (inflight > this.maxInflight) this.maxInflight = inflight;
    if (!dropped && this.count < this.windowSize) return;
    this.delegate.onSample(this.sum / this.count, this.maxInflight, dropped);
    this.count = 0;
    this.sum = 0;
    this.maxInflight = 0;
  }
}
