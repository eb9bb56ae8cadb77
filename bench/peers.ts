import {
  CircuitState,
  ConsecutiveBreaker,
  ConstantBackoff,
  IBreaker,
  SamplingBreaker,
  TimeoutStrategy,
  bulkhead,
  circuitBreaker,
  handleAll,
  retry,
  timeout,
  wrap,
} from 'cockatiel';
import OpossumBreaker from 'opossum';
import { Candidate } from './measure';

/** Labels of the peer candidates, shared by the in-process and fresh-process runs. */
export const PEER_LABELS = {
  cockatielConsecutive: 'cockatiel wrap, ConsecutiveBreaker',
  cockatielSampling: 'cockatiel wrap, SamplingBreaker',
  opossum: 'opossum breaker (timeout+capacity)',
} as const;

/**
 * cockatiel 3's `wrap(retry, circuitBreaker, timeout, bulkhead)`, set up
 * like BENCH_OPTIONS: 2 retries (3 attempts) 500 ms apart, 60 s half-open
 * wait, cooperative 1 s timeout, 25 concurrent calls. No fallback: that
 * layer is ours alone, so the comparison leaves our stack one layer heavier.
 */
function cockatielWrap(breaker: IBreaker) {
  const breakerPolicy = circuitBreaker(handleAll, { halfOpenAfter: 60_000, breaker });
  const policy = wrap(
    retry(handleAll, { maxAttempts: 2, backoff: new ConstantBackoff(500) }),
    breakerPolicy,
    timeout(1000, TimeoutStrategy.Cooperative),
    bulkhead(25),
  );
  return { policy, isClosed: () => breakerPolicy.state === CircuitState.Closed };
}

/** The peers around one bare method, ready to time. */
export interface PeerSet {
  readonly candidates: readonly Candidate[];
  /** Throws unless every peer stayed on the happy path (closed, no failure, timeout or rejection). */
  verifyHappyPath(): void;
  /** Stops opossum's statistics timer. */
  close(): void;
}

/**
 * cockatiel's wrap with each of its two breakers (consecutive failures, and
 * a failure rate over 10 s) and opossum 9's single breaker with its own
 * timeout and capacity (its bulkhead), each around `bare`, configured like
 * BENCH_OPTIONS.
 */
export function peers(bare: () => Promise<number>): PeerSet {
  const consecutive = cockatielWrap(new ConsecutiveBreaker(5));
  const sampling = cockatielWrap(new SamplingBreaker({ threshold: 0.5, duration: 10_000 }));
  const opossum = new OpossumBreaker(bare, {
    timeout: 1000,
    capacity: 25,
    errorThresholdPercentage: 50,
    resetTimeout: 60_000,
  });
  return {
    candidates: [
      { label: PEER_LABELS.cockatielConsecutive, call: () => consecutive.policy.execute(bare), expect: 2 },
      { label: PEER_LABELS.cockatielSampling, call: () => sampling.policy.execute(bare), expect: 2 },
      { label: PEER_LABELS.opossum, call: () => opossum.fire(), expect: 2 },
    ],
    verifyHappyPath() {
      const s = opossum.stats;
      if (s.failures + s.timeouts + s.rejects + s.fallbacks > 0 || !opossum.closed) {
        throw new Error(`opossum left the happy path: ${JSON.stringify({ ...s, closed: opossum.closed })}`);
      }
      if (!consecutive.isClosed() || !sampling.isClosed()) throw new Error('a cockatiel breaker left the closed state');
    },
    close() {
      opossum.shutdown();
    },
  };
}
