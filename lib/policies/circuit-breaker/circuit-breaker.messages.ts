import { PREFIX } from '../../kernel/resilience.messages';

export const SHARED_WITHOUT_STORE = (place: string): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'shared' is set, but the module option 'circuitBreakerStore' is not (e.g. circuitBreakerStore: new RedisCircuitBreakerStore({ client }))`;

export const NOT_A_STORE = (value: string): string =>
  `${PREFIX}: invalid module options: key 'circuitBreakerStore' must be a circuit breaker store (an object with reportOpen(), publish(), claimProbe(), read() and listen(), e.g. new RedisCircuitBreakerStore({ client })), got ${value}`;

/** A live change of `shared` (on, off, or its quorum), which only a restart applies. */
export const SHARED_NOT_LIVE = (place: string, before: string, after: string): string =>
  `${PREFIX}: invalid change of ${place}: key 'shared' cannot change while the breaker runs (${before} -> ${after}): a breaker joins or leaves its fleet when it is made; restart the application to apply it. Nothing was changed`;

export const SHARED_EXPECTED = 'true, false or { quorum } (quorum: an integer >= 1)';

/** Logged once per outage of the store: every fleet-wide breaker now runs on its own window alone. */
export const FLEET_STORE_FAILING = (cause: string): string =>
  `${PREFIX}: the circuit breaker store is unreachable (${cause}); fleet-wide circuit breakers run as local breakers until it is back`;

/** Logged when the store answers again after {@link FLEET_STORE_FAILING}. */
export const FLEET_STORE_BACK = (breakers: number): string =>
  `${PREFIX}: the circuit breaker store is reachable again; ${breakers} fleet-wide circuit breaker(s) rejoined their fleet`;
