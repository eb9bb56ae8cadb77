import { describe, instancePlace } from '../config/config.messages';
import type { ResolvedSection } from '../config/schema';
import type { Clock } from '../kernel/clock';
import { CircuitBreakerStore, isCircuitBreakerStore } from '../policies/circuit-breaker/circuit-breaker-store';
import type { CircuitBreakerConfig } from '../policies/circuit-breaker/circuit-breaker.config';
import type { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { CircuitBreakerFleet } from '../policies/circuit-breaker/circuit-breaker.fleet';
import {
  NOT_A_STORE as NOT_A_BREAKER_STORE,
  SHARED_WITHOUT_STORE as BREAKER_SHARED_WITHOUT_STORE,
  SHARED_NOT_LIVE,
} from '../policies/circuit-breaker/circuit-breaker.messages';
import type { RateLimiterConfig } from '../policies/rate-limiter/rate-limiter.config';
import { isRateLimiterStore, RateLimiterStore } from '../policies/rate-limiter/rate-limiter-store';
import { NOT_A_STORE, SHARED_WITHOUT_STORE } from '../policies/rate-limiter/rate-limiter.messages';

/**
 * Where the registry's shared instances share their state: shared rate
 * limiters their permits (module option `rateLimiterStore`), fleet-wide
 * circuit breakers their transitions, through the fleet of the
 * `circuitBreakerStore`. A shared instance without its store is refused,
 * naming it, at startup and at a live change.
 */
export class SharedStores {
  /** Where shared rate limiters keep their permits. */
  readonly rateLimiterStore: RateLimiterStore | undefined;
  /** Where fleet-wide circuit breakers share their transitions. */
  readonly circuitBreakerStore: CircuitBreakerStore | undefined;
  private fleet: CircuitBreakerFleet | undefined;

  /**
   * @param extras - the module options the registry leaves to others, stores included; a store of the wrong shape throws
   * @param clock - the registry's clock, which the fleet reads
   * @param warn - receives the fleet's warnings
   */
  constructor(
    extras: Readonly<Record<string, unknown>>,
    private readonly clock: Clock,
    private readonly warn: (message: string) => void,
  ) {
    this.rateLimiterStore = readRateLimiterStore(extras.rateLimiterStore);
    this.circuitBreakerStore = readCircuitBreakerStore(extras.circuitBreakerStore);
  }

  /** The fleet of the shared breakers, made on first use; throws, naming `place`, without a `circuitBreakerStore`. */
  circuitBreakerFleet(place: string): CircuitBreakerFleet {
    const store = this.circuitBreakerStore;
    if (store === undefined) throw new Error(BREAKER_SHARED_WITHOUT_STORE(place));
    return (this.fleet ??= new CircuitBreakerFleet(store, this.clock, this.warn));
  }

  /** Throws, naming the instance, when a shared rate limiter or circuit breaker of these sections has no store to share through. */
  check(limiters: ResolvedSection<RateLimiterConfig>, breakers: ResolvedSection<CircuitBreakerConfig>): void {
    if (limiters.defaultConfig.shared)
      requireStore(this.rateLimiterStore, instancePlace('rateLimiter', 'config', 'default'));
    for (const [name, config] of limiters.instances)
      if (config.shared) requireStore(this.rateLimiterStore, instancePlace('rateLimiter', 'instance', name));
    if (breakers.defaultConfig.shared) this.circuitBreakerFleet(instancePlace('circuitBreaker', 'config', 'default'));
    for (const [name, config] of breakers.instances)
      if (config.shared) this.circuitBreakerFleet(instancePlace('circuitBreaker', 'instance', name));
  }

  /** Takes `breaker` out of its fleet, if it is in one (it was evicted). */
  leaveFleet(breaker: CircuitBreakerPolicy): void {
    this.fleet?.leave(breaker);
  }

  /** Resolves once every fleet-wide breaker made so far listens to its fleet and has read its state. */
  async joined(): Promise<void> {
    await this.fleet?.joined();
  }

  /** Stops the fleet's subscription, if there is a fleet. */
  dispose(): void {
    this.fleet?.dispose().catch(() => undefined);
  }
}

function readRateLimiterStore(value: unknown): RateLimiterStore | undefined {
  if (value === undefined) return undefined;
  if (!isRateLimiterStore(value)) throw new Error(NOT_A_STORE(describe(value)));
  return value;
}

function readCircuitBreakerStore(value: unknown): CircuitBreakerStore | undefined {
  if (value === undefined) return undefined;
  if (!isCircuitBreakerStore(value)) throw new Error(NOT_A_BREAKER_STORE(describe(value)));
  return value;
}

/** Throws, naming the shared rate limiter at `place`, when there is no rate limiter store. */
export function requireStore(store: RateLimiterStore | undefined, place: string): void {
  if (store === undefined) throw new Error(SHARED_WITHOUT_STORE(place));
}

/** How `shared` is shown in a refused change: `false`, or `{ quorum: n }`. */
function sharingText(shared: CircuitBreakerConfig['shared']): string {
  return shared === false ? 'false' : `{ quorum: ${shared.quorum} }`;
}

/**
 * Refuses a live change of a breaker's `shared`: a breaker joins its
 * fleet, with its quorum, when it is made, and leaving mid-run would
 * drop a probe lease or a fleet-wide OPEN the others count on.
 */
export function checkSharingKept(before: CircuitBreakerConfig, after: CircuitBreakerConfig, place: string): void {
  const was = sharingText(before.shared);
  const is = sharingText(after.shared);
  if (was !== is) throw new Error(SHARED_NOT_LIVE(place, was, is));
}
