import { throwError } from 'rxjs';
import type { Pipeline, ReturnKind } from '../decorators/return-kind';
import type { ComposedLayer } from './layer-composition';
import { KEY_NOT_A_STRING } from '../kernel/resilience.messages';
import { previewValue } from '../config/value-preview';
import type { Unsubscribe } from '../kernel/events';
import { refusal } from '../kernel/refusal';

/** The instance of one key, as the keys of an instance keep it. */
export interface KeyEntry<I> {
  readonly key: string;
  readonly instance: I;
}

/** What a keyed layer asks of the keys of its instance (the registry's `KeyedInstances`). */
export interface InstanceKeys<I> {
  /** The entry of `key`, used now: kept, or made; throws when it cannot be made. */
  entry(key: string): KeyEntry<I>;
  /** Marks a held `entry` used, reading no clock; false when it has been evicted. */
  hit(entry: KeyEntry<I>): boolean;
  /** Each key evicted from now on. */
  onEvicted(listener: (entry: KeyEntry<I>) => void): Unsubscribe;
}

/** A layer used per key: the keys of its instance, and how a call's key is read from its arguments. */
export interface KeyedLayer {
  readonly kind: ComposedLayer['kind'];
  readonly keys: InstanceKeys<ComposedLayer['policy']>;
  readonly keyOf: (...args: unknown[]) => unknown;
}

/** A layer of a composition: one instance for every call, or one per key. */
export type LayerChoice = ComposedLayer | KeyedLayer;

function isKeyed(layer: LayerChoice): layer is KeyedLayer {
  return 'keyOf' in layer;
}

/** What was built over the instances of one combination of keys (a pipeline, a composition), and their entries. */
interface Slot<T> {
  readonly run: T;
  /** The layers it was built over, one instance each. */
  readonly layers: readonly ComposedLayer[];
  readonly entries: readonly KeyEntry<ComposedLayer['policy']>[];
}

/**
 * The pipeline of a composition with layers used per key: each call reads
 * its keys from its arguments and runs through the pipeline built over
 * those keys' instances, built once per combination and kept while the
 * keys are. A call whose keys are kept costs the key function, one Map
 * lookup and a few field writes per key more than an unkeyed call: no
 * clock reading (the keys' sweeps date their use). A key that cannot
 * be made (`TooManyInstancesError`), or a key function that throws or
 * answers no string, refuses the call as the method's kind refuses: a
 * rejected Promise, or an Observable that errors on subscribe.
 *
 * @param kind - what the method returns
 * @param layers - the layers, innermost first, some per key
 * @param build - composes the pipeline over one instance per layer
 * @param where - the method or pipeline, for messages
 */
export function keyedPipeline(
  kind: ReturnKind,
  layers: readonly LayerChoice[],
  build: (layers: ComposedLayer[]) => Pipeline,
  where: string,
): Pipeline {
  const dispatch = new KeyedDispatch(layers, build, where);
  return refusingAs(kind, (args) => dispatch.slotFor(args).run(args));
}

/** `run`, whose synchronous throw is answered as the method's kind refuses. */
function refusingAs(kind: ReturnKind, run: Pipeline): Pipeline {
  return (args) => {
    try {
      return run(args);
    } catch (error) {
      refused(error);
      return kind === 'observable' ? throwError(() => error) : Promise.reject(error);
    }
  };
}

/** Marks what a dispatch threw as a refusal: the call never reached a layer, so a retry around it keeps an earlier attempt's error. */
export function refused(error: unknown): void {
  if (typeof error === 'object' && error !== null) refusal(error);
}

/**
 * What `build` makes over the instances of the keys each call's arguments
 * give, made once per combination of keys and kept while the keys are.
 */
export class KeyedDispatch<T> {
  private readonly slots = new Map<string, Slot<T>>();
  private readonly keyed: readonly KeyedLayer[];
  /** Every keyed layer reads its key with the same function: one key per call, not a combination. */
  private readonly oneKey: boolean;

  constructor(
    private readonly layers: readonly LayerChoice[],
    private readonly build: (layers: ComposedLayer[]) => T,
    private readonly where: string,
  ) {
    this.keyed = layers.filter(isKeyed);
    this.oneKey = this.keyed.every((layer) => layer.keyOf === this.keyed[0].keyOf);
    // A slot over an evicted key goes with it: the method holds no instance the registry let go.
    for (const { keys } of this.keyed) keys.onEvicted((entry) => this.forget(entry));
  }

  /** The slot of the keys `args` give, built when they have none (or one of its keys was evicted). */
  slotFor(args: unknown[]): Slot<T> {
    const keyed = this.keyed;
    if (this.oneKey) {
      const key = this.keyFrom(keyed[0], args);
      const slot = this.slots.get(key);
      if (slot !== undefined && this.touched(slot)) return slot;
      return this.make(
        key,
        keyed.map(() => key),
      );
    }
    const keys = keyed.map((layer) => this.keyFrom(layer, args));
    const id = keys.join('\u0000');
    const slot = this.slots.get(id);
    if (slot !== undefined && this.touched(slot)) return slot;
    return this.make(id, keys);
  }

  /** Marks the keys of `slot` used; false when one of them has been evicted. */
  private touched(slot: Slot<T>): boolean {
    const keyed = this.keyed;
    for (let i = 0; i < keyed.length; i++) if (!keyed[i].keys.hit(slot.entries[i])) return false;
    return true;
  }

  private keyFrom(layer: KeyedLayer, args: unknown[]): string {
    // Spelled out for the usual one or two arguments: cheaper than spreading the array.
    const key =
      args.length === 1
        ? layer.keyOf(args[0])
        : args.length === 2
          ? layer.keyOf(args[0], args[1])
          : layer.keyOf(...args);
    if (typeof key !== 'string') throw new TypeError(KEY_NOT_A_STRING(this.where, previewValue(key)));
    return key;
  }

  private make(id: string, keys: readonly string[]): Slot<T> {
    const entries = this.keyed.map((layer, i) => layer.keys.entry(keys[i]));
    let next = 0;
    const policies = this.layers.map((layer): ComposedLayer => {
      if (!isKeyed(layer)) return layer;
      return { kind: layer.kind, policy: entries[next++].instance } as ComposedLayer;
    });
    const slot: Slot<T> = { run: this.build(policies), layers: policies, entries };
    this.slots.set(id, slot);
    return slot;
  }

  private forget(entry: KeyEntry<ComposedLayer['policy']>): void {
    if (this.oneKey) {
      if (this.slots.get(entry.key)?.entries.includes(entry) === true) this.slots.delete(entry.key);
      return;
    }
    for (const [id, slot] of this.slots) if (slot.entries.includes(entry)) this.slots.delete(id);
  }
}
