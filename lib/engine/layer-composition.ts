import { callCancellable } from '../kernel/cancellation';
import { Clock } from '../kernel/clock';
import { Pipeline, ReturnKind } from '../decorators/return-kind';
import { methodPipeline, ObservablePipeline } from './method-pipeline';
import { observeUnder, Policy } from '../kernel/policy';
import { LayerKind, PolicyKind } from '../kernel/resilience.constants';
import { STANDARD_ORDER, StandardPipeline, settle } from './standard-pipeline';

/** One policy of a composed call and the layer kind that places it. */
export interface ComposedLayer {
  readonly kind: LayerKind;
  readonly policy: Policy;
}

// Widened to every layer kind, so any layer can be looked up in it.
const STANDARD_KINDS: readonly LayerKind[] = STANDARD_ORDER;

/**
 * How many of a method's layers (innermost first) the fused pipeline runs:
 * all its standard layers when they are the innermost ones and nest in the
 * pipeline's order, whatever order put them there; otherwise none, and every
 * layer is nested.
 */
export function fusedDepth(layers: readonly { readonly kind: LayerKind }[]): number {
  let depth = 0;
  let rank = STANDARD_KINDS.length;
  for (; depth < layers.length; depth++) {
    const next = STANDARD_KINDS.indexOf(layers[depth].kind);
    if (next < 0 || next >= rank) break;
    rank = next;
  }
  for (let i = depth; i < layers.length; i++) if (STANDARD_KINDS.includes(layers[i].kind)) return 0;
  return depth;
}

/** Where a layer sits in `order` (higher is further in); a hedge sits right inside the retry. */
function rankOf(kind: LayerKind, order: readonly PolicyKind[]): number {
  return kind === 'hedge' ? order.indexOf('retry') + 0.5 : order.indexOf(kind);
}

/** `layers` sorted innermost first under `order` (outermost first), as the decorators compose them. */
export function innermostFirst<L extends { readonly kind: LayerKind }>(layers: L[], order: readonly PolicyKind[]): L[] {
  return layers.sort((a, b) => rankOf(b.kind, order) - rankOf(a.kind, order));
}

/**
 * The promise pipeline over `policies` (innermost first): the innermost
 * standard layers fused into one {@link StandardPipeline} when they allow it,
 * every other layer nested by its `call`. The method of each attempt runs
 * under the caller's cancellation ({@link callCancellable}).
 */
export function promiseComposition(policies: readonly ComposedLayer[], clock: Clock): (invoke: Pipeline) => Pipeline {
  const fused = fusedDepth(policies);
  return (invoke) => {
    // The fused pipeline races the method itself, only when a caller's scope is there.
    let next: Pipeline = (args) => callCancellable(invoke, args);
    if (policies.length === 0) return (args) => settle(() => next(args));
    let outer = policies;
    if (fused > 0) {
      const byKind: Record<string, unknown> = {};
      for (const layer of policies.slice(0, fused)) byKind[layer.kind] = layer.policy;
      next = new StandardPipeline(byKind, invoke, clock).run;
      outer = policies.slice(fused);
    }
    for (const { policy } of outer) {
      const inner = next;
      next = (args) => policy.call(inner, args);
    }
    return next;
  };
}

/** Runs each subscription of an Observable under `policies` (innermost first). */
export function observableComposition(policies: readonly ComposedLayer[]): ObservablePipeline {
  return (source, args) => {
    let observed = source;
    for (const { policy } of policies) observed = observeUnder(policy, observed, args);
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
  return methodPipeline(kind, call, promiseComposition(policies, clock), observableComposition(policies));
}
