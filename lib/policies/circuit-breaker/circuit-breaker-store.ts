import type { CircuitBreakerState } from './circuit-breaker.events';

/** Why the fleet changed state: a quorum of OPEN reports, a half-open probe's verdict, or an operator. */
export type FleetTransitionCause = 'quorum' | 'verdict' | 'manual' | 'reset';

/** One change of a fleet-wide breaker's state, as the store publishes it to every replica. */
export interface FleetTransition {
  /** The breaker's instance name. */
  readonly name: string;
  /** The key, for the breaker of one key of `name` (`{ key }`, a decorator's `key`); undefined for the name's own breaker. */
  readonly key?: string;
  /** The state every replica moves to. */
  readonly state: CircuitBreakerState;
  /** OPEN only: ms left of the fleet's wait when the store answered (0 once it is over). */
  readonly remainingMs: number;
  /** Grows by one with each transition of this breaker; a replica ignores one it has seen. */
  readonly version: number;
  /** The replica that caused it. */
  readonly replica: string;
  /** Why it happened. */
  readonly cause: FleetTransitionCause;
}

/** A replica's report that its own window opened its breaker. */
export interface FleetOpenReport {
  /** The breaker's instance name. */
  readonly name: string;
  /** The key, for the breaker of one key of `name` (`{ key }`, a decorator's `key`); undefined for the name's own breaker. */
  readonly key?: string;
  /** The reporting replica. */
  readonly replica: string;
  /** Reports, current ones counted, needed to open the fleet. */
  readonly quorum: number;
  /** The replica's open wait: how long its report counts, and the fleet's wait if it opens the fleet. */
  readonly waitMs: number;
}

/** A transition one replica makes for the whole fleet (a probe's verdict, or one made by hand). */
export interface FleetPublication {
  /** The breaker's instance name. */
  readonly name: string;
  /** The key, for the breaker of one key of `name` (`{ key }`, a decorator's `key`); undefined for the name's own breaker. */
  readonly key?: string;
  /** The publishing replica. */
  readonly replica: string;
  /** The state every replica moves to. */
  readonly state: CircuitBreakerState;
  /** OPEN only: the fleet's wait. */
  readonly waitMs: number;
  /** Why. */
  readonly cause: FleetTransitionCause;
}

/** A replica's claim on the half-open probe of a fleet-wide breaker. */
export interface FleetProbeClaim {
  /** The breaker's instance name. */
  readonly name: string;
  /** The key, for the breaker of one key of `name` (`{ key }`, a decorator's `key`); undefined for the name's own breaker. */
  readonly key?: string;
  /** The claiming replica. */
  readonly replica: string;
  /** How long the lease lasts unless a verdict ends it first. */
  readonly leaseMs: number;
}

/** A replica giving back the half-open probe lease it holds (its breaker left the fleet). */
export interface FleetProbeRelease {
  /** The breaker's instance name. */
  readonly name: string;
  /** The key, for the breaker of one key of `name` (`{ key }`, a decorator's `key`); undefined for the name's own breaker. */
  readonly key?: string;
  /** The replica giving it back: a lease another replica holds is kept. */
  readonly replica: string;
}

/** What a replica hears from the store. */
export interface FleetListener {
  /** A transition published by any replica (this one included). */
  transition(transition: FleetTransition): void;
  /** The store's connection was lost; `error` says why. */
  disconnected(error: unknown): void;
  /** The store is connected (again; the first connection may be told too): read each breaker's state again, transitions may have been missed. */
  reconnected(): void;
}

/**
 * Where fleet-wide circuit breakers (`shared: true`) share their
 * transitions, so that replicas of one service open, probe and close
 * together. Module option `circuitBreakerStore`. Only transitions go
 * through it: a call never touches the store. The breakers of a shared
 * name's keys are fleet-wide too, each apart from the name's and from the
 * other keys'.
 */
export interface CircuitBreakerStore {
  /**
   * Counts a replica's OPEN report for `waitMs`. When the reports still
   * current reach `quorum` and the fleet is not OPEN (or set by hand),
   * opens the fleet for `waitMs` and publishes it; answers that
   * transition, or `undefined` when the fleet did not change.
   */
  reportOpen(report: FleetOpenReport): Promise<FleetTransition | undefined>;
  /** Sets the fleet's state, ends any probe lease and any pending reports, and publishes the transition. */
  publish(publication: FleetPublication): Promise<FleetTransition>;
  /** Takes the half-open probe lease when no replica holds it; true when this replica now holds it. */
  claimProbe(claim: FleetProbeClaim): Promise<boolean>;
  /** Gives the probe lease back when `replica` holds it; true when it did. */
  releaseProbe(release: FleetProbeRelease): Promise<boolean>;
  /** The fleet's last transition of breaker `name` (of its `key`, when given), or `undefined` when it has none. */
  read(name: string, key?: string): Promise<FleetTransition | undefined>;
  /** Starts listening; resolves once transitions are being heard, with the function that stops. */
  listen(listener: FleetListener): Promise<() => Promise<void>>;
}

/** True when `value` can serve as a {@link CircuitBreakerStore}. */
export function isCircuitBreakerStore(value: unknown): value is CircuitBreakerStore {
  if (value === null || typeof value !== 'object') return false;
  const store = value as CircuitBreakerStore;
  return (
    typeof store.reportOpen === 'function' &&
    typeof store.publish === 'function' &&
    typeof store.claimProbe === 'function' &&
    typeof store.releaseProbe === 'function' &&
    typeof store.read === 'function' &&
    typeof store.listen === 'function'
  );
}
