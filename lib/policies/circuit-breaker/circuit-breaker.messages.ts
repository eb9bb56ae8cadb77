import { PREFIX } from '../../kernel/resilience.messages';

export const SHARED_WITHOUT_STORE = (place: string): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'shared' is set, but the module option 'circuitBreakerStore' is not (e.g. circuitBreakerStore: new RedisCircuitBreakerStore({ client }))`;

export const NOT_A_STORE = (value: string): string =>
  `${PREFIX}: invalid module options: key 'circuitBreakerStore' must be a circuit breaker store (an object with reportOpen(), publish(), claimProbe(), read() and listen(), e.g. new RedisCircuitBreakerStore({ client })), got ${value}`;

export const SHARED_EXPECTED = 'true, false or { quorum } (quorum: an integer >= 1)';

/** Logged once per outage of the store: every fleet-wide breaker now runs on its own window alone. */
export const FLEET_STORE_FAILING = (cause: string): string =>
  `${PREFIX}: the circuit breaker store is unreachable (${cause}); fleet-wide circuit breakers run as local breakers until it is back`;

/** Logged when the store answers again after {@link FLEET_STORE_FAILING}. */
export const FLEET_STORE_BACK = (breakers: number): string =>
  `${PREFIX}: the circuit breaker store is reachable again; ${breakers} fleet-wide circuit breaker(s) rejoined their fleet`;
