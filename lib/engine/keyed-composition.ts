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
 * key: over a given way to call the method, the layers outside the
 * outermost keyed one, around a dispatch to the keyed layers of each
 * call's keys, built once per combination of keys.
 *
 * @param layers - the layers, innermost first, some per key
 * @param clock - the registry's clock
 * @param where - the method or pipeline, for messages
 */
export function keyedPromiseComposition(
  layers: readonly LayerChoice[],
  clock: Clock,
  where: string,
): (invoke: Pipeline) => Pipeline {
  const { inner, outer } = splitAtKeys(layers);
  const around = outer.length === 0 ? undefined : promiseComposition(outer, clock);
  return (invoke) => {
    const dispatched = keyedPipeline('promise', inner, (keyed) => promiseComposition(keyed, clock)(invoke), where);
    return around === undefined ? dispatched : around(dispatched);
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
 * first), some used per key. With no layer outside the keyed ones, each
 * combination of keys has the method's whole pipeline, picked per call.
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
  if (splitAtKeys(layers).outer.length === 0)
    return keyedPipeline(kind, layers, (keyed) => composeLayers(kind, call, keyed, clock), where);
  return methodPipeline(
    kind,
    call,
    keyedPromiseComposition(layers, clock, where),
    keyedObservableComposition(layers, clock, where),
  );
}
