import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Clock, TimerHandle } from '../../kernel/clock';

/** A source of event-loop delay readings. */
export interface EventLoopDelayProbe {
  /** The largest delay seen since the previous call, in ms; starts a new period. */
  takeMaxMs(): number;
  /** The largest delay seen since the previous {@link EventLoopDelayProbe.takeMaxMs}, in ms; the period goes on. */
  peekMaxMs(): number;
  /** Stops measuring. */
  close(): void;
}

/** How finely Node samples the event loop's delay, in ms. */
const RESOLUTION_MS = 10;

/** The event loop's delay as Node's `perf_hooks.monitorEventLoopDelay` measures it. */
export function nodeEventLoopDelayProbe(): EventLoopDelayProbe {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  // The histogram counts in ns and includes the sampling period itself.
  const peekMaxMs = (): number => (histogram.count === 0 ? 0 : Math.max(0, histogram.max / 1e6 - RESOLUTION_MS));
  return {
    takeMaxMs() {
      const max = peekMaxMs();
      histogram.reset();
      return max;
    },
    peekMaxMs,
    close: () => histogram.disable(),
  };
}

/**
 * Reads the probe once every `intervalMs` on the clock and says whether the
 * last period's maximum delay was over `thresholdMs`. A delay over it that
 * the probe records within a period counts at once, not only at the period's
 * end: a lag the loop has just recovered from closes the signal before the
 * next request is let in, so a request let in is not followed by refusals
 * for a lag the probe had seen before it. Refusals for it stop within two
 * periods after the delay falls.
 */
export class EventLoopDelaySignal {
  private lastMaxMs = 0;
  // undefined while stopped (TimerHandle admits it).
  private timer: TimerHandle;

  constructor(
    private readonly probe: EventLoopDelayProbe,
    private readonly clock: Clock,
    private readonly thresholdMs: number,
    private readonly intervalMs: number,
  ) {}

  /** Whether the event loop lagged more than the threshold in the last period, or since it ended. */
  get overloaded(): boolean {
    return this.delayMs > this.thresholdMs;
  }

  /** The last period's maximum delay, in ms; or the delay seen since, once that is over the threshold. */
  get delayMs(): number {
    if (this.lastMaxMs <= this.thresholdMs) {
      const since = this.probe.peekMaxMs();
      if (since > this.thresholdMs) this.lastMaxMs = since;
    }
    return this.lastMaxMs;
  }

  /** Starts sampling; the first reading comes one period later. */
  start(): void {
    if (this.timer === undefined) this.schedule();
  }

  /** Stops sampling and the probe. */
  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.probe.close();
  }

  private schedule(): void {
    const timer = this.clock.setTimeout(() => {
      this.lastMaxMs = this.probe.takeMaxMs();
      this.schedule();
    }, this.intervalMs);
    // A sampler must not keep a process alive that has nothing else to do.
    (timer as { unref?: () => void } | null)?.unref?.();
    this.timer = timer;
  }
}
