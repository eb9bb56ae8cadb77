import type { PolicyTelemetry } from '../kernel/telemetry';
import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import type { CircuitBreakerState } from '../policies/circuit-breaker/circuit-breaker.events';
import { Unsubscribe } from '../kernel/events';
import type { ReconfigurablePolicy } from '../kernel/config-change';
import { EventJournal, RecordedEvent, StatusPolicy } from './event-journal';
import { InstanceCatalog, ObservedInstance } from './instance-catalog';
import { ResolvedEndpointsOptions } from './observability.options';

/** Injection token of the validated status endpoint options. */
export const RESILIENCE_STATUS_OPTIONS = 'RESILIENCE:STATUS_OPTIONS';

/** One instance as the status endpoints list it. */
export interface InstanceStatus {
  readonly name: string;
  /** The key, for the instance of one key of an instance used per key (`GET …/:name/keys`). */
  readonly key?: string;
  /** True for a method's private instance made from decorator overrides. */
  readonly derived: boolean;
  /** The settings (durations in ms; error classes and functions by name). */
  readonly config?: Readonly<Record<string, unknown>>;
  /** Circuit breakers only. */
  readonly state?: CircuitBreakerState;
  /** The policy's live counters or window. */
  readonly metrics?: object;
}

/** What `POST …/circuitbreakers/:name` accepts as `updateState`, as Resilience4j's actuator names it. */
export const BREAKER_UPDATES = {
  CLOSE: (b: CircuitBreakerPolicy) => b.transitionToClosedState(),
  FORCE_OPEN: (b: CircuitBreakerPolicy) => b.transitionToForcedOpenState(),
  DISABLE: (b: CircuitBreakerPolicy) => b.transitionToDisabledState(),
  METRICS_ONLY: (b: CircuitBreakerPolicy) => b.transitionToMetricsOnlyState(),
} as const;

/** A value of `updateState`. */
export type BreakerUpdate = keyof typeof BREAKER_UPDATES;

/**
 * What the status endpoints serve: every instance with its config and live
 * state, and the last events of each. Provided by
 * `ResilienceEndpointsModule` when `status` is on.
 */
@Injectable()
export class ResilienceStatus implements OnApplicationBootstrap, OnModuleDestroy {
  private instances: ObservedInstance[] = [];
  /** The journal's subscriptions to each instance, dropped when it is evicted. */
  private readonly recording = new Map<object, Unsubscribe[]>();
  private readonly journal: EventJournal;
  private readonly subscriptions: Unsubscribe[] = [];

  constructor(
    private readonly catalog: InstanceCatalog,
    @Inject(RESILIENCE_STATUS_OPTIONS) options: NonNullable<ResolvedEndpointsOptions['status']>,
  ) {
    this.journal = new EventJournal(options.eventBufferSize, options.errorMessages);
  }

  /** Starts recording events of every instance. */
  onApplicationBootstrap(): void {
    this.subscriptions.push(
      this.catalog.watch(
        (observed) => {
          this.instances.push(observed);
          this.recording.set(observed.instance, this.journal.record(observed));
        },
        // An evicted undeclared name leaves the listing; its events stay in the journal's buffer.
        (evicted) => {
          this.instances = this.instances.filter((o) => o.instance !== evicted.instance);
          for (const unsubscribe of this.recording.get(evicted.instance) ?? []) unsubscribe();
          this.recording.delete(evicted.instance);
        },
      ),
    );
    const faults = this.catalog.registry.faults;
    if (faults.enabled) this.subscriptions.push(this.journal.recordFaults(faults));
  }

  /** Stops recording. */
  onModuleDestroy(): void {
    for (const unsubscribe of this.subscriptions) unsubscribe();
    this.subscriptions.length = 0;
    for (const unsubscribes of this.recording.values()) for (const unsubscribe of unsubscribes) unsubscribe();
    this.recording.clear();
  }

  /** Every instance of `policy` (named `name`, if given). */
  list(policy: StatusPolicy, name?: string): InstanceStatus[] {
    return this.instances.filter((o) => o.policy === policy && (name === undefined || o.name === name)).map(status);
  }

  /**
   * The instance of each key of instance `name` of `policy` kept now (empty
   * for a name without keys, and for fallbacks and caches, which have none).
   * Reads what is kept: it makes no instance and marks no key used.
   */
  keys(policy: StatusPolicy, name: string): InstanceStatus[] {
    if (policy === 'fallback' || policy === 'cache') return [];
    const kept = this.catalog.registry.keys(policy, name);
    return [...kept].map(([key, instance]) => ({
      ...status({ policy, name, instance, derived: false } as ObservedInstance),
      key,
    }));
  }

  /** The recorded events of `policy`'s instances (named `name`, if given), oldest first. */
  events(policy: StatusPolicy, name?: string): RecordedEvent[] {
    return this.journal.events(policy, name);
  }

  /** The recorded `FAULT_INJECTED` events (of instance name `name`, if given), oldest first. */
  faultEvents(name?: string): RecordedEvent[] {
    return this.journal.faultEvents(name);
  }

  /**
   * Changes the settings of instance `name` of `policy` by `patch` (see
   * `ResilienceRegistry.reconfigure`); returns its instances with their new
   * settings. Throws the startup message for a bad value, changing nothing.
   */
  reconfigure(policy: Exclude<ReconfigurablePolicy, 'hedge'>, name: string, patch: object): InstanceStatus[] {
    this.catalog.registry.reconfigure(policy, name, patch);
    return this.list(policy, name);
  }

  /** Moves every breaker named `name` by `update`; returns them, empty when there is none. */
  updateBreakers(name: string, update: BreakerUpdate): InstanceStatus[] {
    const matching = this.instances.filter((o) => o.policy === 'circuitBreaker' && o.name === name);
    for (const o of matching) BREAKER_UPDATES[update](o.instance as CircuitBreakerPolicy);
    return matching.map(status);
  }
}

function status(observed: ObservedInstance): InstanceStatus {
  const channel: PolicyTelemetry = observed.instance;
  const { state, config, metrics } = channel.snapshot();
  return {
    name: observed.name,
    derived: observed.derived,
    ...(state === undefined ? {} : { state: state as CircuitBreakerState }),
    ...(config === undefined ? {} : { config: plain(config) }),
    ...(metrics === undefined ? {} : { metrics }),
  };
}

/** A config as JSON can carry it: error classes and functions by name. */
function plain(config: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) out[key] = plainValue(value);
  return out;
}

function plainValue(value: unknown): unknown {
  if (typeof value === 'function') return value.name || '(anonymous function)';
  if (Array.isArray(value)) return value.map(plainValue);
  if (value !== null && typeof value === 'object') return plain(value);
  return value;
}
