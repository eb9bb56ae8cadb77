/**
 * Bucket counts of call durations, filled on the hot path with a few
 * numeric operations (no labels to hash, nothing allocated) and read by
 * the metrics collector at scrape time.
 */
export class DurationHistogram {
  /** Calls per bucket, not cumulative; the last slot is `+Inf`. */
  readonly counts: Float64Array;
  /** Sum of the recorded durations, in ms. */
  sumMs = 0;
  /** Number of recorded durations. */
  count = 0;

  /** @param boundsMs - the buckets' upper bounds in ms, increasing */
  constructor(private readonly boundsMs: Float64Array) {
    this.counts = new Float64Array(boundsMs.length + 1);
  }

  /** Records one duration, in ms. */
  add(ms: number): void {
    const bounds = this.boundsMs;
    let i = 0;
    // Most calls fall in the first buckets, so a forward scan beats a binary search here.
    while (i < bounds.length && ms > bounds[i]) i++;
    this.counts[i]++;
    this.sumMs += ms;
    this.count++;
  }

  /** Adds the counts of `other` (of the same buckets) to its own. */
  addAll(other: DurationHistogram): void {
    for (let i = 0; i < this.counts.length; i++) this.counts[i] += other.counts[i];
    this.sumMs += other.sumMs;
    this.count += other.count;
  }
}

/** The durations of a circuit breaker's calls by outcome: successful, failed, ignored. */
export type OutcomeHistograms = readonly [
  successful: DurationHistogram,
  failed: DurationHistogram,
  ignored: DurationHistogram,
];
