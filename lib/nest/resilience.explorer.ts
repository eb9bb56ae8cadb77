import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { overridePlace, TIMEOUT_NOT_RECORDED } from '../config/config.messages';
import { ErrorMatcher } from '../config/error-matcher';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { TimeoutExceededError } from '../kernel/errors';
import { invalidOption } from '../config/option-readers';
import { findKey } from '../config/relaxed-binding';
import { BulkheadLayerOptions, BulkheadType } from '../policies/bulkhead/bulkhead.decorator';
import {
  countRunningModule,
  LayerSpec,
  Pipeline,
  ResilienceMetadataAccessor,
  TrampolineInfo,
} from '../decorators/metadata';
import { FallbackLayerOptions } from '../policies/fallback/fallback.decorator';
import { FallbackHandlerSpec, FallbackPolicy } from '../policies/fallback/fallback.policy';
import { FALLBACK_HANDLER_MISSING } from '../policies/fallback/fallback.messages';
import { CheckedIdempotentOptions } from '../features/idempotency/idempotency.options';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { ComposedLayer, composeLayers, innermostFirst } from '../engine/layer-composition';
import { PolicyInstances, RegistryPolicy } from '../registry/policy-instances';
import { ResilienceRegistry } from '../registry/resilience.registry';
import type { LayerChoice } from '../engine/keyed-pipeline';
import { keyedComposition } from '../engine/keyed-composition';
import { DECORATED_BY_ANOTHER_COPY, REQUEST_SCOPED } from '../kernel/resilience.messages';
import { HedgePolicy } from '../policies/hedge/hedge.policy';
import { HEDGE_KEY_OPTIONAL, HEDGE_NOT_SAFE, HEDGE_ON_TRANSACTION } from '../policies/hedge/hedge.messages';
import { ResilienceTracing } from '../observability/tracing/resilience-tracing';
import { CachePolicy } from '../policies/cache/cache.policy';

/** A provider or controller as DiscoveryService lists it (typed without importing Nest's internal InstanceWrapper). */
type DiscoveredWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * Finds every decorated method of providers and controllers at
 * `onModuleInit` and stores its composed pipeline on the instance, where
 * the method's trampoline picks it up.
 */
/**
 * How many parameters a method declares: its compiled parameter count, or,
 * where the compiler recorded them, its parameter types' (which also count
 * parameters with a default value, that `Function.length` stops at).
 */
function declaredParameters(prototype: object, methodName: string, original: (...args: unknown[]) => unknown): number {
  const types: unknown = Reflect.getMetadata('design:paramtypes', prototype, methodName);
  return Math.max(original.length, Array.isArray(types) ? types.length : 0);
}

@Injectable()
export class ResilienceExplorer implements OnModuleInit, OnModuleDestroy {
  private readonly accessor = new ResilienceMetadataAccessor();
  private readonly logger = new Logger('ResilienceModule');
  private running = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly registry: ResilienceRegistry,
    private readonly idempotency: IdempotencyRegistry,
    private readonly tracing: ResilienceTracing,
  ) {}

  onModuleInit(): void {
    const seen = new Set<object>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      this.explore(wrapper, seen);
    }
    this.running = true;
    countRunningModule(1);
  }

  onModuleDestroy(): void {
    if (this.running) countRunningModule(-1);
    this.running = false;
    this.registry.dispose();
  }

  private explore(wrapper: DiscoveredWrapper, seen: Set<object>): void {
    const instance: unknown = wrapper.instance;
    if (!instance || typeof instance !== 'object' || seen.has(instance)) return;
    seen.add(instance);
    const prototype = Object.getPrototypeOf(instance) as Record<string, unknown> | null;
    if (!prototype || prototype === Object.prototype) return;
    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const method = prototype[methodName];
      const info = this.accessor.trampoline(method);
      if (info === undefined) {
        const other = this.accessor.otherCopyTarget(method);
        if (other !== undefined) this.logger.error(DECORATED_BY_ANOTHER_COPY(other));
        continue;
      }
      if (!wrapper.isDependencyTreeStatic()) {
        this.registry.warnOnce(REQUEST_SCOPED(info.target));
        continue;
      }
      const parameters = declaredParameters(prototype, methodName, info.original);
      const pipeline = this.compose(instance, info, this.accessor.layers(method), method, parameters);
      Object.defineProperty(instance, info.slot, { value: pipeline, configurable: true });
    }
  }

  private compose(
    instance: object,
    info: TrampolineInfo,
    layers: readonly LayerSpec[],
    method: unknown,
    parameters: number,
  ): Pipeline {
    const order = this.registry.options.order;
    const fallbacks = layers.filter((l) => l.kind === 'fallback');
    const single = layers.filter((l) => l.kind !== 'fallback');
    if (fallbacks.length > 0) single.push(fallbacks[0]);
    const sorted = innermostFirst(single, order);
    const fallback = fallbacks.length > 0 ? this.fallbackFor(instance, info, fallbacks, parameters) : undefined;
    const policies = sorted.map(
      (layer) =>
        ({
          kind: layer.kind,
          policy:
            layer.kind === 'fallback'
              ? fallback
              : layer.kind === 'idempotent'
                ? this.idempotency.policyFor(info, layer.options as CheckedIdempotentOptions, method)
                : layer.kind === 'hedge'
                  ? this.hedgeFor(layer, info, layers)
                  : layer.kind === 'cache'
                    ? this.cacheFor(layer, info).layer(false, fallback && (() => fallback.countStaleAnswer()))
                    : this.policyFor(layer, info),
        }) as ComposedLayer,
    );
    this.checkTimeoutsRecorded(sorted, policies, info);
    const original = info.original;
    // A call with its one argument spelled out is cheaper than an apply over the array, and most methods take one.
    const plain: Pipeline = (args) =>
      args.length === 1 ? original.call(instance, args[0]) : original.apply(instance, args);
    const innermost = this.registry.faults.enabled ? this.withFaults(info, layers, plain) : plain;
    const call: Pipeline = this.tracing.attemptSpans(innermost, info.target);
    const pipeline = this.keyedOrNot(info, sorted, policies, call);
    if (fallback === undefined) return pipeline;
    return (args) => {
      fallback.countCall();
      return pipeline(args);
    };
  }

  /**
   * The method's pipeline; with layers used per key, those layers are built
   * once per combination of keys and picked per call, inside the layers
   * outside them (a fallback answers a refusal of the keys).
   */
  private keyedOrNot(
    info: TrampolineInfo,
    sorted: readonly LayerSpec[],
    policies: readonly ComposedLayer[],
    call: Pipeline,
  ): Pipeline {
    const clock = this.registry.clock;
    if (sorted.every((layer) => layer.key === undefined)) return composeLayers(info.kind, call, policies, clock);
    const choices = sorted.map((layer, i): LayerChoice => {
      const { kind, policy } = policies[i];
      if (layer.key === undefined) return policies[i];
      const keys =
        kind === 'hedge'
          ? this.registry.hedgeKeysOf(policy as HedgePolicy)
          : this.registry.keysOf(kind as RegistryPolicy, policy as PolicyInstances[RegistryPolicy]);
      return { kind, keys, keyOf: layer.key as (...args: unknown[]) => unknown };
    });
    return keyedComposition(info.kind, call, choices, clock, info.target);
  }

  /**
   * The method's fallback. A handler gets the call's arguments and then the
   * error, after every parameter the method declares: an optional argument
   * the caller left out is passed as `undefined`, so the error is never
   * taken for it.
   */
  private fallbackFor(
    instance: object,
    info: TrampolineInfo,
    layers: readonly LayerSpec[],
    parameters: number,
  ): FallbackPolicy {
    const specs: FallbackHandlerSpec[] = layers.map((layer) => {
      const { errors, handler } = layer.options as FallbackLayerOptions;
      const fn: unknown = typeof handler === 'function' ? handler : (instance as Record<string, unknown>)[handler];
      if (typeof fn !== 'function') throw new Error(FALLBACK_HANDLER_MISSING(info.target, String(handler)));
      const call = fn as (...argsThenError: unknown[]) => unknown;
      return {
        errors,
        handler: (args, error) =>
          args.length >= parameters
            ? call.call(instance, ...args, error)
            : call.call(instance, ...args, ...new Array<undefined>(parameters - args.length), error),
      };
    });
    const policy = new FallbackPolicy(info.target, specs);
    this.registry.trackFallback(policy);
    return policy;
  }

  /**
   * The method's call with the faults injected under its instance names
   * and its `Class.method` name, innermost: every layer reacts as to a real fault.
   */
  private withFaults(info: TrampolineInfo, layers: readonly LayerSpec[], call: Pipeline): Pipeline {
    const names = [...new Set([...layers.flatMap((l) => (l.name === undefined ? [] : [l.name])), info.target])];
    const faults = this.registry.faults;
    return info.kind === 'promise' ? faults.wrapCall(names, call) : faults.wrapObservableCall(names, call);
  }

  /**
   * The method's hedge; refused unless the method is safe to run more than
   * once at a time (its instance says `safe: true`, or every call is keyed:
   * `@Idempotent` with a required key), and outside a transaction.
   */
  private hedgeFor(layer: LayerSpec, info: TrampolineInfo, layers: readonly LayerSpec[]): HedgePolicy {
    const where = `@Hedge on ${info.target}`;
    const name = layer.name ?? info.target;
    const hedge =
      layer.name === undefined || layer.overrides !== undefined
        ? this.registry.deriveHedge(
            name,
            layer.overrides ?? {},
            overridePlace('hedging', 'Hedge', name, info.target),
            where,
            layer.name === undefined,
          )
        : this.registry.hedgeAt(layer.name, where);
    const idempotent = layers.find((l) => l.kind === 'idempotent');
    // Copies of a transactional method would share the one transaction the run opened: both would commit.
    if ((idempotent?.options as CheckedIdempotentOptions | undefined)?.transactional === true)
      throw new Error(HEDGE_ON_TRANSACTION(info.target, name));
    if (hedge.config.safe) return hedge;
    if (idempotent === undefined) throw new Error(HEDGE_NOT_SAFE(info.target, name));
    // A call without a key runs unprotected, so only a method whose every call is keyed may hedge.
    if (!(idempotent.options as CheckedIdempotentOptions).required)
      throw new Error(HEDGE_KEY_OPTIONAL(info.target, name));
    return hedge;
  }

  /** The method's cache: the named instance, or a private one when the decorator gives no name or overrides. */
  private cacheFor(layer: LayerSpec, info: TrampolineInfo): CachePolicy {
    const where = `@Cache on ${info.target}`;
    if (layer.name !== undefined && layer.overrides === undefined) return this.registry.cache(layer.name, where);
    const name = layer.name ?? info.target;
    return this.registry.deriveCache(
      name,
      layer.overrides ?? {},
      overridePlace('cache', 'Cache', name, info.target),
      where,
      layer.name === undefined,
    );
  }

  private policyFor(layer: LayerSpec, info: TrampolineInfo): PolicyInstances[RegistryPolicy] {
    const kind = layer.kind as RegistryPolicy;
    const where = `@${layer.decorator} on ${info.target}`;
    if (kind === 'bulkhead' && layer.name !== undefined && this.threadPoolType(layer, info) === 'THREADPOOL') {
      return layer.overrides === undefined
        ? this.registry.threadPoolBulkhead(layer.name, where)
        : this.registry.deriveThreadPoolBulkhead(
            layer.name,
            layer.overrides,
            overridePlace('threadPoolBulkhead', layer.decorator, layer.name, info.target),
            where,
          );
    }
    if (layer.name === undefined) {
      return this.registry.derive(
        kind,
        info.target,
        layer.overrides ?? {},
        overridePlace(kind, layer.decorator, info.target, info.target),
        where,
        true,
      );
    }
    if (layer.overrides !== undefined) {
      return this.registry.derive(
        kind,
        layer.name,
        layer.overrides,
        overridePlace(kind, layer.decorator, layer.name, info.target),
        where,
      );
    }
    return this.registry.get(kind, layer.name, where);
  }

  /**
   * Warns when a time limiter runs inside a breaker whose `recordExceptions`
   * leaves timeouts out: Resilience4j (and this module) then count them as
   * successes, which a file listing only IOException rarely means.
   */
  private checkTimeoutsRecorded(
    innermostFirst: readonly LayerSpec[],
    policies: readonly ComposedLayer[],
    info: TrampolineInfo,
  ): void {
    const timeLimiter = innermostFirst.findIndex((l) => l.kind === 'timeLimiter');
    const breaker = innermostFirst.findIndex((l) => l.kind === 'circuitBreaker');
    if (timeLimiter < 0 || breaker < 0 || timeLimiter > breaker) return;
    const breakerPolicy = policies[breaker].policy as CircuitBreakerPolicy;
    const config = breakerPolicy.config;
    if (config.recordExceptions.length === 0) return;
    const timeLimiterName = innermostFirst[timeLimiter].name ?? info.target;
    const timeout = new TimeoutExceededError(timeLimiterName, 0);
    if (new ErrorMatcher(config.recordExceptions).matches(timeout)) return;
    if (new ErrorMatcher(config.ignoreExceptions).matches(timeout)) return;
    this.registry.warnOnce(TIMEOUT_NOT_RECORDED(breakerPolicy.name, timeLimiterName, info.target));
  }

  /** The `type` of a `@Bulkhead`, checked: a bad value fails bootstrap naming the method. */
  private threadPoolType(layer: LayerSpec, info: TrampolineInfo): BulkheadType {
    const type = (layer.options as BulkheadLayerOptions | undefined)?.type;
    if (type === undefined) return 'SEMAPHORE';
    const known = typeof type === 'string' ? findKey(type, BULKHEAD_TYPES) : undefined;
    if (known === undefined)
      invalidOption(
        overridePlace('bulkhead', layer.decorator, layer.name ?? '', info.target),
        'type',
        "'SEMAPHORE' or 'THREADPOOL'",
        type,
      );
    return known;
  }
}

const BULKHEAD_TYPES: readonly BulkheadType[] = ['SEMAPHORE', 'THREADPOOL'];
