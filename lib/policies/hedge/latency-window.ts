/**
 * The most recent latencies of an instance, in a ring, and one percentile
 * of them. The percentile is recomputed after every twentieth of the window
 * has been replaced, so a call pays an amortised sort of a few elements, not
 * a full sort.
 */
export class LatencyWindow {
  private readonly ring: Float64Array;
  private readonly sorted: Float64Array;
  private next = 0;
  private size = 0;
  private sinceSort = 0;
  private readonly resortEvery: number;
  private readonly minimum: number;
  private cached = Number.POSITIVE_INFINITY;

  /**
   * @param capacity - how many latencies are kept
   * @param quantile - the quantile in (0, 1) reported by {@link LatencyWindow.percentile}
   */
  constructor(
    capacity: number,
    private readonly quantile: number,
  ) {
    this.ring = new Float64Array(capacity);
    this.sorted = new Float64Array(capacity);
    this.resortEvery = Math.max(1, Math.floor(capacity / 20));
    // A p95 means something once one latency in twenty can sit above it.
    this.minimum = Math.min(capacity, Math.ceil(1 / (1 - quantile) - 1e-9));
  }

  /** Latencies recorded so far (at most the capacity). */
  get count(): number {
    return this.size;
  }

  /**
   * A window of `capacity` latencies reporting `quantile`, holding the
   * latest of this one's (as many as fit), oldest first.
   */
  resized(capacity: number, quantile: number): LatencyWindow {
    const next = new LatencyWindow(capacity, quantile);
    const kept = Math.min(this.size, capacity);
    for (let i = kept; i > 0; i--) next.record(this.ring[(this.next - i + this.ring.length) % this.ring.length]);
    next.resort();
    return next;
  }

  /** Adds one latency in ms. */
  record(ms: number): void {
    this.ring[this.next] = ms;
    this.next = this.next + 1 === this.ring.length ? 0 : this.next + 1;
    if (this.size < this.ring.length) this.size++;
    if (++this.sinceSort >= this.resortEvery || this.size <= this.minimum) this.resort();
  }

  /**
   * The quantile of the window (nearest rank), or `Infinity` while fewer
   * latencies than the quantile needs (`1 / (1 − q)`: 20 for a p95) are known.
   */
  percentile(): number {
    return this.cached;
  }

  private resort(): void {
    this.sinceSort = 0;
    if (this.size < this.minimum) return;
    const view = this.sorted.subarray(0, this.size);
    view.set(this.ring.subarray(0, this.size));
    view.sort();
    this.cached = view[Math.min(this.size - 1, Math.ceil(this.quantile * this.size) - 1)];
  }
}
