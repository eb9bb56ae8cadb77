import { SlidingWindowType } from './circuit-breaker.config';

/**
 * The recent calls a circuit breaker bases its rates on, kept as running
 * totals so that recording a call and reading the totals are O(1).
 */
export interface SlidingWindow {
  /** Calls in the window. */
  readonly totalCalls: number;
  /** Calls recorded as failures. */
  readonly failedCalls: number;
  /** Calls at least as long as the slow-call threshold, failed or not. */
  readonly slowCalls: number;
  /** Calls both slow and failed. */
  readonly slowFailedCalls: number;
  /** Sum of the durations of the calls in the window, in ms. */
  readonly totalDurationMs: number;
  /** Adds one call that ended at `nowMs`, dropping whatever it pushes out. */
  record(nowMs: number, durationMs: number, failed: boolean, slow: boolean): void;
  /** Drops calls that have aged out by `nowMs` (nothing ages out of a count-based window). */
  refresh(nowMs: number): void;
  /** Empties the window. */
  clear(): void;
}

const FAILED = 1;
const SLOW = 2;

/**
 * The last `size` calls, in a ring buffer. One byte of outcome and one
 * float of duration per slot, in a single allocation.
 */
export class CountSlidingWindow implements SlidingWindow {
  totalCalls = 0;
  failedCalls = 0;
  slowCalls = 0;
  slowFailedCalls = 0;
  totalDurationMs = 0;
  private readonly durations: Float64Array;
  private readonly outcomes: Uint8Array;
  private next = 0;

  /** @param size - how many calls the window holds (at least 1) */
  constructor(private readonly size: number) {
    const buffer = new ArrayBuffer(size * 9);
    this.durations = new Float64Array(buffer, 0, size);
    this.outcomes = new Uint8Array(buffer, size * 8, size);
  }

  record(_nowMs: number, durationMs: number, failed: boolean, slow: boolean): void {
    const i = this.next;
    if (this.totalCalls === this.size) {
      const old = this.outcomes[i];
      if (old & FAILED) this.failedCalls--;
      if (old & SLOW) {
        this.slowCalls--;
        if (old & FAILED) this.slowFailedCalls--;
      }
      this.totalDurationMs -= this.durations[i];
    } else {
      this.totalCalls++;
    }
    this.outcomes[i] = (failed ? FAILED : 0) | (slow ? SLOW : 0);
    this.durations[i] = durationMs;
    this.totalDurationMs += durationMs;
    if (failed) this.failedCalls++;
    if (slow) {
      this.slowCalls++;
      if (failed) this.slowFailedCalls++;
    }
    this.next = i + 1 === this.size ? 0 : i + 1;
  }

  refresh(): void {
    // a count-based window only changes when a call is recorded
  }

  clear(): void {
    this.totalCalls = this.failedCalls = this.slowCalls = this.slowFailedCalls = this.totalDurationMs = 0;
    this.next = 0;
  }
}

/** Int32 slots per one-second bucket: total, failed, slow, slow-and-failed. */
const BUCKET_FIELDS = 4;

/**
 * The calls of the last `size` seconds, in one bucket per epoch second
 * (`floor(now / 1000)` on the breaker's clock). Buckets that fall out of the
 * window are subtracted and zeroed lazily, when a later call or read moves
 * the window forward, so a call costs O(1) amortised and an idle breaker
 * costs nothing. Counts and durations share one buffer: no object per bucket.
 */
export class TimeSlidingWindow implements SlidingWindow {
  totalCalls = 0;
  failedCalls = 0;
  slowCalls = 0;
  slowFailedCalls = 0;
  totalDurationMs = 0;
  private readonly counts: Int32Array;
  /** Float32 keeps a 60-second window at 1.2 kB; a per-second sum of call durations needs no more precision. */
  private readonly durations: Float32Array;
  /** The newest second in the window; -Infinity when empty, so the first call starts it afresh. */
  private headSecond = -Infinity;
  private headIndex = 0;

  /** @param size - the window's length in seconds (at least 1) */
  constructor(private readonly size: number) {
    const buffer = new ArrayBuffer(size * (1 + BUCKET_FIELDS) * 4);
    this.counts = new Int32Array(buffer, 0, size * BUCKET_FIELDS);
    this.durations = new Float32Array(buffer, size * BUCKET_FIELDS * 4, size);
  }

  record(nowMs: number, durationMs: number, failed: boolean, slow: boolean): void {
    this.refresh(nowMs);
    const counts = this.counts;
    const b = this.headIndex * BUCKET_FIELDS;
    counts[b]++;
    this.totalCalls++;
    if (failed) {
      counts[b + 1]++;
      this.failedCalls++;
    }
    if (slow) {
      counts[b + 2]++;
      this.slowCalls++;
      if (failed) {
        counts[b + 3]++;
        this.slowFailedCalls++;
      }
    }
    const durations = this.durations;
    const before = durations[this.headIndex];
    durations[this.headIndex] = before + durationMs;
    // Add what the float32 bucket really gained, so subtracting the bucket later leaves no drift.
    this.totalDurationMs += durations[this.headIndex] - before;
  }

  refresh(nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    // A clock read behind the head (never with a monotonic clock) counts in the head bucket.
    // Stryker disable next-line EqualityOperator: the head's own second moves nothing (a gap of 0)
    if (!(second > this.headSecond)) return;
    const gap = second - this.headSecond;
    this.headSecond = second;
    // Stryker disable next-line EqualityOperator: a gap of exactly `size` empties every bucket in the loop below, as clear() does
    if (gap >= this.size) {
      // Stryker disable next-line ConditionalExpression,EqualityOperator: clearing an empty window changes nothing
      if (this.totalCalls > 0) this.clear();
      this.headSecond = second;
      return;
    }
    const counts = this.counts;
    let index = this.headIndex;
    for (let step = 0; step < gap; step++) {
      index = index + 1 === this.size ? 0 : index + 1;
      const b = index * BUCKET_FIELDS;
      // Stryker disable next-line ConditionalExpression: an empty bucket subtracts zeros
      if (counts[b] === 0) continue;
      this.totalCalls -= counts[b];
      this.failedCalls -= counts[b + 1];
      this.slowCalls -= counts[b + 2];
      this.slowFailedCalls -= counts[b + 3];
      this.totalDurationMs -= this.durations[index];
      counts[b] = counts[b + 1] = counts[b + 2] = counts[b + 3] = 0;
      this.durations[index] = 0;
    }
    this.headIndex = index;
  }

  clear(): void {
    this.counts.fill(0);
    this.durations.fill(0);
    this.totalCalls = this.failedCalls = this.slowCalls = this.slowFailedCalls = this.totalDurationMs = 0;
    this.headSecond = -Infinity;
    this.headIndex = 0;
  }
}

/** Builds the window a breaker's config asks for: `size` calls or `size` seconds. */
export function createSlidingWindow(type: SlidingWindowType, size: number): SlidingWindow {
  return type === 'TIME_BASED' ? new TimeSlidingWindow(size) : new CountSlidingWindow(size);
}
