import { EventSubscriber, Unsubscribe } from './events';

/**
 * A listener's choice for one event type: the function to call with each
 * event, or `undefined` to leave that type unsubscribed (its stream stays
 * idle, so the policy builds no such event).
 */
export type EventTap = (type: string) => ((event: object) => void) | undefined;

/** What an instance tells the status endpoints about itself. */
export interface InstanceSnapshot {
  /** A circuit breaker's state. */
  readonly state?: string;
  /** The resolved settings. */
  readonly config?: object;
  /** The live counters or window. */
  readonly metrics?: object;
}

/**
 * @internal The telemetry channel every policy reports to: its events, each
 * under Resilience4j's event type name, and a snapshot of its state. The event journal, the status endpoints and the testing kit
 * listen through it, so a policy's events reach them with nothing written
 * for that policy.
 */
export interface PolicyTelemetry {
  /** Subscribes to each event type `tap` wants; returns the unsubscribe functions. */
  tapEvents(tap: EventTap): Unsubscribe[];
  /** The instance's state, settings and counters, now. */
  snapshot(): InstanceSnapshot;
}

/** @internal Subscribes `tap`'s listener for `type` to `subscribe`, if it wants one; adds the unsubscribe to `into`. */
export function tapStream<E extends object>(
  into: Unsubscribe[],
  tap: EventTap,
  type: string,
  subscribe: EventSubscriber<E>,
): void {
  const listener = tap(type);
  if (listener !== undefined) into.push(subscribe(listener));
}
