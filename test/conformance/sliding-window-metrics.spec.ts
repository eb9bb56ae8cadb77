import {
  CountSlidingWindow,
  SlidingWindow,
  TimeSlidingWindow,
} from '../../lib/policies/circuit-breaker/sliding-window';

/*
 * Port of Resilience4j's FixedSizeSlidingWindowMetricsTest and SlidingTimeWindowMetricsTest
 * (resilience4j-core/src/test/java/io/github/resilience4j/core/metrics/). Each case names the
 * Java test it mirrors. Java's `record(duration, unit, Outcome)` is `record(nowMs, durationMs,
 * failed, slow)` here, and its Snapshot is read from the window's running totals. The time
 * window's MockClock (2019-08-04T12:00:00Z) is a plain clock value passed to each call.
 *
 * Cases not ported:
 * | Java test method                                            | why                                                       |
 * |-------------------------------------------------------------|-----------------------------------------------------------|
 * | FixedSizeSlidingWindowMetricsTest.testMoveHeadIndexByOne     | tests a package-private ring index that has no equivalent |
 * | SlidingTimeWindowMetricsTest.testMoveHeadIndexByOne          | tests a package-private ring index that has no equivalent |
 * | SlidingTimeWindowMetricsTest.checkInitialBucketCreation      | only its snapshot half: buckets are not exposed here      |
 * | the LockFree* parameterisations of every case                | one implementation here; there are no threads to race     |
 */

type Outcome = 'SUCCESS' | 'ERROR' | 'SLOW_SUCCESS' | 'SLOW_ERROR';

interface Snapshot {
  totalNumberOfCalls: number;
  numberOfSuccessfulCalls: number;
  numberOfFailedCalls: number;
  totalNumberOfSlowCalls: number;
  numberOfSlowSuccessfulCalls: number;
  numberOfSlowFailedCalls: number;
  totalDuration: number;
  averageDuration: number;
  failureRate: number;
  slowCallRate: number;
}

/** Resilience4j's SnapshotImpl over the window's totals (rates 0 when empty; durations in whole ms). */
function snapshot(window: SlidingWindow): Snapshot {
  const total = window.totalCalls;
  return {
    totalNumberOfCalls: total,
    numberOfSuccessfulCalls: total - window.failedCalls,
    numberOfFailedCalls: window.failedCalls,
    totalNumberOfSlowCalls: window.slowCalls,
    numberOfSlowSuccessfulCalls: window.slowCalls - window.slowFailedCalls,
    numberOfSlowFailedCalls: window.slowFailedCalls,
    totalDuration: Math.round(window.totalDurationMs),
    averageDuration: total === 0 ? 0 : Math.floor(Math.round(window.totalDurationMs) / total),
    failureRate: total === 0 ? 0 : (window.failedCalls * 100) / total,
    slowCallRate: total === 0 ? 0 : (window.slowCalls * 100) / total,
  };
}

function record(window: SlidingWindow, nowMs: number, durationMs: number, outcome: Outcome): Snapshot {
  window.record(nowMs, durationMs, outcome === 'ERROR' || outcome === 'SLOW_ERROR', outcome.startsWith('SLOW'));
  window.refresh(nowMs);
  return snapshot(window);
}

const T0 = Date.UTC(2019, 7, 4, 12, 0, 0);

describe.each([
  ['FixedSizeSlidingWindowMetricsTest', (size: number) => new CountSlidingWindow(size)],
  ['SlidingTimeWindowMetricsTest', (size: number) => new TimeSlidingWindow(size)],
])('Resilience4j %s, ported (shared cases)', (_javaClass, make) => {
  it('checkInitialBucketCreation', () => {
    const window = make(5);
    window.refresh(T0);
    expect(snapshot(window)).toEqual({
      totalNumberOfCalls: 0,
      numberOfSuccessfulCalls: 0,
      numberOfFailedCalls: 0,
      totalNumberOfSlowCalls: 0,
      numberOfSlowSuccessfulCalls: 0,
      numberOfSlowFailedCalls: 0,
      totalDuration: 0,
      averageDuration: 0,
      failureRate: 0,
      slowCallRate: 0,
    });
  });

  it('testRecordSuccess', () => {
    expect(record(make(5), T0, 100, 'SUCCESS')).toMatchObject({
      totalNumberOfCalls: 1,
      numberOfSuccessfulCalls: 1,
      numberOfFailedCalls: 0,
      totalNumberOfSlowCalls: 0,
      numberOfSlowSuccessfulCalls: 0,
      numberOfSlowFailedCalls: 0,
      totalDuration: 100,
      averageDuration: 100,
      failureRate: 0,
    });
  });

  it('testRecordError', () => {
    expect(record(make(5), T0, 100, 'ERROR')).toMatchObject({
      totalNumberOfCalls: 1,
      numberOfSuccessfulCalls: 0,
      numberOfFailedCalls: 1,
      totalNumberOfSlowCalls: 0,
      numberOfSlowSuccessfulCalls: 0,
      numberOfSlowFailedCalls: 0,
      totalDuration: 100,
      averageDuration: 100,
      failureRate: 100,
    });
  });

  it('testRecordSlowSuccess', () => {
    expect(record(make(5), T0, 100, 'SLOW_SUCCESS')).toMatchObject({
      totalNumberOfCalls: 1,
      numberOfSuccessfulCalls: 1,
      numberOfFailedCalls: 0,
      totalNumberOfSlowCalls: 1,
      numberOfSlowSuccessfulCalls: 1,
      numberOfSlowFailedCalls: 0,
      totalDuration: 100,
      averageDuration: 100,
      failureRate: 0,
    });
  });

  it('testSlowCallsPercentage', () => {
    const window = make(5);
    record(window, T0, 10_000, 'SLOW_SUCCESS');
    record(window, T0, 10_000, 'SLOW_ERROR');
    record(window, T0, 100, 'SUCCESS');
    record(window, T0, 100, 'SUCCESS');
    expect(record(window, T0, 100, 'SUCCESS')).toMatchObject({
      totalNumberOfCalls: 5,
      numberOfSuccessfulCalls: 4,
      totalNumberOfSlowCalls: 2,
      numberOfSlowSuccessfulCalls: 1,
      numberOfSlowFailedCalls: 1,
      totalDuration: 20_300,
      averageDuration: 4060,
      slowCallRate: 40,
    });
  });
});

describe('Resilience4j FixedSizeSlidingWindowMetricsTest, ported', () => {
  it('testSlidingWindowMetrics', () => {
    const window = new CountSlidingWindow(4);
    const steps: Array<[Outcome, Partial<Snapshot>]> = [
      [
        'ERROR',
        {
          totalNumberOfCalls: 1,
          numberOfSuccessfulCalls: 0,
          numberOfFailedCalls: 1,
          totalDuration: 100,
          averageDuration: 100,
          failureRate: 100,
        },
      ],
      [
        'SUCCESS',
        {
          totalNumberOfCalls: 2,
          numberOfSuccessfulCalls: 1,
          numberOfFailedCalls: 1,
          totalDuration: 200,
          averageDuration: 100,
          failureRate: 50,
        },
      ],
      [
        'SUCCESS',
        {
          totalNumberOfCalls: 3,
          numberOfSuccessfulCalls: 2,
          numberOfFailedCalls: 1,
          totalDuration: 300,
          averageDuration: 100,
        },
      ],
      [
        'SUCCESS',
        {
          totalNumberOfCalls: 4,
          numberOfSuccessfulCalls: 3,
          numberOfFailedCalls: 1,
          totalDuration: 400,
          averageDuration: 100,
          failureRate: 25,
        },
      ],
      [
        'SUCCESS',
        {
          totalNumberOfCalls: 4,
          numberOfSuccessfulCalls: 4,
          numberOfFailedCalls: 0,
          totalDuration: 400,
          averageDuration: 100,
          failureRate: 0,
        },
      ],
    ];
    for (const [outcome, expected] of steps) expect(record(window, T0, 100, outcome)).toMatchObject(expected);
    // Java compares the float 33.333332f; the same rate in double precision here.
    const third = new CountSlidingWindow(4);
    for (const outcome of ['ERROR', 'SUCCESS', 'SUCCESS'] as const) record(third, T0, 100, outcome);
    expect(snapshot(third).failureRate).toBeCloseTo(33.333332, 5);
  });

  it('testSlidingWindowMetricsWithSlowCalls', () => {
    const window = new CountSlidingWindow(2);
    const steps: Array<[Outcome, Partial<Snapshot>]> = [
      [
        'SLOW_ERROR',
        {
          totalNumberOfCalls: 1,
          totalNumberOfSlowCalls: 1,
          numberOfSuccessfulCalls: 0,
          numberOfFailedCalls: 1,
          numberOfSlowSuccessfulCalls: 0,
          numberOfSlowFailedCalls: 1,
          totalDuration: 100,
          failureRate: 100,
        },
      ],
      [
        'SLOW_SUCCESS',
        {
          totalNumberOfCalls: 2,
          totalNumberOfSlowCalls: 2,
          numberOfSuccessfulCalls: 1,
          numberOfFailedCalls: 1,
          numberOfSlowSuccessfulCalls: 1,
          numberOfSlowFailedCalls: 1,
          totalDuration: 200,
          failureRate: 50,
        },
      ],
      [
        'SUCCESS',
        {
          totalNumberOfCalls: 2,
          totalNumberOfSlowCalls: 1,
          numberOfSuccessfulCalls: 2,
          numberOfFailedCalls: 0,
          numberOfSlowSuccessfulCalls: 1,
          numberOfSlowFailedCalls: 0,
          totalDuration: 200,
          failureRate: 0,
        },
      ],
      [
        'SUCCESS',
        {
          totalNumberOfCalls: 2,
          totalNumberOfSlowCalls: 0,
          numberOfSuccessfulCalls: 2,
          numberOfFailedCalls: 0,
          numberOfSlowSuccessfulCalls: 0,
          numberOfSlowFailedCalls: 0,
          totalDuration: 200,
          failureRate: 0,
        },
      ],
      [
        'SUCCESS',
        {
          totalNumberOfCalls: 2,
          totalNumberOfSlowCalls: 0,
          numberOfSuccessfulCalls: 2,
          numberOfFailedCalls: 0,
          numberOfSlowSuccessfulCalls: 0,
          numberOfSlowFailedCalls: 0,
          totalDuration: 200,
          failureRate: 0,
        },
      ],
    ];
    for (const [outcome, expected] of steps)
      expect(record(window, T0, 100, outcome)).toMatchObject({ averageDuration: 100, ...expected });
  });
});

describe('Resilience4j SlidingTimeWindowMetricsTest, ported', () => {
  it('shouldClearSlidingTimeWindowMetrics', () => {
    const window = new TimeSlidingWindow(5);
    let now = T0;
    expect(record(window, now, 100, 'ERROR')).toMatchObject({
      totalNumberOfCalls: 1,
      numberOfFailedCalls: 1,
      totalDuration: 100,
      failureRate: 100,
    });
    now += 100;
    expect(record(window, now, 100, 'SUCCESS')).toMatchObject({
      totalNumberOfCalls: 2,
      numberOfSuccessfulCalls: 1,
      totalDuration: 200,
      failureRate: 50,
    });
    now += 700;
    expect(record(window, now, 1000, 'SLOW_ERROR')).toMatchObject({
      totalNumberOfCalls: 3,
      numberOfSuccessfulCalls: 1,
      numberOfFailedCalls: 2,
      numberOfSlowFailedCalls: 1,
      totalDuration: 1200,
      averageDuration: 400,
    });
    now += 4000;
    window.refresh(now);
    expect(snapshot(window)).toMatchObject({
      totalNumberOfCalls: 3,
      numberOfFailedCalls: 2,
      totalDuration: 1200,
      averageDuration: 400,
    });
    now += 1000;
    window.refresh(now);
    expect(snapshot(window)).toMatchObject({
      totalNumberOfCalls: 0,
      numberOfSuccessfulCalls: 0,
      numberOfFailedCalls: 0,
      totalDuration: 0,
      averageDuration: 0,
      failureRate: 0,
    });
    now += 100;
    expect(record(window, now, 100, 'SUCCESS')).toMatchObject({
      totalNumberOfCalls: 1,
      numberOfSuccessfulCalls: 1,
      totalDuration: 100,
      failureRate: 0,
    });
    now += 5000;
    expect(record(window, now, 100, 'SUCCESS')).toMatchObject({
      totalNumberOfCalls: 1,
      numberOfSuccessfulCalls: 1,
      totalDuration: 100,
      failureRate: 0,
    });
  });

  it('testSlidingTimeWindowMetrics', () => {
    const window = new TimeSlidingWindow(5);
    const steps: Array<[number, Outcome, number, number, number]> = [
      // [advance ms, outcome, total calls, successful, failed]
      [0, 'ERROR', 1, 0, 1],
      [100, 'SUCCESS', 2, 1, 1],
      [100, 'SUCCESS', 3, 2, 1],
      [1000, 'SUCCESS', 4, 3, 1],
      [1000, 'SUCCESS', 5, 4, 1],
      [1000, 'ERROR', 6, 4, 2],
      [1000, 'SUCCESS', 7, 5, 2],
      [1000, 'SUCCESS', 5, 4, 1],
      [1000, 'SUCCESS', 5, 4, 1],
      [5000, 'SUCCESS', 1, 1, 0],
    ];
    let now = T0;
    for (const [advance, outcome, total, successful, failed] of steps) {
      now += advance;
      expect(record(window, now, 100, outcome)).toMatchObject({
        totalNumberOfCalls: total,
        numberOfSuccessfulCalls: successful,
        numberOfFailedCalls: failed,
        totalDuration: total * 100,
      });
    }
  });
});
