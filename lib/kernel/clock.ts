/**
 * Opaque handle returned by {@link Clock.setTimeout}.
 */
export type TimerHandle = unknown;

/**
 * The source of time and timers for every policy. Supply one through the
 * module option `clock` so tests drive time instead of sleeping.
 */
export interface Clock {
  /** Milliseconds on a monotonic-enough scale; only differences are used. */
  now(): number;
  /** Runs `callback` once after `ms` milliseconds. */
  setTimeout(callback: () => void, ms: number): TimerHandle;
  /** Cancels a timer made by {@link Clock.setTimeout}; unknown handles are ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/** The longest delay Node's `setTimeout` honours; a longer one fires after 1 ms. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * A timer longer than Node's timers can hold, kept as a chain of shorter
 * ones until its due time (on `performance.now()`) arrives. It can be
 * unref'd like a Node timer.
 */
class ChainedTimer {
  private timer!: NodeJS.Timeout;
  private referenced = true;

  constructor(
    private readonly callback: () => void,
    private readonly due: number,
  ) {
    this.arm();
  }

  /** Lets the process exit while only this timer is pending. */
  unref(): this {
    this.referenced = false;
    this.timer.unref();
    return this;
  }

  /** Keeps the process alive while this timer is pending (the default). */
  ref(): this {
    this.referenced = true;
    this.timer.ref();
    return this;
  }

  /** Whether the timer keeps the process alive. */
  hasRef(): boolean {
    return this.referenced;
  }

  /** Cancels the timer. */
  clear(): void {
    clearTimeout(this.timer);
  }

  private arm(): void {
    const left = this.due - performance.now();
    this.timer =
      left > MAX_TIMER_DELAY_MS
        ? setTimeout(this.step, MAX_TIMER_DELAY_MS)
        : setTimeout(this.callback, Math.max(0, left));
    if (!this.referenced) this.timer.unref();
  }

  private readonly step = (): void => this.arm();
}

const perf = performance;

/**
 * The real clock: `performance.now()` and Node's timers. A delay longer
 * than Node's timers hold (about 24.8 days) is chained, never fired early.
 */
export const systemClock: Clock = {
  // The global \`performance\` is a lazy getter on Node: reading it on every call costs more than the clock.
  now: () => perf.now(),
  setTimeout: (callback, ms) =>
    ms > MAX_TIMER_DELAY_MS ? new ChainedTimer(callback, performance.now() + ms) : setTimeout(callback, ms),
  clearTimeout: (handle) => (handle instanceof ChainedTimer ? handle.clear() : clearTimeout(handle as NodeJS.Timeout)),
};

interface VirtualTimer {
  at: number;
  seq: number;
  callback: () => void;
  cancelled: boolean;
}

/**
 * How many timers scheduled at one instant may fire there, in one call to
 * {@link VirtualClock.advance} or {@link VirtualClock.runUntilSettled},
 * before the clock reports that time cannot move on.
 */
const MAX_ROUNDS_AT_ONE_INSTANT = 10_000;

/**
 * A clock that only moves when told to. Timers fire in due order while
 * {@link VirtualClock.advance} moves time forward, and pending promise
 * callbacks run between timers, so async code behaves as it would in real
 * time without any real waiting.
 *
 * Delays are read as {@link systemClock} reads them, except that Node's
 * timers wait at least 1 ms: a delay of `NaN`, below 0 or `-Infinity`
 * counts as 0 and fires at the current instant, in the order scheduled (on
 * Node they and 0 all wait 1 ms, in that same order); a delay longer than
 * Node's timers hold is exact; a delay of `Infinity` never fires.
 */
export class VirtualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly heap: VirtualTimer[] = [];

  /** @param start - the initial reading of {@link VirtualClock.now}, in ms; a finite number. */
  constructor(start = 0) {
    if (!Number.isFinite(start))
      throw new RangeError(`VirtualClock: start must be a finite number of milliseconds, got ${start}`);
    this.current = start;
  }

  /** The current virtual time in ms. */
  now(): number {
    return this.current;
  }

  /**
   * Schedules `callback` at `now() + ms`. A delay of `NaN` or below 0 counts
   * as 0; one of `Infinity` never fires.
   */
  setTimeout(callback: () => void, ms: number): TimerHandle {
    const delay = Number(ms);
    const timer: VirtualTimer = {
      at: delay > 0 ? this.current + delay : this.current,
      seq: this.seq++,
      callback,
      cancelled: false,
    };
    this.push(timer);
    return timer;
  }

  /** Cancels a pending timer. */
  clearTimeout(handle: TimerHandle): void {
    if (handle && typeof handle === 'object' && 'cancelled' in handle) (handle as VirtualTimer).cancelled = true;
  }

  /** Number of timers still waiting to fire (one of `Infinity` delay included). */
  get pendingTimers(): number {
    return this.heap.reduce((n, t) => (t.cancelled ? n : n + 1), 0);
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way
   * (in order) and letting pending promise callbacks settle after each one.
   * Rejects with a `RangeError` when `ms` is not a finite non-negative
   * number, and with an error when timers keep scheduling others at one
   * instant (10 000 of them) so that time cannot move on.
   */
  async advance(ms: number): Promise<void> {
    if (!(Number.isFinite(ms) && ms >= 0))
      throw new RangeError(`VirtualClock.advance: ms must be a finite non-negative number of milliseconds, got ${ms}`);
    await this.fireUntil(this.current + ms, 'advance');
  }

  /**
   * Advances to the next pending timer and fires it (and any due at the same
   * instant). Answers `false`, and leaves time where it is, when no timer is
   * pending but those of `Infinity` delay.
   */
  async runNext(): Promise<boolean> {
    const next = this.peek();
    if (next === undefined || next.at === Number.POSITIVE_INFINITY) return false;
    await this.advance(next.at - this.current);
    return true;
  }

  /**
   * Fires timers in due order, letting promise callbacks run after each,
   * until `promise` settles; answers what it resolves to, or rejects with
   * its error. Bounded: fails when the promise is still pending after
   * `maxTime` ms of virtual time (default 60 s, a finite non-negative
   * number), when no timer is left that could settle it, or when timers keep
   * scheduling others at one instant (10 000 of them) so that time cannot
   * move on.
   *
   * @example
   * ```ts
   * const quote = await clock.runUntilSettled(pricing.quote('sku-1'), { maxTime: 10_000 });
   * ```
   */
  async runUntilSettled<T>(promise: PromiseLike<T>, options: { readonly maxTime?: number } = {}): Promise<T> {
    const maxTime = options.maxTime ?? 60_000;
    if (!(Number.isFinite(maxTime) && maxTime >= 0))
      throw new RangeError(
        `VirtualClock.runUntilSettled: maxTime must be a finite non-negative number of milliseconds, got ${maxTime}`,
      );
    let settled = false;
    const outcome = Promise.resolve(promise);
    outcome.then(
      () => (settled = true),
      () => (settled = true),
    );
    const limit = this.current + maxTime;
    await VirtualClock.settle();
    while (!settled) {
      const next = this.peek();
      if (next === undefined)
        throw new Error(
          `VirtualClock.runUntilSettled: the promise is still pending at ${this.current} ms and no timer is left to fire (it waits on something other than this clock)`,
        );
      if (next.at > limit) {
        await this.fireUntil(limit, 'runUntilSettled');
        if (settled) break;
        throw new Error(
          `VirtualClock.runUntilSettled: the promise did not settle within maxTime ${maxTime} ms of virtual time (next timer at ${next.at} ms)`,
        );
      }
      await this.fireUntil(next.at, 'runUntilSettled');
    }
    return outcome;
  }

  /** Lets every queued promise callback (and any `setImmediate` before it) run. */
  static settle(): Promise<void> {
    return new Promise((resolve) => setImmediate(resolve));
  }

  /**
   * Fires every timer due up to `target` in order, settling promise
   * callbacks after each, then sets the time to `target`. Fails, naming
   * `caller`, when more than `MAX_ROUNDS_AT_ONE_INSTANT` timers
   * scheduled at one instant fire there.
   */
  private async fireUntil(target: number, caller: string): Promise<void> {
    await VirtualClock.settle();
    let instant = this.current;
    let firstSeqAtInstant = this.seq;
    let rounds = 0;
    for (;;) {
      const next = this.peek();
      if (next === undefined || next.at > target) break;
      if (next.at !== instant) {
        instant = next.at;
        firstSeqAtInstant = this.seq;
        rounds = 0;
      } else if (next.seq >= firstSeqAtInstant && ++rounds > MAX_ROUNDS_AT_ONE_INSTANT) {
        throw new Error(
          `VirtualClock.${caller}: cannot make progress: ${MAX_ROUNDS_AT_ONE_INSTANT} timers scheduled at ${instant} ms fired at ${instant} ms (a timer that schedules another with delay 0 each time it fires keeps time from moving)`,
        );
      }
      this.pop();
      this.current = next.at;
      next.callback();
      await VirtualClock.settle();
    }
    this.current = target;
    await VirtualClock.settle();
  }

  private peek(): VirtualTimer | undefined {
    while (this.heap.length > 0 && this.heap[0].cancelled) this.pop();
    return this.heap[0];
  }

  private push(timer: VirtualTimer): void {
    const heap = this.heap;
    let i = heap.push(timer) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!earlier(heap[i], heap[parent])) break;
      [heap[i], heap[parent]] = [heap[parent], heap[i]];
      i = parent;
    }
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && earlier(heap[l], heap[m])) m = l;
      if (r < heap.length && earlier(heap[r], heap[m])) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m], heap[i]];
      i = m;
    }
  }
}

function earlier(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
