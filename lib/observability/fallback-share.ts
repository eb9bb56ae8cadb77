import { Clock } from '../kernel/clock';
import { Unsubscribe } from '../kernel/events';
import type { PolicyTelemetry } from '../kernel/telemetry';

const SLOTS = 10;

/** An instance that answers calls, some with a degraded answer: a fallback policy, a cache. */
export interface AnswerSource {
  /** The name its counts are shown under. */
  readonly name: string;
  /** See {@link PolicyTelemetry.countAnswers}. */
  readonly countAnswers: NonNullable<PolicyTelemetry['countAnswers']>;
}

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
   * Starts counting the calls and degraded answers `source` reports (a
   * fallback policy's answers, a cache's stale answers), under its name;
   * the returned function stops it.
   */
  track(source: AnswerSource): Unsubscribe {
    const window = new WindowCounts(this.clock, this.windowMs / SLOTS);
    const key = { name: source.name };
    this.tracked.set(key, window);
    const stop = source.countAnswers(
      () => window.addCall(),
      () => window.addFallback(),
    );
    return () => {
      stop();
      this.tracked.delete(key);
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
