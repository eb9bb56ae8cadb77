import {
  breakerTable,
  CALLS,
  HEALTHY_LATENCY_MS,
  INTERVAL_MS,
  OUTAGE_CALLS,
  referenceSimulation,
  runOutage,
  TIMEOUT_MS,
  WithBreaker,
  WithoutBreaker,
} from '../../scenarios/breaker';
import { report } from '../support/report';

/*
 * An outage behind a breaker: a dependency is down for 30 s of a 60 s run, callers
 * send it 10 calls a second under a 2 s timeout. The setup lives in
 * scenarios/breaker.ts (`npm run scenario -- breaker` prints the same
 * table); this test pins its figures to the call.
 */

describe('scenario (a): a dependency down for 30 s, 10 calls/s, 2 s timeout, over 60 s', () => {
  it('a breaker turns 600 thread-seconds of waiting into a small fraction', async () => {
    const none = await runOutage(WithoutBreaker);
    const breaker = await runOutage(WithBreaker);
    const reference = referenceSimulation();
    report(breakerTable({ none, breaker, reference }));

    for (const run of [none, breaker]) {
      expect(run.calls.every((c) => c.settledAt !== undefined)).toBe(true);
      expect(run.timedOut + run.notPermitted + run.succeeded).toBe(CALLS);
    }

    // Without a breaker every outage call reaches the dependency and holds its caller exactly 2 s
    // (300 x 2 s = 600 s); the 300 healthy calls add 10 ms each (3 s). The clock is virtual, so exact.
    expect(none.reachedInOutage).toBe(OUTAGE_CALLS);
    expect(none.outageThreadMs).toBe(OUTAGE_CALLS * TIMEOUT_MS);
    expect(none.threadMs).toBe(OUTAGE_CALLS * TIMEOUT_MS + (CALLS - OUTAGE_CALLS) * HEALTHY_LATENCY_MS);
    expect(none.timedOut).toBe(OUTAGE_CALLS);
    expect(none.notPermitted).toBe(0);
    // Each waiting caller pins one hanging request: 2 s of timeout at 10/s is 20 at once.
    expect(none.dependency.maxInFlight).toBe(TIMEOUT_MS / INTERVAL_MS);

    // The reference model's own figures (docs/scenarios.md): 7 of 300 calls, 17 thread-seconds.
    expect(reference.reachedInOutage).toBe(7);
    expect(Math.round(reference.threadMs / 1000)).toBe(17);

    // With calls in flight the breaker hears of the first timeout only at 17 s, and opens at 17.4 s
    // after the 5th: the 24 calls started from 15.0 s to 17.3 s all reach the dependency. Then one
    // half-open trial at 27.5 s and one at 39.6 s (the first call strictly after each 10 s wait, as
    // Resilience4j), each timing out: 26 calls, 52 thread-seconds.
    expect(breaker.transitions).toEqual([
      '17400 OPEN',
      '27500 HALF_OPEN',
      '29500 OPEN',
      '39600 HALF_OPEN',
      '41600 OPEN',
      '51700 HALF_OPEN',
      '51710 CLOSED',
    ]);
    expect(breaker.reachedInOutage).toBe(26);
    expect(breaker.outageThreadMs).toBe(26 * TIMEOUT_MS);
    expect(breaker.reachedInOutage).toBeLessThanOrEqual(30); // 10% of the outage calls
    expect(breaker.threadMs * 8).toBeLessThanOrEqual(none.threadMs);
    expect(breaker.outageThreadMs * 8).toBeLessThanOrEqual(none.outageThreadMs);
    // The price: the trial at 39.6 s re-opened it until 51.6 s, so the 67 calls from 45.0 s to 51.6 s
    // are refused though the dependency is back; the trial at 51.7 s succeeds and closes the breaker.
    expect(breaker.notPermitted).toBe(OUTAGE_CALLS - 26 + 67);
    expect(breaker.succeeded).toBe(CALLS - OUTAGE_CALLS - 67);
    expect(breaker.breakerState).toBe('CLOSED');

    // No hanging request outlives its caller's timeout: the abort signal released every one.
    expect(none.dependency.inFlight).toBe(0);
    expect(breaker.dependency.inFlight).toBe(0);
  });
});
