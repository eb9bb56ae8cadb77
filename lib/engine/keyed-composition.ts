import { Observable, throwError } from 'rxjs';
import type { Pipeline, ReturnKind } from '../decorators/return-kind';
import type { Clock } from '../kernel/clock';
import { ComposedLayer, composeLayers, observableComposition, promiseComposition } from './layer-composition';
import { KeyedDispatch, keyedPipeline, LayerChoice, refused } from './keyed-pipeline';
import { methodPipeline, ObservablePipeline } from './method-pipeline';

/**
 * The layers innermost first, cut right outside the outermost layer used
 * per key: the keyed dispatch sits there, so the layers outside it (a
 * fallback, an unkeyed retry, an idempotency key) see its refusals as they
 * see any layer's.
 */
function splitAtKeys(layers: readonly LayerChoice[]): {
  inner: readonly LayerChoice[];
  outer: readonly ComposedLayer[];
} {
  let cut = layers.length;
  while (cut > 0 && !('keyOf' in layers[cut - 1])) cut--;
  return { inner: layers.slice(0, cut), outer: layers.slice(cut) as ComposedLayer[] };
}

/**
 * The promise composition of `layers` (innermost first), some used per
 * key, as a refused call takes it: over a given way to call the method,
 * the layers outside the outermost keyed one, around a dispatch to the
 * keyed layers of each call's keys, built once per combination of keys.
 */
function keyedPromiseComposition(
  layers: readonly LayerChoice[],
  clock: Clock,
  where: string,
): (invoke: Pipeline) => Pipeline {
  const { inner, outer } = splitAtKeys(layers);
  const around = promiseComposition(outer, clock);
  return (invoke) =>
    around(keyedPipeline('promise', inner, (keyed) => promiseComposition(keyed, clock)(invoke), where));
}

/**
 * Each call through the whole pipeline of its keys, built once per
 * combination of keys; a call whose keys are refused goes through
 * `throughOuter` instead, where the layers outside the keyed ones see the
 * refusal. A call whose keys are kept pays nothing for that second path.
 */
function routingRefusals(
  layers: readonly LayerChoice[],
  whole: (layers: ComposedLayer[]) => Pipeline,
  where: string,
  throughOuter: Pipeline,
): Pipeline {
  const dispatch = new KeyedDispatch(layers, whole, where);
  return (args) => {
    let run: Pipeline;
    try {
      run = dispatch.slotFor(args).run;
    } catch {
      // Read again on that path: the layers outside retry it, and a key may have been let go meanwhile.
      return throughOuter(args);
    }
    return run(args);
  };
}

/**
 * The Observable composition of `layers` (innermost first), some used per
 * key: each subscription's keys pick the composition of the keyed layers,
 * built once per combination of keys; a refusal of the keys is an error
 * the layers outside them see, as the method's.
 *
 * @param layers - the layers, innermost first, some per key
 * @param clock - the registry's clock
 * @param where - the method or pipeline, for messages
 */
export function keyedObservableComposition(
  layers: readonly LayerChoice[],
  clock: Clock,
  where: string,
): ObservablePipeline {
  const { inner, outer } = splitAtKeys(layers);
  const dispatch = new KeyedDispatch(inner, (keyed) => observableComposition(keyed, clock), where);
  const around = outer.length === 0 ? undefined : observableComposition(outer, clock);
  return (source, args) => {
    let observed: Observable<unknown>;
    try {
      observed = dispatch.slotFor(args).run(source, args);
    } catch (error) {
      refused(error);
      observed = throwError(() => error);
    }
    return around === undefined ? observed : around(observed, args);
  };
}

/**
 * The whole pipeline of a method of `kind` under `layers` (innermost
 * first), some used per key: each combination of keys has the method's
 * whole pipeline, picked per call. With layers outside the keyed ones (a
 * fallback, an unkeyed retry), a call whose keys are refused
 * (`TooManyInstancesError`, a key function that throws or answers no
 * string) runs through those layers around the keyed dispatch, so they
 * see the refusal as they see a breaker's.
 *
 * @param kind - what the method returns
 * @param call - calls the method itself with its argument array
 * @param layers - the layers, innermost first, some per key
 * @param clock - the registry's clock
 * @param where - the method, for messages
 */
export function keyedComposition(
  kind: ReturnKind,
  call: Pipeline,
  layers: readonly LayerChoice[],
  clock: Clock,
  where: string,
): Pipeline {
  const whole = (keyed: ComposedLayer[]): Pipeline => composeLayers(kind, call, keyed, clock);
  if (splitAtKeys(layers).outer.length === 0) return keyedPipeline(kind, layers, whole, where);
  const throughOuter = methodPipeline(
    kind,
    call,
    keyedPromiseComposition(layers, clock, where),
    keyedObservableComposition(layers, clock, where),
  );
  return routingRefusals(layers, whole, where, throughOuter);
}

/**
 * The promise pipeline of a code pipeline's `layers` (innermost first),
 * some used per key, over `call`; see {@link keyedComposition}.
 *
 * @param layers - the layers, innermost first, some per key
 * @param call - runs the pipeline's function with its argument array
 * @param clock - the registry's clock
 * @param where - the pipeline, for messages
 */
export function keyedPromisePipeline(
  layers: readonly LayerChoice[],
  call: Pipeline,
  clock: Clock,
  where: string,
): Pipeline {
  const whole = (keyed: ComposedLayer[]): Pipeline => promiseComposition(keyed, clock)(call);
  if (splitAtKeys(layers).outer.length === 0) return keyedPipeline('promise', layers, whole, where);
  return routingRefusals(layers, whole, where, keyedPromiseComposition(layers, clock, where)(call));
}
