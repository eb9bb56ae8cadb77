import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Clock, TimerHandle } from '../../kernel/clock';

/** A source of event-loop delay readings. */
export interface EventLoopDelayProbe {
  /** The largest delay seen since the previous call, in ms; starts a new period. */
  takeMaxMs(): number;
  /** Stops measuring. */
  close(): void;
}

/** How finely Node samples the event loop's delay, in ms. */
const RESOLUTION_MS = 10;

/** The event loop's delay as Node's `perf_hooks.monitorEventLoopDelay` measures it. */
export function nodeEventLoopDelayProbe(): EventLoopDelayProbe {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  return {
    takeMaxMs() {
      // The histogram counts in ns and includes the sampling period itself.
      const max = histogram.count === 0 ? 0 : Math.max(0, histogram.max / 1e6 - RESOLUTION_MS);
      histogram.reset();
      return max;
    },
    close: () => histogram.disable(),
  };
}

/**
 * Reads the probe once every `intervalMs` on the clock and says whether the
 * last period's maximum delay was over `thresholdMs`. Refusals for it stop
 * within two periods after the delay falls.
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

  /** Whether the event loop lagged more than the threshold in the last period. */
  get overloaded(): boolean {
    return this.lastMaxMs > this.thresholdMs;
  }

  /** The last period's maximum delay, in ms. */
  get delayMs(): number {
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
