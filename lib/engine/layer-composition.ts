import { Observable } from 'rxjs';
import { callCancellable } from '../kernel/cancellation';
import { Clock } from '../kernel/clock';
import { Pipeline, ReturnKind } from '../decorators/return-kind';
import { cancellableSource } from './cancellable-source';
import { methodPipeline, ObservablePipeline } from './method-pipeline';
import { observeAsCalls, Policy } from '../kernel/policy';
import { LayerKind, PolicyKind } from '../kernel/resilience.constants';
import { STANDARD_ORDER, StandardKind, StandardLayers } from './layers';
import { settle, StandardPipeline } from './standard-pipeline';

/** A standard policy as a layer of a composition: its hooks, and its Observable operator when it has one. */
export type StandardPolicy = NonNullable<StandardLayers[StandardKind]> & {
  observe?<T>(source: Observable<T>, args: unknown[]): Observable<T>;
};

/** One policy of a composed call and the layer kind that places it. */
export type ComposedLayer =
  | { readonly kind: StandardKind; readonly policy: StandardPolicy }
  | { readonly kind: Exclude<LayerKind, StandardKind>; readonly policy: Policy };

// Widened to every layer kind, so any layer can be looked up in it.
const STANDARD_KINDS: readonly LayerKind[] = STANDARD_ORDER;

function isStandard(layer: ComposedLayer): layer is Extract<ComposedLayer, { kind: StandardKind }> {
  return STANDARD_KINDS.includes(layer.kind);
}

/**
 * The runs of standard layers the engine fuses, innermost first: each run
 * is the longest stretch of consecutive standard layers that nest in the
 * engine's order; a wrapping layer (a hedge, a cache, an idempotency key) or a
 * layer out of that order starts a new one.
 */
export function fusedRuns<L extends { readonly kind: LayerKind }>(layers: readonly L[]): L[][] {
  const runs: L[][] = [];
  let run: L[] = [];
  let rank = STANDARD_KINDS.length;
  for (const layer of layers) {
    const next = STANDARD_KINDS.indexOf(layer.kind);
    if (next < 0 || next >= rank) {
      if (run.length > 0) runs.push(run);
      run = [];
      rank = STANDARD_KINDS.length;
      if (next < 0) {
        runs.push([layer]);
        continue;
      }
    }
    run.push(layer);
    rank = next;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** Where a layer sits in `order` (higher is further in); a hedge sits right inside the retry, a cache right outside it. */
function rankOf(kind: LayerKind, order: readonly PolicyKind[]): number {
  if (kind === 'hedge') return order.indexOf('retry') + 0.5;
  if (kind === 'cache') return order.indexOf('retry') - 0.5;
  return order.indexOf(kind);
}

/** `layers` sorted innermost first under `order` (outermost first), as the decorators compose them. */
export function innermostFirst<L extends { readonly kind: LayerKind }>(layers: L[], order: readonly PolicyKind[]): L[] {
  return layers.sort((a, b) => rankOf(b.kind, order) - rankOf(a.kind, order));
}

/** The standard layers of one run, by kind, as the engine takes them. */
function byKind(run: readonly ComposedLayer[]): StandardLayers {
  const layers: Record<string, unknown> = {};
  for (const layer of run) layers[layer.kind] = layer.policy;
  return layers;
}

/**
 * The promise pipeline over `policies` (innermost first): each run of
 * standard layers ({@link fusedRuns}) is one engine ({@link StandardPipeline})
 * over the next run in, and a wrapping layer nests the rest by its `call`.
 * The method of each attempt runs under the caller's cancellation
 * ({@link callCancellable}).
 */
export function promiseComposition(policies: readonly ComposedLayer[], clock: Clock): (invoke: Pipeline) => Pipeline {
  const runs = fusedRuns(policies);
  return (invoke) => {
    if (runs.length === 0) return (args) => settle(() => callCancellable(invoke, args));
    let next: Pipeline = invoke;
    let innermost = true;
    for (const run of runs) {
      const layer = run[0];
      if (isStandard(layer)) next = new StandardPipeline(byKind(run), next, clock, !innermost).run;
      else {
        // A wrapping layer right around the method races it against the caller's cancellation itself.
        const inner: Pipeline = innermost ? (args) => callCancellable(invoke, args) : next;
        const { policy } = layer;
        next = (args) => policy.call(inner, args);
      }
      innermost = false;
    }
    return next;
  };
}

/** How `layer` runs each subscription of an Observable: its own operator, or one call per subscription. */
function observerOf(layer: ComposedLayer, clock: Clock): ObservablePipeline {
  const policy = layer.policy;
  if (policy.observe !== undefined) return (source, args) => policy.observe!(source, args);
  if (!isStandard(layer)) return (source) => observeAsCalls((next, arg) => layer.policy.call(next, arg), source);
  // A standard layer without an operator (the rate limiter): each subscription is one call of the engine over it.
  const engine = new StandardPipeline({ [layer.kind]: layer.policy }, callWithArgument, clock);
  return (source) => observeAsCalls((next, arg) => engine.run([next, arg]) as Promise<never>, source);
}

/** Calls the function in a call's argument array with the argument beside it. */
function callWithArgument(args: unknown[]): unknown {
  return (args[0] as (arg: unknown) => unknown)(args[1]);
}

/**
 * Runs each subscription of an Observable under `policies` (innermost
 * first), the source raced against the caller's cancellation
 * ({@link cancellableSource}) as a promise attempt's method is.
 */
export function observableComposition(policies: readonly ComposedLayer[], clock: Clock): ObservablePipeline {
  const observers = policies.map((layer) => observerOf(layer, clock));
  return (source, args) => {
    let observed = cancellableSource(source);
    for (const observe of observers) observed = observe(observed, args);
    return observed;
  };
}

/**
 * The whole pipeline of a call of `kind` under `policies` (innermost first):
 * the decorators' composition, shared by decorated methods and code pipelines.
 */
export function composeLayers(
  kind: ReturnKind,
  call: Pipeline,
  policies: readonly ComposedLayer[],
  clock: Clock,
): Pipeline {
  return methodPipeline(kind, call, promiseComposition(policies, clock), observableComposition(policies, clock));
}
