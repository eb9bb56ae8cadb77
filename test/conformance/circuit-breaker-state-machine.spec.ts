import { VirtualClock } from '../../lib/kernel/clock';
import { CircuitBreakerPolicy } from '../../lib/policies/circuit-breaker/circuit-breaker.policy';
import type { CircuitBreakerState } from '../../lib/policies/circuit-breaker/circuit-breaker.events';
import {
  CIRCUIT_BREAKER_SCHEMA,
  CircuitBreakerConfig,
} from '../../lib/policies/circuit-breaker/circuit-breaker.config';
import { IllegalStateTransitionError } from '../../lib/policies/circuit-breaker/illegal-state-transition.error';
import { CallNotPermittedError } from '../../lib/kernel/errors';

/*
 * Port of Resilience4j's CircuitBreakerStateMachineTest
 * (resilience4j-circuitbreaker/src/test/java/io/github/resilience4j/circuitbreaker/internal/).
 * Each case names the Java test method it mirrors. Java's onSuccess(duration, unit) /
 * onError(duration, unit, throwable) are `onResult(durationMs, undefined | error)` here, and
 * its MockClock is a VirtualClock set to the same instant (2019-01-01T12:00:00Z).
 *
 * Cases not ported:
 * | Java test method                                    | why                                                                  |
 * |-----------------------------------------------------|----------------------------------------------------------------------|
 * | shouldTransitionToHalfOpenAfterPassedWaitDuration   | transitionToOpenStateFor(Duration) is not part of this API          |
 * | shouldTransitionToHalfOpenAfterPassedWaitUntil      | transitionToOpenStateUntil(Instant) is not part of this API         |
 */

class NumberFormatException extends Error {}
class RuntimeException extends Error {}

const SECOND = 1000;

/** The breaker of the Java setUp(): TIME_BASED window of 20 s, minimum 5 calls, 4 half-open trials. */
function setUp(overrides: Partial<CircuitBreakerConfig> = {}): {
  clock: VirtualClock;
  circuitBreaker: CircuitBreakerPolicy;
} {
  const clock = new VirtualClock(Date.UTC(2019, 0, 1, 12, 0, 0));
  const config: CircuitBreakerConfig = {
    ...CIRCUIT_BREAKER_SCHEMA.defaults,
    failureRateThreshold: 50,
    permittedNumberOfCallsInHalfOpenState: 4,
    slowCallDurationThreshold: 4 * SECOND,
    slowCallRateThreshold: 50,
    maxWaitDurationInHalfOpenState: 1 * SECOND,
    slidingWindowSize: 20,
    minimumNumberOfCalls: 5,
    slidingWindowType: 'TIME_BASED',
    waitDurationInOpenState: 5 * SECOND,
    ignoreExceptions: [NumberFormatException],
    ...overrides,
  };
  return { clock, circuitBreaker: new CircuitBreakerPolicy('testName', config, clock) };
}

const onSuccess = (cb: CircuitBreakerPolicy, ms = 0): void => cb.onResult(ms, undefined);
const onError = (cb: CircuitBreakerPolicy, ms = 0, error: unknown = new RuntimeException()): void =>
  cb.onResult(ms, error);

/** Java's assertCircuitBreakerMetricsEqualTo(failureRate, successful, buffered, failed, notPermitted). */
function assertMetrics(
  cb: CircuitBreakerPolicy,
  failureRate: number,
  successful: number,
  buffered: number,
  failed: number,
  notPermitted: number,
): void {
  const m = cb.metrics;
  expect({
    failureRate: m.failureRate,
    successful: m.numberOfSuccessfulCalls,
    buffered: m.numberOfBufferedCalls,
    failed: m.numberOfFailedCalls,
    notPermitted: m.numberOfNotPermittedCalls,
  }).toEqual({ failureRate, successful, buffered, failed, notPermitted });
}

const assertMetricsAreReset = (cb: CircuitBreakerPolicy): void => assertMetrics(cb, -1, 0, 0, 0, 0);

function permits(cb: CircuitBreakerPolicy, n: number): boolean[] {
  return Array.from({ length: n }, () => cb.tryAcquirePermission());
}

describe('Resilience4j CircuitBreakerStateMachineTest, ported', () => {
  it('shouldReturnTheCorrectName', () => {
    expect(setUp().circuitBreaker.name).toBe('testName');
  });

  it('shouldThrowCallNotPermittedExceptionWhenStateIsOpen', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    expect(() => circuitBreaker.acquirePermission()).toThrow(CallNotPermittedError);
    expect(circuitBreaker.metrics.numberOfNotPermittedCalls).toBe(1);
  });

  it('shouldThrowCallNotPermittedExceptionWhenStateIsForcedOpen', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToForcedOpenState();
    expect(() => circuitBreaker.acquirePermission()).toThrow(CallNotPermittedError);
    expect(circuitBreaker.metrics.numberOfNotPermittedCalls).toBe(1);
  });

  it('shouldIncreaseCounterOnReleasePermission', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    expect(permits(circuitBreaker, 6)).toEqual([true, true, true, true, false, false]);
    circuitBreaker.releasePermission();
    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
  });

  it('shouldThrowCallNotPermittedExceptionWhenNotFurtherTestCallsArePermitted', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    expect(permits(circuitBreaker, 4)).toEqual([true, true, true, true]);
    expect(() => circuitBreaker.acquirePermission()).toThrow(CallNotPermittedError);
    expect(circuitBreaker.metrics.numberOfNotPermittedCalls).toBe(1);
  });

  it('shouldOnlyPermitFourCallsInHalfOpenState', () => {
    const { circuitBreaker } = setUp();
    assertMetricsAreReset(circuitBreaker);
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    expect(circuitBreaker.state).toBe('HALF_OPEN');
    expect(permits(circuitBreaker, 6)).toEqual([true, true, true, true, false, false]);
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    expect(permits(circuitBreaker, 6)).toEqual([true, true, true, true, false, false]);
  });

  it('shouldOpenAfterFailureRateThresholdExceeded2', async () => {
    const { circuitBreaker, clock } = setUp();
    onSuccess(circuitBreaker);
    await clock.advance(SECOND);
    onSuccess(circuitBreaker);
    await clock.advance(SECOND);
    onSuccess(circuitBreaker);
    await clock.advance(SECOND);
    onError(circuitBreaker);
    await clock.advance(SECOND);
    onError(circuitBreaker);
    expect(circuitBreaker.state).toBe('CLOSED');
    await clock.advance(SECOND);
    expect(circuitBreaker.state).toBe('CLOSED');
    onError(circuitBreaker);
    expect(circuitBreaker.state).toBe('OPEN');
  });

  it('shouldOpenAfterFailureRateThresholdExceeded', () => {
    const { circuitBreaker } = setUp();
    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    expect(circuitBreaker.state).toBe('CLOSED');
    assertMetricsAreReset(circuitBreaker);
    const exceeded: number[] = [];
    circuitBreaker.onFailureRateExceeded((e) => exceeded.push(e.failureRate));

    onError(circuitBreaker);
    expect(circuitBreaker.state).toBe('CLOSED');
    assertMetrics(circuitBreaker, -1, 0, 1, 1, 0);
    onError(circuitBreaker);
    assertMetrics(circuitBreaker, -1, 0, 2, 2, 0);
    onError(circuitBreaker);
    assertMetrics(circuitBreaker, -1, 0, 3, 3, 0);
    onSuccess(circuitBreaker);
    expect(circuitBreaker.state).toBe('CLOSED');
    assertMetrics(circuitBreaker, -1, 1, 4, 3, 0);
    onSuccess(circuitBreaker);

    expect(circuitBreaker.state).toBe('OPEN');
    expect(circuitBreaker.metrics.failureRate).toBe(60);
    assertMetrics(circuitBreaker, 60, 2, 5, 3, 0);
    expect(exceeded).toEqual([60]);

    expect(circuitBreaker.tryAcquirePermission()).toBe(false);
    assertMetrics(circuitBreaker, 60, 2, 5, 3, 1);
  });

  it('shouldOpenAfterSlowCallRateThresholdExceeded', () => {
    const { circuitBreaker } = setUp();
    assertMetricsAreReset(circuitBreaker);
    onError(circuitBreaker, 5 * SECOND);
    onSuccess(circuitBreaker, 5 * SECOND);
    onError(circuitBreaker, 100);
    onSuccess(circuitBreaker, 100);
    expect(circuitBreaker.state).toBe('CLOSED');
    onSuccess(circuitBreaker, 5 * SECOND);

    expect(circuitBreaker.state).toBe('OPEN');
    expect(circuitBreaker.metrics).toMatchObject({ numberOfBufferedCalls: 5, numberOfSlowCalls: 3, slowCallRate: 60 });
  });

  it('shouldOpenAfterSlowCallRateThresholdExceededUsingMockClock', async () => {
    const { circuitBreaker, clock } = setUp();
    const consumer = (seconds: number): Promise<void> => circuitBreaker.execute(() => clock.advance(seconds * SECOND));
    const expectations: Array<[number, number, number, CircuitBreakerState]> = [
      [5, 1, 1, 'CLOSED'],
      [5, 2, 2, 'CLOSED'],
      [1, 3, 2, 'CLOSED'],
      [1, 4, 2, 'CLOSED'],
      [5, 5, 3, 'OPEN'],
    ];
    for (const [seconds, buffered, slow, state] of expectations) {
      await consumer(seconds);
      expect([
        circuitBreaker.metrics.numberOfBufferedCalls,
        circuitBreaker.metrics.numberOfSlowCalls,
        circuitBreaker.state,
      ]).toEqual([buffered, slow, state]);
    }
    expect(circuitBreaker.metrics.slowCallRate).toBe(60);
  });

  it('shouldTransitionToHalfOpenAfterWaitDuration', async () => {
    const { circuitBreaker, clock } = setUp();
    circuitBreaker.transitionToOpenState();
    assertMetricsAreReset(circuitBreaker);
    expect(circuitBreaker.state).toBe('OPEN');
    expect(circuitBreaker.tryAcquirePermission()).toBe(false);

    await clock.advance(3 * SECOND);
    expect(circuitBreaker.state).toBe('OPEN');
    expect(circuitBreaker.tryAcquirePermission()).toBe(false);
    assertMetrics(circuitBreaker, -1, 0, 0, 0, 2);

    await clock.advance(3 * SECOND);
    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    expect(circuitBreaker.state).toBe('HALF_OPEN');
    assertMetricsAreReset(circuitBreaker);
  });

  it('shouldTransitionToHalfOpenAfterWaitInterval (waitIntervalFunctionInOpenState = ofExponentialBackoff(5000))', async () => {
    const { circuitBreaker: intervalCircuitBreaker, clock } = setUp({
      slidingWindowType: 'COUNT_BASED',
      slidingWindowSize: 5,
      maxWaitDurationInHalfOpenState: 0,
      enableExponentialBackoff: true,
      waitDurationInOpenState: 5000,
    });
    intervalCircuitBreaker.transitionToOpenState();
    assertMetricsAreReset(intervalCircuitBreaker);
    expect(intervalCircuitBreaker.tryAcquirePermission()).toBe(false);

    await clock.advance(3 * SECOND);
    expect(intervalCircuitBreaker.state).toBe('OPEN');
    expect(intervalCircuitBreaker.tryAcquirePermission()).toBe(false);
    assertMetrics(intervalCircuitBreaker, -1, 0, 0, 0, 2);

    await clock.advance(3 * SECOND);
    expect(intervalCircuitBreaker.tryAcquirePermission()).toBe(true);
    expect(intervalCircuitBreaker.state).toBe('HALF_OPEN');
    assertMetricsAreReset(intervalCircuitBreaker);

    // The second consecutive OPEN waits 7.5 s.
    intervalCircuitBreaker.transitionToOpenState();
    await clock.advance(6 * SECOND);
    expect(intervalCircuitBreaker.state).toBe('OPEN');
    expect(intervalCircuitBreaker.tryAcquirePermission()).toBe(false);

    await clock.advance(5 * SECOND);
    expect(intervalCircuitBreaker.tryAcquirePermission()).toBe(true);
    expect(intervalCircuitBreaker.state).toBe('HALF_OPEN');
    assertMetricsAreReset(intervalCircuitBreaker);
  });

  it('shouldTransitionBackToOpenStateWhenFailureRateIsAboveThreshold', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    expect(circuitBreaker.state).toBe('HALF_OPEN');
    assertMetricsAreReset(circuitBreaker);

    for (const fails of [true, true, false, true]) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      if (fails) onError(circuitBreaker);
      else onSuccess(circuitBreaker);
    }

    expect(circuitBreaker.state).toBe('OPEN');
    assertMetrics(circuitBreaker, 75, 1, 4, 3, 0);
  });

  it('shouldTransitionBackToOpenStateWhenSlowCallRateIsAboveThreshold', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    for (const seconds of [5, 5, 5, 1]) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      onSuccess(circuitBreaker, seconds * SECOND);
    }
    expect(circuitBreaker.state).toBe('OPEN');
    expect(circuitBreaker.metrics).toMatchObject({ numberOfSlowCalls: 3, slowCallRate: 75, failureRate: 0 });
  });

  it('shouldTransitionBackToClosedStateWhenFailureIsBelowThreshold', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    assertMetricsAreReset(circuitBreaker);
    for (const fails of [true, false, false, false]) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      if (fails) onError(circuitBreaker);
      else onSuccess(circuitBreaker);
    }
    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    expect(circuitBreaker.state).toBe('CLOSED');
    assertMetricsAreReset(circuitBreaker);

    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    onSuccess(circuitBreaker);
    assertMetrics(circuitBreaker, -1, 1, 1, 0, 0);
  });

  it('shouldResetMetrics', () => {
    const { circuitBreaker } = setUp();
    expect(circuitBreaker.state).toBe('CLOSED');
    assertMetricsAreReset(circuitBreaker);
    onSuccess(circuitBreaker);
    onError(circuitBreaker);
    assertMetrics(circuitBreaker, -1, 1, 2, 1, 0);
    circuitBreaker.reset();
    assertMetricsAreReset(circuitBreaker);
  });

  it('shouldDisableCircuitBreaker', () => {
    const { circuitBreaker } = setUp();
    const errors: unknown[] = [];
    const successes: unknown[] = [];
    circuitBreaker.onError((e) => errors.push(e));
    circuitBreaker.onSuccess((e) => successes.push(e));
    circuitBreaker.transitionToDisabledState();
    expect(circuitBreaker.state).toBe('DISABLED');
    assertMetricsAreReset(circuitBreaker);

    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    onSuccess(circuitBreaker);
    for (let i = 0; i < 3; i++) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      onError(circuitBreaker);
    }
    circuitBreaker.acquirePermission();
    onError(circuitBreaker);

    assertMetricsAreReset(circuitBreaker);
    expect([errors, successes]).toEqual([[], []]);
  });

  it('shouldForceOpenCircuitBreaker', async () => {
    const { circuitBreaker, clock } = setUp();
    circuitBreaker.transitionToForcedOpenState();
    expect(circuitBreaker.state).toBe('FORCED_OPEN');
    expect(circuitBreaker.tryAcquirePermission()).toBe(false);
    await clock.advance(6 * SECOND);
    expect(circuitBreaker.tryAcquirePermission()).toBe(false);
    expect(circuitBreaker.state).toBe('FORCED_OPEN');
    assertMetrics(circuitBreaker, -1, 0, 0, 0, 2);
  });

  it('shouldReleasePermissionWhenExceptionIgnored', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    for (let i = 1; i <= 3; i++) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      onSuccess(circuitBreaker);
      expect(circuitBreaker.state).toBe('HALF_OPEN');
      assertMetrics(circuitBreaker, -1, i, i, 0, 0);
    }

    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    onError(circuitBreaker, 0, new NumberFormatException());
    expect(circuitBreaker.state).toBe('HALF_OPEN');
    assertMetrics(circuitBreaker, -1, 3, 3, 0, 0);

    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    onError(circuitBreaker);
    expect(circuitBreaker.state).toBe('CLOSED');
    assertMetricsAreReset(circuitBreaker);
  });

  it('shouldIgnoreExceptionsAndThenTransitionToClosed', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    for (let i = 0; i < 4; i++) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      onError(circuitBreaker, 0, new NumberFormatException());
      expect(circuitBreaker.state).toBe('HALF_OPEN');
    }
    assertMetricsAreReset(circuitBreaker);

    for (let i = 0; i < 3; i++) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      onSuccess(circuitBreaker);
      expect(circuitBreaker.state).toBe('HALF_OPEN');
    }
    assertMetrics(circuitBreaker, -1, 3, 3, 0, 0);

    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    onSuccess(circuitBreaker);
    expect(circuitBreaker.state).toBe('CLOSED');
    assertMetricsAreReset(circuitBreaker);
  });

  it('shouldNotAllowTransitionFromClosedToHalfOpen', () => {
    const { circuitBreaker } = setUp();
    expect(() => circuitBreaker.transitionToHalfOpenState()).toThrow(IllegalStateTransitionError);
    expect(() => circuitBreaker.transitionToHalfOpenState()).toThrow(
      "CircuitBreaker 'testName' tried an illegal state transition from CLOSED to HALF_OPEN",
    );
    expect(circuitBreaker.state).toBe('CLOSED');
  });

  it('shouldResetToClosedState', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.reset();
    expect(circuitBreaker.state).toBe('CLOSED');
  });

  it('shouldResetClosedState', () => {
    const { circuitBreaker } = setUp();
    onSuccess(circuitBreaker);
    onSuccess(circuitBreaker);
    expect(circuitBreaker.metrics.numberOfSuccessfulCalls).toBe(2);
    circuitBreaker.reset();
    expect(circuitBreaker.state).toBe('CLOSED');
    expect(circuitBreaker.metrics.numberOfSuccessfulCalls).toBe(0);
  });

  it('shouldResetMetricsAfterMetricsOnlyStateTransition', () => {
    const { circuitBreaker } = setUp();
    onSuccess(circuitBreaker);
    onSuccess(circuitBreaker);
    expect(circuitBreaker.metrics.numberOfSuccessfulCalls).toBe(2);
    circuitBreaker.transitionToMetricsOnlyState();
    expect(circuitBreaker.state).toBe('METRICS_ONLY');
    expect(circuitBreaker.metrics.numberOfSuccessfulCalls).toBe(0);
  });

  it('shouldRecordMetricsInMetricsOnlyState', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToMetricsOnlyState();
    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    expect(circuitBreaker.state).toBe('METRICS_ONLY');
    assertMetricsAreReset(circuitBreaker);
    const seen = { success: 0, error: 0, transition: 0, failureRateExceeded: 0 };
    circuitBreaker.onSuccess(() => seen.success++);
    circuitBreaker.onError(() => seen.error++);
    circuitBreaker.onStateTransition(() => seen.transition++);
    circuitBreaker.onFailureRateExceeded(() => seen.failureRateExceeded++);

    for (let i = 1; i <= 3; i++) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      onError(circuitBreaker);
      expect(seen.error).toBe(i);
      expect(circuitBreaker.state).toBe('METRICS_ONLY');
      assertMetrics(circuitBreaker, -1, 0, i, i, 0);
    }
    expect(circuitBreaker.tryAcquirePermission()).toBe(true);
    onSuccess(circuitBreaker);
    expect(seen.success).toBe(1);
    assertMetrics(circuitBreaker, -1, 1, 4, 3, 0);

    onSuccess(circuitBreaker);
    expect(seen.success).toBe(2);
    expect(circuitBreaker.state).toBe('METRICS_ONLY');
    expect(seen.transition).toBe(0);
    expect(seen.failureRateExceeded).toBe(1);
    assertMetrics(circuitBreaker, 60, 2, 5, 3, 0);

    onError(circuitBreaker);
    expect(seen.failureRateExceeded).toBe(1);
    expect(seen.error).toBe(4);
    expect(circuitBreaker.state).toBe('METRICS_ONLY');
  });

  it('shouldPublishEachEventOnceInMetricOnlyState', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToMetricsOnlyState();
    let failureRateExceeded = 0;
    let slowCallRateExceeded = 0;
    circuitBreaker.onFailureRateExceeded(() => failureRateExceeded++);
    circuitBreaker.onSlowCallRateExceeded(() => slowCallRateExceeded++);
    for (let times = 0; times < 5; times++) onError(circuitBreaker, 5 * SECOND);
    expect([failureRateExceeded, slowCallRateExceeded]).toEqual([1, 1]);
  });

  const STATES: CircuitBreakerState[] = ['CLOSED', 'OPEN', 'HALF_OPEN', 'DISABLED', 'FORCED_OPEN', 'METRICS_ONLY'];
  const moveTo = (cb: CircuitBreakerPolicy, state: CircuitBreakerState): void =>
    ({
      CLOSED: () => cb.transitionToClosedState(),
      OPEN: () => cb.transitionToOpenState(),
      HALF_OPEN: () => cb.transitionToHalfOpenState(),
      DISABLED: () => cb.transitionToDisabledState(),
      FORCED_OPEN: () => cb.transitionToForcedOpenState(),
      METRICS_ONLY: () => cb.transitionToMetricsOnlyState(),
    })[state]();
  const inState = (state: CircuitBreakerState): CircuitBreakerPolicy => {
    const { circuitBreaker } = setUp();
    if (state === 'HALF_OPEN') circuitBreaker.transitionToOpenState();
    if (state !== 'CLOSED') moveTo(circuitBreaker, state);
    return circuitBreaker;
  };

  it.each(STATES)('allCircuitBreakerStatesAllowTransitionToMetricsOnlyMode: from %s', (state) => {
    const circuitBreaker = inState(state);
    expect(() => circuitBreaker.transitionToMetricsOnlyState()).not.toThrow();
    expect(circuitBreaker.state).toBe('METRICS_ONLY');
  });

  it.each(STATES)('allCircuitBreakerStatesAllowTransitionToItsOwnState: %s', (state) => {
    const circuitBreaker = inState(state);
    expect(() => moveTo(circuitBreaker, state)).not.toThrow();
    expect(circuitBreaker.state).toBe(state);
  });

  it('circuitBreakerDoesNotPublishStateTransitionEventsForInternalTransitions', () => {
    const { circuitBreaker } = setUp();
    let published = 0;
    circuitBreaker.onStateTransition(() => published++);
    const steps: Array<() => void> = [
      () => circuitBreaker.transitionToOpenState(),
      () => circuitBreaker.transitionToHalfOpenState(),
      () => circuitBreaker.transitionToDisabledState(),
      () => circuitBreaker.transitionToMetricsOnlyState(),
      () => circuitBreaker.transitionToClosedState(),
    ];
    let expected = 0;
    for (const step of steps) {
      step();
      expected++;
      expect(published).toBe(expected);
      step();
      expect(published).toBe(expected);
    }
  });

  it('circuitBreakerTransitionsToOpenAfterWaitDurationInHalfOpenState', async () => {
    const { circuitBreaker, clock } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    expect(circuitBreaker.state).toBe('HALF_OPEN');
    await clock.advance(2 * SECOND);
    expect(circuitBreaker.state).toBe('OPEN');
  });

  it('circuitBreakerTransitionsToClosedAfterWaitDurationInHalfOpenState', async () => {
    const clock = new VirtualClock(Date.UTC(2019, 0, 1, 12, 0, 0));
    const circuitBreaker = new CircuitBreakerPolicy(
      'testName',
      {
        ...CIRCUIT_BREAKER_SCHEMA.defaults,
        maxWaitDurationInHalfOpenState: SECOND,
        transitionToStateAfterWaitDuration: 'CLOSED',
      },
      clock,
    );
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    expect(circuitBreaker.state).toBe('HALF_OPEN');
    await clock.advance(2 * SECOND);
    expect(circuitBreaker.state).toBe('CLOSED');
  });

  it('circuitBreakerInitializeInClosedState', () => {
    const { circuitBreaker } = setUp({
      initialState: 'CLOSED',
      slidingWindowType: 'COUNT_BASED',
      slidingWindowSize: 5,
      enableExponentialBackoff: true,
    });
    expect(circuitBreaker.state).toBe('CLOSED');
    circuitBreaker.transitionToOpenState();
    expect(circuitBreaker.state).toBe('OPEN');
  });

  it('circuitBreakerInitializeInOpenState', () => {
    const { circuitBreaker } = setUp({
      initialState: 'OPEN',
      slidingWindowType: 'TIME_BASED',
      slidingWindowSize: 1,
      waitDurationInOpenState: 2 * SECOND,
      automaticTransitionFromOpenToHalfOpenEnabled: true,
    });
    expect(circuitBreaker.state).toBe('OPEN');
    circuitBreaker.transitionToHalfOpenState();
    expect(circuitBreaker.state).toBe('HALF_OPEN');
  });

  it('circuitBreakerInitializeInMetricOnlyState', () => {
    const { circuitBreaker } = setUp({
      initialState: 'METRICS_ONLY',
      slidingWindowType: 'COUNT_BASED',
      slidingWindowSize: 5,
      enableExponentialBackoff: true,
    });
    expect(circuitBreaker.state).toBe('METRICS_ONLY');
  });

  // CircuitBreakerStateMachine.HalfOpenState.checkIfThresholdsExceeded transitions without
  // publishCircuitThresholdsExceededEvent, which only ClosedState and MetricsOnlyState call.
  it('HalfOpenState: a failing trial round publishes ERROR then HALF_OPEN -> OPEN, no FAILURE_RATE_EXCEEDED', () => {
    const { circuitBreaker } = setUp();
    circuitBreaker.transitionToOpenState();
    circuitBreaker.transitionToHalfOpenState();
    const events: string[] = [];
    circuitBreaker.onError(() => events.push('ERROR'));
    circuitBreaker.onSuccess(() => events.push('SUCCESS'));
    circuitBreaker.onFailureRateExceeded(() => events.push('FAILURE_RATE_EXCEEDED'));
    circuitBreaker.onSlowCallRateExceeded(() => events.push('SLOW_CALL_RATE_EXCEEDED'));
    circuitBreaker.onStateTransition((e) => events.push(`${e.from}->${e.to}`));
    for (const fails of [true, true, false, true]) {
      expect(circuitBreaker.tryAcquirePermission()).toBe(true);
      if (fails) onError(circuitBreaker, 5 * SECOND);
      else onSuccess(circuitBreaker);
    }
    expect(events).toEqual(['ERROR', 'ERROR', 'SUCCESS', 'ERROR', 'HALF_OPEN->OPEN']);
  });

  it('ClosedState still publishes FAILURE_RATE_EXCEEDED before CLOSED -> OPEN', () => {
    const { circuitBreaker } = setUp();
    const events: string[] = [];
    circuitBreaker.onFailureRateExceeded(() => events.push('FAILURE_RATE_EXCEEDED'));
    circuitBreaker.onStateTransition((e) => events.push(`${e.from}->${e.to}`));
    for (let i = 0; i < 5; i++) onError(circuitBreaker);
    expect(events).toEqual(['FAILURE_RATE_EXCEEDED', 'CLOSED->OPEN']);
  });
});

/*
 * Port of Resilience4j's CircuitBreakerConfigTest
 * (resilience4j-circuitbreaker/src/test/java/io/github/resilience4j/circuitbreaker/):
 * CircuitBreakerConfig.Builder.build() caps minimumNumberOfCalls at a COUNT_BASED window's size.
 */
describe('Resilience4j CircuitBreakerConfigTest, ported', () => {
  it('shouldReduceMinimumNumberOfCallsToSlidingWindowSize', () => {
    const { circuitBreaker } = setUp({
      slidingWindowType: 'COUNT_BASED',
      minimumNumberOfCalls: 6,
      slidingWindowSize: 5,
    });
    expect(circuitBreaker.config.minimumNumberOfCalls).toBe(5);
    for (let i = 0; i < 5; i++) onError(circuitBreaker);
    expect(circuitBreaker.state).toBe('OPEN');
  });

  it('keeps minimumNumberOfCalls above a TIME_BASED window size (seconds, not calls)', () => {
    const { circuitBreaker } = setUp({
      slidingWindowType: 'TIME_BASED',
      minimumNumberOfCalls: 6,
      slidingWindowSize: 5,
    });
    expect(circuitBreaker.config.minimumNumberOfCalls).toBe(6);
  });
});
