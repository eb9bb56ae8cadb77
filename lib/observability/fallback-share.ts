import { Clock } from '../kernel/clock';
import { Unsubscribe } from '../kernel/events';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { CachePolicy } from '../policies/cache/cache.policy';

const SLOTS = 10;

/** Calls and fallback answers in a sliding time window of {@link SLOTS} slots. */
class WindowCounts {
  private readonly slotOf = new Float64Array(SLOTS).fill(-Infinity);
  private readonly calls = new Float64Array(SLOTS);
  private readonly fallbacks = new Float64Array(SLOTS);

  constructor(
    private readonly clock: Clock,
    private readonly slotMs: number,
  ) {}

  addCall(): void {
    this.calls[this.current()]++;
  }

  addFallback(): void {
    this.fallbacks[this.current()]++;
  }

  totals(): { calls: number; fallbacks: number } {
    const oldest = Math.floor(this.clock.now() / this.slotMs) - SLOTS + 1;
    let calls = 0;
    let fallbacks = 0;
    for (let i = 0; i < SLOTS; i++) {
      if (this.slotOf[i] < oldest) continue;
      calls += this.calls[i];
      fallbacks += this.fallbacks[i];
    }
    return { calls, fallbacks };
  }

  private current(): number {
    const slot = Math.floor(this.clock.now() / this.slotMs);
    const i = ((slot % SLOTS) + SLOTS) % SLOTS;
    if (this.slotOf[i] !== slot) {
      this.slotOf[i] = slot;
      this.calls[i] = 0;
      this.fallbacks[i] = 0;
    }
    return i;
  }
}

/** Calls, fallback answers and their share (percent, 0 without calls) over the window. */
export interface FallbackShareCounts {
  /** Calls to `@Fallback` methods in the window. */
  readonly calls: number;
  /** Of those, the calls a fallback handler answered. */
  readonly fallbacks: number;
  /** `fallbacks` as a percent of `calls` (0 to 100; 0 without calls). */
  readonly share: number;
}

/** The share of fallback answers over the window, overall and per method. */
export interface FallbackShareSnapshot extends FallbackShareCounts {
  readonly methods: Readonly<Record<string, FallbackShareCounts>>;
}

const counts = (calls: number, fallbacks: number): FallbackShareCounts => ({
  calls,
  fallbacks,
  share: calls === 0 ? 0 : (fallbacks * 100) / calls,
});

/**
 * Counts calls to `@Fallback` methods and the answers their fallbacks gave
 * (and calls through caches and their stale answers),
 * over a sliding window of `windowMs` (kept in ten slots, so the window
 * reaches back between 90 % and 100 % of it).
 */
export class FallbackShare {
  private readonly tracked = new Map<{ readonly name: string }, WindowCounts>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  /**
   * Starts counting the fallbacks of `policy`, and the calls of the method
   * it guards through `countCalls` (FallbackPolicy itself never sees a call
   * that succeeds); the returned function stops both.
   */
  track(policy: FallbackPolicy, countCalls: (onCall: () => void) => Unsubscribe): Unsubscribe {
    const window = new WindowCounts(this.clock, this.windowMs / SLOTS);
    this.tracked.set(policy, window);
    const stopFallbacks = policy.onFallback(() => window.addFallback());
    const stopStale = policy.onStaleAnswer(() => window.addFallback());
    const stopCalls = countCalls(() => window.addCall());
    return () => {
      stopFallbacks();
      stopStale();
      stopCalls();
      this.tracked.delete(policy);
    };
  }

  /**
   * Starts counting the calls through `cache` and its stale answers, which
   * are degraded answers as a fallback's are (under the cache's name). A
   * call of a method or pipeline with a fallback is left to the fallback's
   * count, its stale answer too ({@link FallbackPolicy.onStaleAnswer}). The
   * returned function stops it.
   */
  trackCache(cache: CachePolicy): Unsubscribe {
    const window = new WindowCounts(this.clock, this.windowMs / SLOTS);
    this.tracked.set(cache, window);
    const stop = cache.onResult(({ result, guarded }) => {
      if (guarded) return;
      window.addCall();
      if (result === 'stale') window.addFallback();
    });
    return () => {
      stop();
      this.tracked.delete(cache);
    };
  }

  /** The counts now, overall and by method (`Class.method`) or cache instance. */
  snapshot(): FallbackShareSnapshot {
    let calls = 0;
    let fallbacks = 0;
    // No prototype: a pipeline may be named `__proto__`.
    const methods = Object.create(null) as Record<string, FallbackShareCounts>;
    for (const [policy, window] of this.tracked) {
      const totals = window.totals();
      calls += totals.calls;
      fallbacks += totals.fallbacks;
      const same = methods[policy.name];
      methods[policy.name] =
        same === undefined
          ? counts(totals.calls, totals.fallbacks)
          : counts(same.calls + totals.calls, same.fallbacks + totals.fallbacks);
    }
    return { ...counts(calls, fallbacks), methods };
  }
}
