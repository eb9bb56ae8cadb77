import { Clock, TimerHandle, VirtualClock } from '../../lib/kernel/clock';
import { FallbackLayer, STANDARD_ORDER, StandardLayers } from '../../lib/engine/layers';
import { StandardPipeline } from '../../lib/engine/standard-pipeline';

/**
 * The standard layers with one engine per layer, each nested in the next
 * (innermost first), as a custom `order` or a hedge between them composes
 * them: what the engine over all of them at once must agree with.
 */
export function layeredPipeline(
  layers: StandardLayers,
  invoke: (args: unknown[]) => unknown,
  clock: Clock,
): (args: unknown[]) => Promise<unknown> {
  let next = invoke;
  let innermost = true;
  for (const kind of [...STANDARD_ORDER].reverse()) {
    const layer = layers[kind];
    if (layer === undefined) continue;
    next = new StandardPipeline({ [kind]: layer }, next, clock, !innermost).run;
    innermost = false;
  }
  return (args) => {
    try {
      return Promise.resolve(next(args));
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/**
 * Delivers every timer `lagMs` late, as a busy event loop does, while the
 * work itself finishes on time: a limiter's timer can then fire after the
 * late result it should have beaten.
 */
export class LaggingClock implements Clock {
  constructor(
    private readonly inner: VirtualClock,
    private readonly lagMs: number,
  ) {}

  now(): number {
    return this.inner.now();
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    return this.inner.setTimeout(callback, ms + this.lagMs);
  }

  clearTimeout(handle: TimerHandle): void {
    this.inner.clearTimeout(handle);
  }
}

/**
 * Runs `next(args)` under `fallback` alone, as the engine runs a method
 * with only `@Fallback`: a fallback policy has no `execute` of its own.
 */
export function underFallback(
  fallback: FallbackLayer,
  next: (args: unknown[]) => unknown,
  args: unknown[],
): Promise<unknown> {
  return new StandardPipeline({ fallback }, next, new VirtualClock()).run(args);
}
