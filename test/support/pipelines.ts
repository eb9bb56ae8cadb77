import { Clock, TimerHandle, VirtualClock } from '../../lib/kernel/clock';
import { Policy } from '../../lib/kernel/policy';
import { StandardLayers } from '../../lib/engine/standard-pipeline';

/**
 * The standard layers composed by nesting each policy's `call`, innermost
 * first, as the explorer does for an order the fused pipeline does not take:
 * what `StandardPipeline` must agree with. A synchronous throw becomes a rejection.
 */
export function nestedPipeline(
  layers: StandardLayers,
  invoke: (args: unknown[]) => unknown,
): (args: unknown[]) => Promise<unknown> {
  let next = invoke;
  for (const policy of [
    layers.bulkhead,
    layers.timeLimiter,
    layers.rateLimiter,
    layers.circuitBreaker,
    layers.retry,
    layers.fallback,
  ]) {
    if (policy === undefined) continue;
    const inner = next;
    const p: Policy = policy;
    next = (args) => p.call(inner, args);
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
