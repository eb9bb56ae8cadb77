/**
 * Resilience4j conformance of the rate limiter, ported from Resilience4j's
 * own tests (resilience4j-ratelimiter/src/test/java/io/github/resilience4j/ratelimiter/):
 * `internal/AtomicRateLimiterTest`, `internal/RateLimitersImplementationTest`,
 * `RateLimiterConfigTest`, `RateLimiterWithConditionalDrainTest`,
 * `RequestNotPermittedExceptionTest` and `internal/InMemoryRateLimiterRegistryTest`. Each
 * case names the test method it mirrors. Time is a VirtualClock: where
 * Resilience4j stubs `currentNanoTime()`, these tests move the clock to the
 * same instant after the limiter's creation.
 *
 * Resilience4j's blocking `acquirePermission` waits out the timeout before
 * answering false; ours (like its non-blocking `reservePermission` and its
 * Reactor operator) answers at once. Its thread-interruption test
 * (`waitingThreadIsInterrupted`) has no JavaScript counterpart.
 */
import { VirtualClock } from '../../kernel/clock';
import { RateLimitedError } from '../../kernel/errors';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { RateLimiterConfigInput } from './rate-limiter.config';
import { RateLimiterPolicy } from './rate-limiter.policy';

const CYCLE_IN_NANOS = 250_000_000;
const CYCLE_MS = CYCLE_IN_NANOS / 1e6;
const PERMISSIONS_PER_CYCLE = 1;
const ms = (nanos: number): number => nanos / 1e6;

interface Setup {
  readonly clock: VirtualClock;
  readonly limiter: RateLimiterPolicy;
  /** Moves the clock to `nanos` after the limiter's creation (Resilience4j's `setTimeOnNanos`). */
  setTimeOnNanos(nanos: number): Promise<void>;
}

function setup(config: RateLimiterConfigInput): Setup {
  const clock = new VirtualClock();
  const limiter = new ResilienceRegistry({ clock, rateLimiter: { instances: { test: config } } }).rateLimiter('test');
  return { clock, limiter, setTimeOnNanos: (nanos) => clock.advance(ms(nanos) - clock.now()) };
}

const atomicSetup = (
  timeoutNanos: number,
  cycleNanos = CYCLE_IN_NANOS,
  permissionsPerCycle = PERMISSIONS_PER_CYCLE,
): Setup =>
  setup({
    limitForPeriod: permissionsPerCycle,
    limitRefreshPeriod: `${cycleNanos}ns`,
    timeoutDuration: `${timeoutNanos}ns`,
  });

describe('Resilience4j AtomicRateLimiterTest', () => {
  it('permissionsInFirstCycle: every permit is there just before the first period ends', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(0);
    await setTimeOnNanos(CYCLE_IN_NANOS - 10);
    expect(limiter.metrics.availablePermissions).toBe(PERMISSIONS_PER_CYCLE);
  });

  it('acquireAndRefreshWithEventPublishing: one permit per period, refused in between, events for each', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(0);
    const events: string[] = [];
    limiter.onSuccess(() => events.push('SUCCESSFUL_ACQUIRE'));
    limiter.onFailure(() => events.push('FAILED_ACQUIRE'));

    await setTimeOnNanos(CYCLE_IN_NANOS);
    expect(await limiter.acquirePermission()).toBe(true);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 0, msToWait: CYCLE_MS });
    expect(await limiter.acquirePermission()).toBe(false);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 0, msToWait: CYCLE_MS });

    await setTimeOnNanos(CYCLE_IN_NANOS * 2);
    expect(await limiter.acquirePermission()).toBe(true);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 0, msToWait: CYCLE_MS });
    expect(await limiter.acquirePermission()).toBe(false);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 0, msToWait: CYCLE_MS });
    expect(events).toEqual(['SUCCESSFUL_ACQUIRE', 'FAILED_ACQUIRE', 'SUCCESSFUL_ACQUIRE', 'FAILED_ACQUIRE']);
  });

  it('reserveAndRefresh: a caller that can wait reserves the next period permit and gets it when it starts', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(CYCLE_IN_NANOS);
    await setTimeOnNanos(CYCLE_IN_NANOS);
    expect(await limiter.acquirePermission()).toBe(true);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 0, msToWait: CYCLE_MS });

    let reserved: boolean | undefined;
    void limiter.acquirePermission().then((granted) => (reserved = granted));
    await VirtualClock.settle();
    expect(reserved).toBeUndefined();
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: -1,
      msToWait: CYCLE_MS * 2,
      numberOfWaitingThreads: 1,
    });

    await setTimeOnNanos(CYCLE_IN_NANOS * 2 + 10);
    expect(reserved).toBe(true);
    expect(limiter.detailedMetrics.availablePermissions).toBe(0);
    expect(limiter.detailedMetrics.msToWait).toBeCloseTo(ms(CYCLE_IN_NANOS - 10), 9);
    expect(limiter.metrics.numberOfWaitingThreads).toBe(0);
  });

  it('reserveFewThenSkipCyclesBeforeRefreshNonBlocking: one reservation fits the timeout, the next does not, idle periods refill to the limit only', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(CYCLE_IN_NANOS);
    await setTimeOnNanos(CYCLE_IN_NANOS);
    expect(limiter.reservePermission()).toBe(0);
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: 0,
      msToWait: CYCLE_MS,
      numberOfWaitingThreads: 0,
    });

    const reservation = limiter.reservePermission();
    expect(reservation).toBeGreaterThan(0);
    expect(reservation).toBeLessThanOrEqual(CYCLE_MS);
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: -1,
      msToWait: CYCLE_MS * 2,
      numberOfWaitingThreads: 0,
    });

    expect(limiter.reservePermission()).toBe(-1);
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: -1,
      msToWait: CYCLE_MS * 2,
      numberOfWaitingThreads: 0,
    });

    await setTimeOnNanos(CYCLE_IN_NANOS * 6 + 10);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 1, msToWait: 0, numberOfWaitingThreads: 0 });
  });

  it('reserveFewThenSkipCyclesBeforeRefresh: the first waiting caller gets its permit, the second is refused', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(CYCLE_IN_NANOS);
    await setTimeOnNanos(CYCLE_IN_NANOS);
    expect(await limiter.acquirePermission()).toBe(true);

    let first: boolean | undefined;
    void limiter.acquirePermission().then((granted) => (first = granted));
    await VirtualClock.settle();
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: -1,
      msToWait: CYCLE_MS * 2,
      numberOfWaitingThreads: 1,
    });

    let second: boolean | undefined;
    void limiter.acquirePermission().then((granted) => (second = granted));
    await VirtualClock.settle();
    expect(second).toBe(false);
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: -1,
      msToWait: CYCLE_MS * 2,
      numberOfWaitingThreads: 1,
    });

    await setTimeOnNanos(CYCLE_IN_NANOS * 6 + 10);
    expect(first).toBe(true);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 1, msToWait: 0, numberOfWaitingThreads: 0 });
  });

  it('reserveManyCyclesIfWegithgreaterThenLimitPerPeriod: asking for more permits than a period holds waits several periods', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(CYCLE_IN_NANOS * 5);
    await setTimeOnNanos(CYCLE_IN_NANOS);
    expect(limiter.reservePermission(PERMISSIONS_PER_CYCLE * 3)).toBeGreaterThan(CYCLE_MS);
  });

  it('rejectedByTimeoutNonBlocking: with no timeout a second caller in the period is refused, and the wait shrinks as the period runs out', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(0);
    await setTimeOnNanos(CYCLE_IN_NANOS);
    expect(limiter.reservePermission()).toBe(0);
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: 0,
      msToWait: CYCLE_MS,
      numberOfWaitingThreads: 0,
    });

    expect(limiter.reservePermission()).toBeLessThan(0);
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: 0,
      msToWait: CYCLE_MS,
      numberOfWaitingThreads: 0,
    });

    await setTimeOnNanos(CYCLE_IN_NANOS * 2 - 1);
    expect(limiter.detailedMetrics.availablePermissions).toBe(0);
    expect(limiter.detailedMetrics.msToWait).toBeCloseTo(ms(1), 12);
  });

  it('changePermissionsLimitBetweenCycles: a new limit applies from the next period; the waiting caller still gets its permit', async () => {
    const { limiter, setTimeOnNanos } = atomicSetup(CYCLE_IN_NANOS);
    await setTimeOnNanos(CYCLE_IN_NANOS);
    expect(await limiter.acquirePermission()).toBe(true);

    let reserved: boolean | undefined;
    void limiter.acquirePermission().then((granted) => (reserved = granted));
    await VirtualClock.settle();
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: -1,
      msToWait: CYCLE_MS * 2,
      numberOfWaitingThreads: 1,
    });

    limiter.changeLimitForPeriod(PERMISSIONS_PER_CYCLE * 2);
    expect(limiter.config.limitForPeriod).toBe(PERMISSIONS_PER_CYCLE * 2);
    expect(limiter.detailedMetrics).toMatchObject({
      availablePermissions: -1,
      msToWait: CYCLE_MS,
      numberOfWaitingThreads: 1,
    });

    await setTimeOnNanos(CYCLE_IN_NANOS * 2 + 10);
    expect(reserved).toBe(true);
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 1, msToWait: 0, numberOfWaitingThreads: 0 });
  });

  it('reservePermissionsUpfront: callers reserve the next period permits while the wait fits the timeout', async () => {
    const cycleInNanos = 10_000_000;
    const { limiter, setTimeOnNanos } = atomicSetup(12_000_000, cycleInNanos, 3);
    const timesToWait: number[] = [];
    for (let i = 0; i < 9; i++) {
      await setTimeOnNanos(cycleInNanos + i + 1);
      timesToWait.push(limiter.reservePermission(1));
    }
    const expected = [0, 0, 0, cycleInNanos - 4, cycleInNanos - 5, cycleInNanos - 6].map(ms);
    expected.forEach((wait, i) => expect(timesToWait[i]).toBeCloseTo(wait, 9));
    expect(timesToWait.slice(6)).toEqual([-1, -1, -1]);
  });

  it('changeDefaultTimeoutDuration: the config is replaced, the other settings kept', () => {
    const { limiter } = atomicSetup(0);
    const before = limiter.config;
    expect(before).toMatchObject({
      timeoutDuration: 0,
      limitForPeriod: PERMISSIONS_PER_CYCLE,
      limitRefreshPeriod: CYCLE_MS,
    });
    limiter.changeTimeoutDuration('1s');
    expect(limiter.config).not.toBe(before);
    expect(limiter.config).toMatchObject({
      timeoutDuration: 1000,
      limitForPeriod: PERMISSIONS_PER_CYCLE,
      limitRefreshPeriod: CYCLE_MS,
    });
  });

  it('changeLimitForPeriod: the config is replaced, the other settings kept', () => {
    const { limiter } = atomicSetup(0);
    const before = limiter.config;
    limiter.changeLimitForPeriod(35);
    expect(limiter.config).not.toBe(before);
    expect(limiter.config).toMatchObject({ timeoutDuration: 0, limitForPeriod: 35, limitRefreshPeriod: CYCLE_MS });
  });

  it('notSpyRawTest: one permit per period; a raised limit shows in the next period', async () => {
    const { limiter, clock } = atomicSetup(0);
    const firstCycle = limiter.detailedMetrics.cycle;
    await clock.advance(CYCLE_MS);
    expect(await limiter.acquirePermission()).toBe(true);
    await clock.advance(limiter.detailedMetrics.msToWait);
    expect(await limiter.acquirePermission()).toBe(true);
    expect(await limiter.acquirePermission()).toBe(false);
    const secondCycle = limiter.detailedMetrics.cycle;

    limiter.changeLimitForPeriod(PERMISSIONS_PER_CYCLE * 2);
    await clock.advance(limiter.detailedMetrics.msToWait);
    expect(await limiter.acquirePermission()).toBe(true);
    expect(await limiter.acquirePermission()).toBe(true);
    expect(await limiter.acquirePermission()).toBe(false);
    const thirdCycle = limiter.detailedMetrics.cycle;

    expect(secondCycle - firstCycle).toBe(2);
    expect(thirdCycle - secondCycle).toBe(1);
  });

  it('firstIterationAtomicRateLimitNanoTime: each instance counts its periods from its own creation', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      rateLimiter: { configs: { default: { limitForPeriod: 1, limitRefreshPeriod: '250ms', timeoutDuration: 0 } } },
    });
    const first = registry.rateLimiter('first');
    await clock.advance(100);
    const second = registry.rateLimiter('second');
    expect(await first.acquirePermission()).toBe(true);
    expect(await second.acquirePermission()).toBe(true);
    await clock.advance(150);
    expect(await first.acquirePermission()).toBe(true);
    expect(await second.acquirePermission()).toBe(false);
    await clock.advance(100);
    expect(await second.acquirePermission()).toBe(true);
  });

  it('metricsTest: a fresh limiter has every permit and no waiter; the period count grows', async () => {
    const { limiter, clock } = atomicSetup(0);
    expect(limiter.metrics).toEqual({ availablePermissions: 1, numberOfWaitingThreads: 0 });
    expect(limiter.detailedMetrics).toMatchObject({ availablePermissions: 1, numberOfWaitingThreads: 0, msToWait: 0 });
    expect(await limiter.acquirePermission()).toBe(true);
    await clock.advance(limiter.detailedMetrics.msToWait);
    expect(await limiter.acquirePermission()).toBe(true);
    expect(await limiter.acquirePermission()).toBe(false);
    expect(limiter.detailedMetrics.cycle).toBeGreaterThan(0);
  });

  it('namePropagation and metrics: the instance carries its name and starts with no waiter', () => {
    const { limiter } = atomicSetup(0);
    expect(limiter.name).toBe('test');
    expect(limiter.metrics.numberOfWaitingThreads).toBe(0);
  });
});

describe('Resilience4j RateLimitersImplementationTest', () => {
  const limiterOf = (period: string): Setup =>
    setup({ limitForPeriod: 10, limitRefreshPeriod: period, timeoutDuration: 0 });

  it('acquireBigNumberOfPermitsAtStartOfCycleTest: 5 + 5 of 10 are granted, one more is not until the next period', async () => {
    const { limiter, clock } = limiterOf('500ms');
    expect(await limiter.acquirePermission(5)).toBe(true);
    expect(await limiter.acquirePermission(5)).toBe(true);
    expect(await limiter.acquirePermission(1)).toBe(false);
    await clock.advance(500);
    expect(await limiter.acquirePermission(1)).toBe(true);
  });

  it('tryToAcquireBigNumberOfPermitsAtEndOfCycleTest: 5 more than the 4 left are refused, granted after the refresh', async () => {
    const { limiter, clock } = limiterOf('250ms');
    expect(await limiter.acquirePermission(1)).toBe(true);
    expect(await limiter.acquirePermission(5)).toBe(true);
    expect(await limiter.acquirePermission(5)).toBe(false);
    await clock.advance(250);
    expect(await limiter.acquirePermission(5)).toBe(true);
  });

  it('tryToAcquirePermitsAfterDrainBeforeCycleEndsTest: after a drain nothing is granted until the next period', async () => {
    const { limiter, clock } = limiterOf('250ms');
    await limiter.drainPermissions();
    expect(await limiter.acquirePermission()).toBe(false);
    await clock.advance(250);
    expect(await limiter.acquirePermission()).toBe(true);
  });

  it('drainCycleWhichAlreadyHashNoPremitsLeftTest: draining an empty period drains 0 permits (DRAINED event)', async () => {
    const { limiter } = limiterOf('250ms');
    await limiter.drainPermissions();
    expect(await limiter.acquirePermission(10)).toBe(false);
    const drained: number[] = [];
    limiter.onDrained((event) => drained.push(event.numberOfPermits));
    await limiter.drainPermissions();
    expect(drained).toEqual([0]);
  });
});

describe('Resilience4j RateLimiterConfigTest', () => {
  const build = (config: RateLimiterConfigInput): RateLimiterPolicy =>
    new ResilienceRegistry({ rateLimiter: { instances: { a: config } } }).rateLimiter('a');

  it('builderPositive: the defaults are 50 permits per 500 ns with a 5 s timeout, and the settings given are kept', () => {
    expect(new ResilienceRegistry().rateLimiter('any').config).toMatchObject({
      limitForPeriod: 50,
      limitRefreshPeriod: 0.0005,
      timeoutDuration: 5000,
    });
    const drain = (): boolean => false;
    expect(
      build({ timeoutDuration: '5s', limitRefreshPeriod: '500ns', limitForPeriod: 50, drainPermissionsOnResult: drain })
        .config,
    ).toMatchObject({
      limitForPeriod: 50,
      limitRefreshPeriod: 0.0005,
      timeoutDuration: 5000,
      drainPermissionsOnResult: drain,
    });
  });

  it('builderTimeoutIsNegative', () => {
    expect(() => build({ timeoutDuration: -1 })).toThrow(
      /rateLimiter instance 'a': key 'timeoutDuration' must be a non-negative duration.*got -1/,
    );
  });

  it('builderRefreshPeriodTooShort: zero', () => {
    expect(() => build({ limitRefreshPeriod: 0 })).toThrow(
      /rateLimiter instance 'a': key 'limitRefreshPeriod' must be a positive duration, got 0/,
    );
  });

  it('builderRefreshPeriodTooShort: under one nanosecond', () => {
    expect(() => build({ limitRefreshPeriod: 0.0000001 })).toThrow(/key 'limitRefreshPeriod' must be at least 1ns/);
  });

  it('builderRefreshPeriodNegative', () => {
    expect(() => build({ limitRefreshPeriod: '-1ns' })).toThrow(
      /key 'limitRefreshPeriod' must be a non-negative duration.*got "-1ns"/,
    );
  });

  it('builderLimitIsLessThanOne', () => {
    expect(() => build({ limitForPeriod: 0 })).toThrow(
      /rateLimiter instance 'a': key 'limitForPeriod' must be an integer >= 1, got 0/,
    );
  });

  it('buildTimeoutDurationIsNotWithinLimits: a timeout no timer can hold is refused, not clamped', () => {
    expect(() => build({ timeoutDuration: '30d' })).toThrow(/key 'timeoutDuration' must be at most 2147483647ms/);
  });
});

describe('Resilience4j RateLimiterWithConditionalDrainTest', () => {
  const limiterWith = (drain: boolean): { limiter: RateLimiterPolicy; seen: unknown[] } => {
    const seen: unknown[] = [];
    const limiter = new ResilienceRegistry({ clock: new VirtualClock() }).derive(
      'rateLimiter',
      'drained',
      {
        limitForPeriod: 50,
        limitRefreshPeriod: '1s',
        timeoutDuration: 0,
        drainPermissionsOnResult: (outcome: unknown) => {
          seen.push(outcome);
          return drain;
        },
      },
      'test',
      'test',
    );
    return { limiter, seen };
  };

  it('decorateCheckedSupplierAndApplyWithDrainConditionNotMet: the predicate sees the result, nothing is drained', async () => {
    const { limiter, seen } = limiterWith(false);
    await expect(limiter.execute(async () => 'ok')).resolves.toBe('ok');
    expect(seen).toEqual([{ failed: false, result: 'ok' }]);
    expect(limiter.metrics.availablePermissions).toBe(49);
  });

  it('decorateFailingCheckedSupplierAndApplyWithDrainConditionNotMet: the predicate sees the error, nothing is drained', async () => {
    const { limiter, seen } = limiterWith(false);
    const boom = new Error('boom');
    await expect(limiter.execute(async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(seen).toEqual([{ failed: true, error: boom }]);
    expect(limiter.metrics.availablePermissions).toBe(49);
  });

  it('decorateCheckedSupplierAndApplyWithDrainConditionMet: the permits left in the period are drained', async () => {
    const { limiter } = limiterWith(true);
    await limiter.execute(async () => 'ok');
    expect(limiter.metrics.availablePermissions).toBe(0);
    await expect(limiter.execute(async () => 'again')).rejects.toBeInstanceOf(RateLimitedError);
  });
});

describe('Resilience4j RequestNotPermittedExceptionTest', () => {
  it("shouldReturnCorrectMessageWhenStateIsOpen: the refusal names the limiter as Resilience4j's message does", async () => {
    const limiter = new ResilienceRegistry({
      rateLimiter: { instances: { testName: { limitForPeriod: 1, limitRefreshPeriod: '1h', timeoutDuration: 0 } } },
    }).rateLimiter('testName');
    await limiter.waitForPermission();
    const refusal = await limiter.waitForPermission().catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(RateLimitedError);
    expect((refusal as RateLimitedError).message).toBe("RateLimiter 'testName' does not permit further calls");
    expect((refusal as RateLimitedError).instance).toBe('testName');
  });
});

describe('Resilience4j InMemoryRateLimiterRegistryTest', () => {
  it('rateLimiterPositive: one instance per name', () => {
    const registry = new ResilienceRegistry();
    const first = registry.rateLimiter('test');
    expect(registry.rateLimiter('test')).toBe(first);
    expect(registry.rateLimiter('test1')).not.toBe(first);
  });
});
