import { PREFIX } from '../../kernel/resilience.messages';
import { formatMs } from '../../kernel/format-ms';
import type { CircuitBreakerState } from './circuit-breaker.events';

export const SHARED_WITHOUT_STORE = (place: string): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'shared' is set, but the module option 'circuitBreakerStore' is not (e.g. circuitBreakerStore: new RedisCircuitBreakerStore({ client }))`;

export const NOT_A_STORE = (value: string): string =>
  `${PREFIX}: invalid module options: key 'circuitBreakerStore' must be a circuit breaker store (an object with reportOpen(), publish(), claimProbe(), releaseProbe(), read() and listen(), e.g. new RedisCircuitBreakerStore({ client })), got ${value}`;

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

const rate = (value: number): string => (value < 0 ? 'n/a' : `${value.toFixed(1)}%`);

/** A breaker moved; when it opened, the window it opened on (rates in percent, -1 below `minimumNumberOfCalls`). */
export const BREAKER_TRANSITION = (
  name: string,
  from: CircuitBreakerState,
  to: CircuitBreakerState,
  opening:
    { readonly failureRate: number; readonly slowCallRate: number; readonly numberOfBufferedCalls: number } | undefined,
  openMs: number,
): string => {
  const why =
    opening === undefined
      ? ''
      : ` (failure rate ${rate(opening.failureRate)}, slow-call rate ${rate(opening.slowCallRate)} over ${opening.numberOfBufferedCalls} calls); calls are refused for ${formatMs(openMs)} ms`;
  return `circuit breaker '${name}' ${from} -> ${to}${why}`;
};
