import { ErrorClass } from '../config/error-matcher';
import { ComposedLayer, innermostFirst } from '../engine/layer-composition';
import { ResiliencePipeline } from '../engine/resilience-pipeline';
import { FallbackHandlerSpec, FallbackPolicy } from '../policies/fallback/fallback.policy';
import { HedgePolicy } from '../policies/hedge/hedge.policy';
import { CachePolicy } from '../policies/cache/cache.policy';
import {
  PIPELINE_BAD_ARGUMENT,
  PIPELINE_BAD_FALLBACK,
  PIPELINE_BAD_LAYER,
  PIPELINE_HEDGE_NOT_SAFE,
  PIPELINE_NAMES_NOTHING,
  PIPELINE_UNKNOWN_KEY,
} from './pipeline.messages';
import { PipelineFallback, PipelineKeyOptions, PipelineOptions } from './pipeline.options';
import type { InstanceKeys, LayerChoice } from '../engine/keyed-pipeline';
import type { Clock } from '../kernel/clock';
import { checkInstanceName } from '../kernel/instance-name';
import type { FaultInjector } from '../features/fault-injection/fault-injector';
import type { PolicyKind } from '../kernel/resilience.constants';
import type { PolicyConfigs } from './resolve-options';
import type { PolicyInstances, RegistryPolicy } from './policy-instances';

/** What the builder asks of the registry: its instances, its fallbacks, its faults and order. */
export interface PipelineSource {
  readonly clock: Clock;
  readonly faults: FaultInjector;
  readonly options: {
    readonly order: readonly PolicyKind[];
    readonly sections: {
      readonly [P in RegistryPolicy]: { readonly instances: ReadonlyMap<string, PolicyConfigs[P]> };
    };
  };
  get<P extends RegistryPolicy>(policy: P, name: string, where?: string): PolicyInstances[P];
  derive<P extends RegistryPolicy>(
    policy: P,
    name: string,
    overrides: object,
    place: string,
    where: string,
    anonymous?: boolean,
  ): PolicyInstances[P];
  hedgeAt(name: string, where: string): HedgePolicy;
  hedgeKeysOf(hedge: HedgePolicy): InstanceKeys<ComposedLayer['policy']>;
  deriveHedge(name: string, overrides: object, place: string, where: string, anonymous?: boolean): HedgePolicy;
  declaresHedge(name: string): boolean;
  cache(name: string, where?: string): CachePolicy;
  deriveCache(name: string, overrides: object, place: string, where: string, anonymous?: boolean): CachePolicy;
  declaresCache(name: string): boolean;
  trackFallback(policy: FallbackPolicy): void;
  keysOf<P extends RegistryPolicy>(policy: P, instance: PolicyInstances[P]): InstanceKeys<ComposedLayer['policy']>;
}

/** The registry's policies a pipeline's options may name. */
const PIPELINE_POLICIES: readonly RegistryPolicy[] = [
  'retry',
  'circuitBreaker',
  'rateLimiter',
  'timeLimiter',
  'bulkhead',
];
const PIPELINE_KEYS = ['name', ...PIPELINE_POLICIES, 'hedge', 'cache', 'fallback'];

/**
 * The pipeline `registry.pipeline(nameOrOptions)` answers: every policy
 * declared under a name, or the instances (named or inline) and fallbacks
 * the options give, composed in the decorators' order.
 */
export function buildPipeline(
  registry: PipelineSource,
  nameOrOptions: string | PipelineOptions,
  keyOptions?: PipelineKeyOptions,
): ResiliencePipeline {
  const keyOf = readKey(keyOptions, typeof nameOrOptions === 'string' ? nameOrOptions : nameOrOptions?.name);
  if (typeof nameOrOptions === 'string') return namedPipeline(registry, nameOrOptions, keyOf);
  if (nameOrOptions === null || typeof nameOrOptions !== 'object' || Array.isArray(nameOrOptions))
    throw new Error(PIPELINE_BAD_ARGUMENT(nameOrOptions));
  const options = nameOrOptions;
  const name = options.name ?? 'pipeline';
  if (typeof name !== 'string') throw new Error(PIPELINE_BAD_LAYER('pipeline', 'name', name));
  checkInstanceName(name, "ResilienceRegistry.pipeline's name");
  for (const key of Object.keys(options))
    if (!PIPELINE_KEYS.includes(key)) throw new Error(PIPELINE_UNKNOWN_KEY(name, key, PIPELINE_KEYS));
  const where = `pipeline '${name}'`;
  const layers: ComposedLayer[] = [];
  for (const policy of PIPELINE_POLICIES) {
    const given: unknown = options[policy];
    if (given === undefined) continue;
    if (typeof given === 'string') layers.push({ kind: policy, policy: registry.get(policy, given, where) });
    else if (given !== null && typeof given === 'object' && !Array.isArray(given))
      layers.push({
        kind: policy,
        policy: registry.derive(policy, name, given, `${policy} options of ${where}`, where, true),
      });
    else throw new Error(PIPELINE_BAD_LAYER(name, policy, given));
  }
  const hedge: unknown = options.hedge;
  if (typeof hedge === 'string') layers.push(hedgeLayer(name, registry.hedgeAt(hedge, where)));
  else if (hedge !== undefined && hedge !== null && typeof hedge === 'object' && !Array.isArray(hedge))
    layers.push(hedgeLayer(name, registry.deriveHedge(name, hedge, `hedge options of ${where}`, where, true)));
  else if (hedge !== undefined) throw new Error(PIPELINE_BAD_LAYER(name, 'hedge', hedge));
  let fallback: FallbackPolicy | undefined;
  if (options.fallback !== undefined) {
    fallback = new FallbackPolicy(name, pipelineFallbacks(name, options.fallback));
    layers.push({ kind: 'fallback', policy: fallback });
    registry.trackFallback(fallback);
  }
  const cache: unknown = options.cache;
  if (typeof cache === 'string') layers.push(cacheLayer(registry.cache(cache, where), fallback));
  else if (cache !== undefined && cache !== null && typeof cache === 'object' && !Array.isArray(cache))
    layers.push(cacheLayer(registry.deriveCache(name, cache, `cache options of ${where}`, where, true), fallback));
  else if (cache !== undefined) throw new Error(PIPELINE_BAD_LAYER(name, 'cache', cache));
  return compose(registry, name, layers, fallback, keyOf);
}

/** The key function of `options`: a fixed key, or one read from `execute`'s `args`; undefined for a pipeline not used per key. */
function readKey(
  options: PipelineKeyOptions | undefined,
  name: string | undefined,
): ((...args: unknown[]) => unknown) | undefined {
  if (options === undefined) return undefined;
  const key: unknown = (options as { key?: unknown } | null)?.key;
  if (typeof key === 'string') return () => key;
  if (typeof key === 'function') {
    const fn = key as (...args: unknown[]) => unknown;
    // The first argument is the function run, which `execute` puts before its `args`.
    return (_fn: unknown, ...args: unknown[]) => fn(...args);
  }
  throw new Error(PIPELINE_BAD_LAYER(name ?? 'pipeline', 'key', key));
}

function namedPipeline(
  registry: PipelineSource,
  name: string,
  keyOf: ((...args: unknown[]) => unknown) | undefined,
): ResiliencePipeline {
  checkInstanceName(name, 'ResilienceRegistry.pipeline');
  const where = `pipeline '${name}'`;
  const layers: ComposedLayer[] = PIPELINE_POLICIES.filter((policy) =>
    registry.options.sections[policy].instances.has(name),
  ).map((policy) => ({ kind: policy, policy: registry.get(policy, name, where) }));
  if (registry.declaresHedge(name)) layers.push(hedgeLayer(name, registry.hedgeAt(name, where)));
  if (registry.declaresCache(name)) layers.push(cacheLayer(registry.cache(name, where), undefined));
  if (layers.length === 0) throw new Error(PIPELINE_NAMES_NOTHING(name));
  return compose(registry, name, layers, undefined, keyOf);
}

/** A pipeline's hedge layer; refused unless the instance is declared safe to repeat. */
function hedgeLayer(pipeline: string, hedge: HedgePolicy): ComposedLayer {
  if (!hedge.config.safe) throw new Error(PIPELINE_HEDGE_NOT_SAFE(pipeline, hedge.name));
  return { kind: 'hedge', policy: hedge };
}

/**
 * A pipeline's cache layer. A pipeline runs functions without arguments, so
 * the key is the cache's `key()` (by default one key for the pipeline); its
 * stale answers count in the share of the pipeline's fallback, when it has one.
 */
function cacheLayer(cache: CachePolicy, fallback: FallbackPolicy | undefined): ComposedLayer {
  return { kind: 'cache', policy: cache.layer(true, fallback && (() => fallback.countStaleAnswer())) };
}

/** The pipeline over `layers`, with the faults injected under its instances' names and its own when injection is on. */
function compose(
  registry: PipelineSource,
  name: string,
  layers: ComposedLayer[],
  fallback: FallbackPolicy | undefined,
  keyOf: ((...args: unknown[]) => unknown) | undefined,
): ResiliencePipeline {
  const faults = registry.faults;
  const names = [...new Set([...layers.filter((l) => l.kind !== 'fallback').map((l) => l.policy.name), name])];
  const sorted = innermostFirst(layers, registry.options.order);
  const keyed =
    keyOf === undefined
      ? undefined
      : sorted.map((layer): LayerChoice => {
          if (layer.kind === 'hedge')
            return { kind: 'hedge', keys: registry.hedgeKeysOf(layer.policy as HedgePolicy), keyOf };
          if (!PIPELINE_POLICIES.includes(layer.kind as RegistryPolicy)) return layer;
          const kind = layer.kind as RegistryPolicy;
          return { kind, keys: registry.keysOf(kind, layer.policy as PolicyInstances[RegistryPolicy]), keyOf };
        });
  return new ResiliencePipeline(
    name,
    sorted,
    registry.clock,
    fallback,
    faults.enabled
      ? { wrapCall: (call) => faults.wrapCall(names, call), observe: (source) => faults.observe(names, source) }
      : undefined,
    keyed,
  );
}

/** A pipeline's fallbacks as the fallback policy's handler specs, checked. */
function pipelineFallbacks(name: string, given: PipelineFallback | readonly PipelineFallback[]): FallbackHandlerSpec[] {
  const list: readonly unknown[] = Array.isArray(given) ? given : [given];
  return list.map((entry) => {
    const candidate = entry as Partial<PipelineFallback> | null;
    const errors: unknown = candidate?.errors;
    const classes: unknown[] = Array.isArray(errors) ? errors : [errors];
    const handler = candidate?.handler;
    if (typeof handler !== 'function' || classes.length === 0 || classes.some((c) => typeof c !== 'function'))
      throw new Error(PIPELINE_BAD_FALLBACK(name, entry));
    return {
      errors: classes as ErrorClass[],
      handler: (_args: unknown[], error: unknown) => handler(error),
    };
  });
}
