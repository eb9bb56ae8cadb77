import {
  CALLED_BEFORE_BOOTSTRAP,
  DECORATOR_BAD_KEY,
  DECORATOR_BAD_NAME,
  DECORATOR_ON_NON_METHOD,
  DECORATOR_ON_PLAIN_VALUE,
  DECORATOR_ON_STATIC,
  DECORATOR_TWICE,
  UNWIRED_AFTER_BOOTSTRAP,
} from '../kernel/resilience.messages';
import { Pipeline, plainReturnType, ReturnKind, returnKindOf } from './return-kind';
import { checkInstanceName } from '../kernel/instance-name';
import { previewValue } from '../config/value-preview';
import { LayerKind, RESILIENCE_LAYERS } from '../kernel/resilience.constants';
import { Logger } from '@nestjs/common';

/**
 * Picks a call's key from the method's arguments (a host, a tenant): the
 * call runs through that key's own instance of the named policy.
 */
export type KeyFunction = (...args: never[]) => string;

/** The `key` option every policy decorator takes beside its settings. */
export interface KeyOption {
  /**
   * One instance per key: the call's key from the method's arguments
   * (`(host: string) => host`); each key gets its own state made from the
   * instance's config, within the section's `keys` bounds.
   */
  key?: KeyFunction;
}

/** A decorator's second argument split into its `key` and its setting overrides (none when only `key` was given). */
export function splitKey<O extends object>(
  options: (O & KeyOption) | undefined,
): {
  key?: KeyFunction;
  overrides?: O;
} {
  if (options === undefined || options === null || !Object.hasOwn(options, 'key')) return { overrides: options };
  const { key, ...overrides } = options;
  return { key, overrides: Object.keys(overrides).length === 0 ? undefined : (overrides as O) };
}

/** One layer declared by a decorator on a method. */
export interface LayerSpec {
  readonly kind: LayerKind;
  /** Instance name (named policies). */
  readonly name?: string;
  /** Picks each call's key, for a layer used per key. */
  readonly key?: KeyFunction;
  /** Per-method overrides of the named instance's settings. */
  readonly overrides?: object;
  /** Decorator-specific payload (fallback handlers, idempotency options). */
  readonly options?: unknown;
  /** The decorator as written, for messages. */
  readonly decorator: string;
}

/** What the trampoline needs to find its pipeline and the original method. */
export interface TrampolineInfo {
  readonly original: (...args: unknown[]) => unknown;
  /** Per-instance slot where the explorer stores the composed pipeline. */
  readonly slot: symbol;
  /** `Class.method`, for messages. */
  readonly target: string;
  /** What the method returns, as far as its declaration tells. */
  readonly kind: ReturnKind;
  /** The copy of this package whose decorator made the trampoline. */
  readonly copy: symbol;
}

// Registered symbols: every copy of this package in the process sees the same keys.
const TRAMPOLINE = Symbol.for('resilience4nest:trampoline');
const RUNNING_MODULES = Symbol.for('resilience4nest:running-modules');
/** Tells this copy's trampolines from another copy's. */
const THIS_COPY = Symbol('resilience4nest:copy');
const logger = new Logger('ResilienceModule');

type ProcessWide = { [RUNNING_MODULES]?: number };

/** Counts a ResilienceModule whose pipelines are built (`+1`) or torn down (`-1`), for every copy of the package. */
export function countRunningModule(delta: 1 | -1): void {
  const shared = globalThis as ProcessWide;
  shared[RUNNING_MODULES] = (shared[RUNNING_MODULES] ?? 0) + delta;
}

function anyModuleRunning(): boolean {
  return ((globalThis as ProcessWide)[RUNNING_MODULES] ?? 0) > 0;
}

export type { Pipeline } from './return-kind';

function describeTarget(target: object, key: string | symbol): string {
  const owner = typeof target === 'function' ? target.name : target.constructor?.name;
  return `${owner ?? 'anonymous'}.${String(key)}`;
}

/**
 * Replaces a method with a stable trampoline (once per method) and records
 * `layer` on it. The trampoline keeps the method's `name`, links to the
 * original as prototype and carries its metadata, so `@Get`, guards and
 * Swagger metadata written above or below still resolve.
 */
export function addLayer(
  target: object,
  key: string | symbol | undefined,
  descriptor: PropertyDescriptor | undefined,
  layer: LayerSpec,
): void {
  const place = key === undefined ? describeTarget(target, '(class)') : describeTarget(target, key);
  if (key === undefined || descriptor === undefined || typeof descriptor.value !== 'function') {
    throw new TypeError(DECORATOR_ON_NON_METHOD(layer.decorator, place));
  }
  if (typeof target === 'function') throw new TypeError(DECORATOR_ON_STATIC(layer.decorator, place));
  if (layer.name !== undefined && (typeof layer.name !== 'string' || layer.name.trim() === '')) {
    throw new TypeError(DECORATOR_BAD_NAME(layer.decorator, place, previewValue(layer.name)));
  }
  if (layer.name !== undefined) checkInstanceName(layer.name, `@${layer.decorator} on ${place}`);
  if (layer.key !== undefined && typeof layer.key !== 'function')
    throw new TypeError(DECORATOR_BAD_KEY(layer.decorator, place, previewValue(layer.key)));
  const declared: unknown = Reflect.getMetadata('design:returntype', target, key);
  const plain = plainReturnType(declared);
  if (plain !== undefined) throw new TypeError(DECORATOR_ON_PLAIN_VALUE(layer.decorator, place, plain));
  const trampoline = ensureTrampoline(descriptor, place, declared);
  const layers = (Reflect.getOwnMetadata(RESILIENCE_LAYERS, trampoline) ?? []) as LayerSpec[];
  if (layer.kind !== 'fallback' && layers.some((l) => l.kind === layer.kind)) {
    throw new TypeError(DECORATOR_TWICE(layer.decorator, place));
  }
  Reflect.defineMetadata(RESILIENCE_LAYERS, [...layers, layer], trampoline);
}

function ensureTrampoline(
  descriptor: PropertyDescriptor,
  target: string,
  declared: unknown,
): (...args: unknown[]) => unknown {
  const current = descriptor.value as ((...args: unknown[]) => unknown) & { [TRAMPOLINE]?: TrampolineInfo };
  if (current[TRAMPOLINE] !== undefined) return current;
  const original = current;
  const slot = Symbol(`resilience4nest:${target}`);
  let warned = false;
  let reported = false;
  const trampoline = function (this: Record<symbol, Pipeline> | undefined, ...args: unknown[]): unknown {
    const pipeline = this?.[slot];
    if (pipeline !== undefined) return pipeline(args);
    if (anyModuleRunning()) {
      // After bootstrap the explorer will never wire this instance: an error, never silence.
      if (!reported) {
        reported = true;
        logger.error(UNWIRED_AFTER_BOOTSTRAP(target));
      }
    } else if (!warned) {
      warned = true;
      logger.warn(CALLED_BEFORE_BOOTSTRAP(target));
    }
    return original.apply(this, args);
  };
  Object.defineProperty(trampoline, 'name', { value: original.name, configurable: true });
  Object.setPrototypeOf(trampoline, original);
  for (const metaKey of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(metaKey, Reflect.getOwnMetadata(metaKey, original), trampoline);
  }
  const kind = returnKindOf(declared, original);
  Object.defineProperty(trampoline, TRAMPOLINE, {
    value: { original, slot, target, kind, copy: THIS_COPY } satisfies TrampolineInfo,
  });
  descriptor.value = trampoline;
  return trampoline;
}

/** Reads the resilience metadata of a method; every lookup goes through here. */
export class ResilienceMetadataAccessor {
  /** The trampoline info, or `undefined` when the method has no resilience decorator of this copy of the package. */
  trampoline(method: unknown): TrampolineInfo | undefined {
    const info = this.anyCopy(method);
    return info?.copy === THIS_COPY ? info : undefined;
  }

  /** `Class.method` when the method carries decorators of another copy of this package, which this copy cannot wire. */
  otherCopyTarget(method: unknown): string | undefined {
    const info = this.anyCopy(method);
    return info !== undefined && info.copy !== THIS_COPY ? String(info.target) : undefined;
  }

  private anyCopy(method: unknown): TrampolineInfo | undefined {
    return typeof method === 'function' ? (method as { [TRAMPOLINE]?: TrampolineInfo })[TRAMPOLINE] : undefined;
  }

  /** The layers declared on the method, in declaration order. */
  layers(method: unknown): readonly LayerSpec[] {
    return typeof method === 'function'
      ? ((Reflect.getOwnMetadata(RESILIENCE_LAYERS, method) ?? []) as LayerSpec[])
      : [];
  }
}
