import { defer, Observable } from 'rxjs';
import { Clock } from '../kernel/clock';
import { ExecuteOptions } from '../kernel/cancellation';
import { ComposedLayer, observableComposition, promiseComposition } from './layer-composition';
import { Pipeline } from '../decorators/return-kind';
import { ObservablePipeline } from './method-pipeline';
import { AttemptFunction } from '../kernel/policy';
import { executeThrough, invokeCall } from './execute';
import { FallbackLayer } from './layers';
import type { LayerChoice } from './keyed-pipeline';
import { keyedObservableComposition, keyedPromisePipeline } from './keyed-composition';

/** No arguments: what an Observable's policies pass to a fallback handler. */
const NO_ARGS: unknown[] = [];

/** @internal Faults woven into a pipeline's innermost call (instead of, or before, the real one), when injection is on. */
export interface InjectedFaults {
  /** The call with its faults injected first. */
  wrapCall(call: Pipeline): Pipeline;
  /** Each subscription of `source` with its faults injected first. */
  observe<T>(source: Observable<T>): Observable<T>;
}

/**
 * Several policies composed around any function or Observable, as the
 * decorators compose them around a method: the same order (module option
 * `order`), semantics, events, metrics and fused fast path. Made by
 * `ResilienceRegistry.pipeline`; Resilience4j's `Decorators.ofSupplier`,
 * Polly's `ResiliencePipelineBuilder` and cockatiel's `wrap` map to it.
 *
 * @example
 * ```ts
 * const pipeline = registry.pipeline({ retry: 'inventory', circuitBreaker: 'inventory', timeLimiter: { timeoutDuration: '2s' } });
 * const stock = await pipeline.execute((signal) => fetch(url, { signal }).then((r) => r.json()));
 * ```
 */
export class ResiliencePipeline {
  /** The layers, outermost first, as `[kind, instance name]` pairs. */
  readonly layers: readonly (readonly [kind: string, name: string])[];
  private readonly run: Pipeline;
  private readonly observed: ObservablePipeline;

  /**
   * @internal Made by `ResilienceRegistry.pipeline`.
   *
   * @param name - the pipeline's name
   * @param policies - its layers, innermost first
   * @param clock - the registry's clock
   * @param fallback - its fallback policy, which counts each call for the fallback share
   * @param faults - weaves injected faults into the innermost call, when fault injection is on
   * @param keyed - the layers with those used per key, when the pipeline is (`policies` then names their instances)
   */
  constructor(
    /** The pipeline's name: the instance name it was built from, or its `name` option. */
    readonly name: string,
    policies: readonly ComposedLayer[],
    private readonly clock: Clock,
    private readonly fallback: FallbackLayer | undefined,
    private readonly faults?: InjectedFaults,
    keyed?: readonly LayerChoice[],
  ) {
    this.layers = [...policies].reverse().map(({ kind, policy }) => [kind, policy.name] as const);
    const call = faults === undefined ? invokeCall : faults.wrapCall(invokeCall);
    if (keyed === undefined) {
      this.run = promiseComposition(policies, clock)(call);
      this.observed = observableComposition(policies, clock);
      return;
    }
    const where = `pipeline '${name}'`;
    this.run = keyedPromisePipeline(keyed, call, clock, where);
    const observed = keyedObservableComposition(keyed, clock, where);
    // The key function reads `execute`'s arguments, which follow the function run.
    this.observed = (source, args) => defer(() => observed(source, [undefined, ...args]));
  }

  /**
   * Runs `fn` through every layer; a retry calls it again. `fn` receives
   * its attempt's signal, aborted when the attempt's time limit passes, a
   * hedge copy loses or the caller cancels (the request scope, or
   * `options.signal` for a caller outside any request).
   */
  execute<T>(fn: AttemptFunction<T>, options?: ExecuteOptions): Promise<T> {
    this.fallback?.countCall();
    return executeThrough(this.run, this.clock, fn, options);
  }

  /**
   * `source` with each subscription run through every layer, as a decorated
   * Observable-returning method's: retry re-subscribes, the time limit
   * applies per emitted value, refusals arrive as errors on subscribe.
   * A pipeline used per key reads its keys from `options.args` at each subscription.
   */
  observe<T>(source: Observable<T>, options?: Pick<ExecuteOptions, 'args'>): Observable<T> {
    this.fallback?.countCall();
    const faults = this.faults;
    const injected = faults === undefined ? source : faults.observe(source);
    return this.observed(injected, options?.args === undefined ? NO_ARGS : [...options.args]) as Observable<T>;
  }
}
