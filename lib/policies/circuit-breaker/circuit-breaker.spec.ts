import { VirtualClock } from '../../kernel/clock';
import { BulkheadFullError, CallNotPermittedError, TimeoutExceededError } from '../../kernel/errors';
import { INVALID_VALUE } from '../../config/config.messages';
import { resolveSection } from '../../config/schema';
import { StandardPipeline } from '../../engine/standard-pipeline';
import { CircuitBreakerPolicy } from './circuit-breaker.policy';
import type { CircuitBreakerState } from './circuit-breaker.events';
import { CIRCUIT_BREAKER_SCHEMA, CircuitBreakerConfig } from './circuit-breaker.config';
import { IllegalStateTransitionError } from './illegal-state-transition.error';

class IoError extends Error {}
class BusinessError extends Error {}
class StatusError extends Error {
  constructor(readonly status: number) {
    super(`HTTP ${status}`);
  }
}
class FakeHttpException extends Error {
  constructor(private readonly code: number) {
    super(`HTTP ${code}`);
  }
  getStatus(): number {
    return this.code;
  }
}

function config(overrides: Partial<CircuitBreakerConfig> = {}): CircuitBreakerConfig {
  return { ...CIRCUIT_BREAKER_SCHEMA.defaults, ...overrides };
}

function setup(overrides: Partial<CircuitBreakerConfig> = {}): { clock: VirtualClock; cb: CircuitBreakerPolicy } {
  const clock = new VirtualClock();
  return { clock, cb: new CircuitBreakerPolicy('backend', config(overrides), clock) };
}

const succeed = (cb: CircuitBreakerPolicy): Promise<string> => cb.execute(() => 'ok');

async function fail(cb: CircuitBreakerPolicy, error: unknown = new IoError('down')): Promise<void> {
  await expect(
    cb.execute(() => {
      throw error;
    }),
  ).rejects.toBe(error);
}

/** A call that takes `ms` on the virtual clock, then succeeds or throws `error`. */
async function timed(cb: CircuitBreakerPolicy, clock: VirtualClock, ms: number, error?: unknown): Promise<void> {
  const call = cb.execute(
    () =>
      new Promise<string>((resolve, reject) => {
        clock.setTimeout(() => (error === undefined ? resolve('ok') : reject(error)), ms);
      }),
  );
  const outcome = call.then(
    () => undefined,
    (e: unknown) => e,
  );
  await clock.advance(ms);
  expect(await outcome).toBe(error);
}

interface Pending {
  /** Resolves with `ok` or the error the call rejected with. */
  readonly settled: Promise<unknown>;
  readonly invoked: () => boolean;
  succeed(): Promise<void>;
  fail(error?: unknown): Promise<void>;
}

/** Starts a call that stays in flight until told how to end. */
function start(cb: CircuitBreakerPolicy): Pending {
  let resolve!: (v: string) => void;
  let reject!: (e: unknown) => void;
  let invoked = false;
  const settled = cb
    .execute(() => {
      invoked = true;
      return new Promise<string>((res, rej) => {
        resolve = res;
        reject = rej;
      });
    })
    .then(
      (v) => v,
      (e: unknown) => e,
    );
  return {
    settled,
    invoked: () => invoked,
    async succeed() {
      resolve('ok');
      await settled;
    },
    async fail(error: unknown = new IoError('down')) {
      reject(error);
      await settled;
    },
  };
}

async function refused(cb: CircuitBreakerPolicy): Promise<CallNotPermittedError> {
  let invoked = false;
  const error = await cb
    .execute(() => {
      invoked = true;
      return 'ok';
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(invoked).toBe(false);
  expect(error).toBeInstanceOf(CallNotPermittedError);
  return error as CallNotPermittedError;
}

function transitions(cb: CircuitBreakerPolicy): string[] {
  const seen: string[] = [];
  cb.onStateTransition((e) => seen.push(`${e.from}->${e.to}`));
  return seen;
}

async function openBreaker(cb: CircuitBreakerPolicy, calls: number): Promise<void> {
  for (let i = 0; i < calls; i++) await fail(cb);
  expect(cb.state).toBe('OPEN');
}

describe('CircuitBreakerPolicy', () => {
  describe('CLOSED: rates over the sliding window', () => {
    it('computes no rate and never opens before minimumNumberOfCalls', async () => {
      const { cb } = setup({ slidingWindowSize: 10, minimumNumberOfCalls: 5 });
      for (let i = 0; i < 4; i++) await fail(cb);
      expect(cb.state).toBe('CLOSED');
      expect(cb.metrics).toMatchObject({
        failureRate: -1,
        slowCallRate: -1,
        numberOfBufferedCalls: 4,
        numberOfFailedCalls: 4,
      });
      await fail(cb);
      expect(cb.state).toBe('OPEN');
      expect(cb.metrics.failureRate).toBe(100);
    });

    it('opens at exactly the failure-rate threshold, not below it', async () => {
      const below = setup({ slidingWindowSize: 5, minimumNumberOfCalls: 5, failureRateThreshold: 50 }).cb;
      for (let i = 0; i < 3; i++) await succeed(below);
      await fail(below);
      await fail(below);
      expect(below.metrics.failureRate).toBe(40);
      expect(below.state).toBe('CLOSED');

      const at = setup({ slidingWindowSize: 4, minimumNumberOfCalls: 4, failureRateThreshold: 50 }).cb;
      const rates: number[] = [];
      at.onFailureRateExceeded((e) => rates.push(e.failureRate));
      await succeed(at);
      await succeed(at);
      await fail(at);
      expect(at.state).toBe('CLOSED');
      await fail(at);
      expect(at.state).toBe('OPEN');
      expect(at.metrics).toMatchObject({
        failureRate: 50,
        numberOfBufferedCalls: 4,
        numberOfFailedCalls: 2,
        numberOfSuccessfulCalls: 2,
      });
      expect(rates).toEqual([50]);
    });

    it('publishes only the rate that crossed its threshold', async () => {
      const { cb } = setup({ slidingWindowSize: 2, minimumNumberOfCalls: 2 });
      const published: string[] = [];
      cb.onFailureRateExceeded((e) => published.push(`failure ${e.failureRate}`));
      cb.onSlowCallRateExceeded((e) => published.push(`slow ${e.slowCallRate}`));
      await openBreaker(cb, 2);
      expect(published).toEqual(['failure 100']);
    });

    it('opens a rate-based breaker on a service that fails every second call', async () => {
      const { cb } = setup({ slidingWindowSize: 10, minimumNumberOfCalls: 10, failureRateThreshold: 50 });
      for (let i = 0; i < 9; i++) {
        if (i % 2 === 0) await succeed(cb);
        else await fail(cb);
        expect(cb.state).toBe('CLOSED');
      }
      await fail(cb);
      expect(cb.state).toBe('OPEN');
      expect(cb.metrics).toMatchObject({ failureRate: 50, numberOfFailedCalls: 5, numberOfSuccessfulCalls: 5 });
    });

    it('slides a count-based window: the oldest call drops out', async () => {
      const { cb } = setup({ slidingWindowSize: 4, minimumNumberOfCalls: 4, failureRateThreshold: 50 });
      await fail(cb);
      for (let i = 0; i < 3; i++) await succeed(cb);
      expect(cb.metrics).toMatchObject({ failureRate: 25, numberOfBufferedCalls: 4 });
      await succeed(cb);
      expect(cb.metrics).toMatchObject({ failureRate: 0, numberOfBufferedCalls: 4, numberOfFailedCalls: 0 });
      await fail(cb);
      expect(cb.state).toBe('CLOSED');
      await fail(cb);
      expect(cb.state).toBe('OPEN');
    });

    it('caps minimumNumberOfCalls at a count-based window size, as Resilience4j', async () => {
      const { cb } = setup({ slidingWindowSize: 3, minimumNumberOfCalls: 10 });
      await fail(cb);
      await fail(cb);
      expect(cb.metrics.failureRate).toBe(-1);
      await fail(cb);
      expect(cb.state).toBe('OPEN');
    });

    it('opens on slow calls alone, with zero errors; a call lasting exactly the threshold is not slow', async () => {
      const { cb, clock } = setup({
        slidingWindowSize: 4,
        minimumNumberOfCalls: 4,
        slowCallDurationThreshold: 1000,
        slowCallRateThreshold: 50,
      });
      const slowRates: number[] = [];
      const failureRates: number[] = [];
      cb.onSlowCallRateExceeded((e) => slowRates.push(e.slowCallRate));
      cb.onFailureRateExceeded((e) => failureRates.push(e.failureRate));
      await timed(cb, clock, 10);
      await timed(cb, clock, 1000);
      await timed(cb, clock, 1001);
      expect(cb.state).toBe('CLOSED');
      // CircuitBreakerMetrics.onSuccess: slow only when strictly longer than slowCallDurationThreshold.
      expect(cb.metrics.numberOfSlowCalls).toBe(1);
      await timed(cb, clock, 5000);
      expect(cb.state).toBe('OPEN');
      expect(cb.metrics).toMatchObject({
        failureRate: 0,
        slowCallRate: 50,
        numberOfFailedCalls: 0,
        numberOfSlowCalls: 2,
        numberOfSlowSuccessfulCalls: 2,
        numberOfSlowFailedCalls: 0,
      });
      expect(slowRates).toEqual([50]);
      expect(failureRates).toEqual([]);
    });

    it('counts a slow failure as both slow and failed', async () => {
      const { cb, clock } = setup({ slowCallDurationThreshold: 100 });
      await timed(cb, clock, 150, new IoError('late and broken'));
      await timed(cb, clock, 150);
      expect(cb.metrics).toMatchObject({
        numberOfSlowCalls: 2,
        numberOfSlowFailedCalls: 1,
        numberOfSlowSuccessfulCalls: 1,
        numberOfFailedCalls: 1,
      });
    });
  });

  describe('TIME_BASED window', () => {
    it('drops calls older than the window as the clock moves, without new calls', async () => {
      const { cb, clock } = setup({ slidingWindowType: 'TIME_BASED', slidingWindowSize: 10, minimumNumberOfCalls: 3 });
      await fail(cb);
      await fail(cb);
      await clock.advance(5000);
      await succeed(cb);
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 3, numberOfFailedCalls: 2 });
      expect(cb.metrics.failureRate).toBeCloseTo(66.667, 2);
      expect(cb.state).toBe('OPEN');

      const fresh = setup({ slidingWindowType: 'TIME_BASED', slidingWindowSize: 10, minimumNumberOfCalls: 3 });
      await fail(fresh.cb);
      await fail(fresh.cb);
      await fresh.clock.advance(5000);
      await succeed(fresh.cb);
      await fresh.clock.advance(4999);
      expect(fresh.cb.metrics.numberOfBufferedCalls).toBe(3);
      await fresh.clock.advance(1);
      // t = 10 s: second 0 has left the 10-second window, second 5 has not
      expect(fresh.cb.metrics).toMatchObject({ numberOfBufferedCalls: 1, numberOfFailedCalls: 0, failureRate: -1 });
      await fresh.clock.advance(60_000);
      expect(fresh.cb.metrics.numberOfBufferedCalls).toBe(0);
    });

    it('does not cap minimumNumberOfCalls at the window size', async () => {
      const { cb, clock } = setup({ slidingWindowType: 'TIME_BASED', slidingWindowSize: 2, minimumNumberOfCalls: 3 });
      await fail(cb);
      await fail(cb);
      await clock.advance(2000);
      await fail(cb);
      expect(cb.state).toBe('CLOSED');
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 1, failureRate: -1 });
      await fail(cb);
      await fail(cb);
      expect(cb.state).toBe('OPEN');
    });
  });

  describe('OPEN', () => {
    it('refuses at once with the time left until it may admit calls again', async () => {
      const { cb, clock } = setup({ slidingWindowSize: 2, waitDurationInOpenState: 10_000 });
      const refusals: string[] = [];
      cb.onCallNotPermitted((e) => refusals.push(e.state));
      await openBreaker(cb, 2);
      await clock.advance(3000);
      const error = await refused(cb);
      expect(error.state).toBe('OPEN');
      expect(error.retryAfterMs).toBe(7000);
      expect(error.instance).toBe('backend');
      await clock.advance(6999);
      expect((await refused(cb)).retryAfterMs).toBe(1);
      expect(cb.metrics.numberOfNotPermittedCalls).toBe(2);
      expect(refusals).toEqual(['OPEN', 'OPEN']);
    });

    it('turns HALF_OPEN lazily, on the first call after the wait', async () => {
      const { cb, clock } = setup({ slidingWindowSize: 2, waitDurationInOpenState: 10_000 });
      const seen = transitions(cb);
      await openBreaker(cb, 2);
      await clock.advance(60_000);
      expect(cb.state).toBe('OPEN');
      expect(clock.pendingTimers).toBe(0);
      const trial = start(cb);
      expect(trial.invoked()).toBe(true);
      expect(cb.state).toBe('HALF_OPEN');
      expect(seen).toEqual(['CLOSED->OPEN', 'OPEN->HALF_OPEN']);
      await trial.succeed();
    });

    it('turns HALF_OPEN on a timer when automaticTransitionFromOpenToHalfOpenEnabled', async () => {
      const { cb, clock } = setup({
        slidingWindowSize: 2,
        waitDurationInOpenState: 10_000,
        automaticTransitionFromOpenToHalfOpenEnabled: true,
      });
      await openBreaker(cb, 2);
      expect(clock.pendingTimers).toBe(1);
      await clock.advance(9999);
      expect(cb.state).toBe('OPEN');
      await clock.advance(1);
      expect(cb.state).toBe('HALF_OPEN');
      expect(clock.pendingTimers).toBe(0);
    });

    it('clears the automatic timer on any other transition', async () => {
      const { cb, clock } = setup({
        slidingWindowSize: 2,
        waitDurationInOpenState: 10_000,
        automaticTransitionFromOpenToHalfOpenEnabled: true,
      });
      await openBreaker(cb, 2);
      cb.transitionToClosedState();
      expect(clock.pendingTimers).toBe(0);
      await clock.advance(20_000);
      expect(cb.state).toBe('CLOSED');
    });
  });

  describe('HALF_OPEN', () => {
    const halfOpen = { slidingWindowSize: 2, waitDurationInOpenState: 1000, permittedNumberOfCallsInHalfOpenState: 3 };

    async function toHalfOpen(cb: CircuitBreakerPolicy, clock: VirtualClock): Promise<void> {
      await openBreaker(cb, 2);
      await clock.advance(1001);
    }

    it('admits exactly the permitted trials and refuses the rest at once', async () => {
      const { cb, clock } = setup(halfOpen);
      await toHalfOpen(cb, clock);
      const trials = [start(cb), start(cb), start(cb)];
      expect(trials.map((t) => t.invoked())).toEqual([true, true, true]);
      expect(cb.state).toBe('HALF_OPEN');
      const error = await refused(cb);
      expect(error.state).toBe('HALF_OPEN');
      expect(error.retryAfterMs).toBeUndefined();
      await refused(cb);
      expect(cb.metrics.numberOfNotPermittedCalls).toBe(2);
      for (const t of trials) await t.succeed();
      expect(cb.state).toBe('CLOSED');
    });

    it('decides on the rate among all trials, not on the first failure', async () => {
      const { cb, clock } = setup({ ...halfOpen, failureRateThreshold: 50 });
      await toHalfOpen(cb, clock);
      const trials = [start(cb), start(cb), start(cb)];
      await trials[0].fail();
      expect(cb.state).toBe('HALF_OPEN');
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 1, failureRate: -1 });
      await trials[1].succeed();
      expect(cb.state).toBe('HALF_OPEN');
      await trials[2].succeed();
      expect(cb.state).toBe('CLOSED');
      expect(cb.metrics.numberOfBufferedCalls).toBe(0);
    });

    it('decides after min(minimumNumberOfCalls, permitted) trials, as Resilience4j; a later trial no longer counts', async () => {
      const { cb, clock } = setup({ ...halfOpen, minimumNumberOfCalls: 2 });
      await openBreaker(cb, 2);
      await clock.advance(1001);
      const trials = [start(cb), start(cb), start(cb)];
      await trials[0].fail();
      expect(cb.state).toBe('HALF_OPEN');
      await trials[1].fail();
      expect(cb.state).toBe('OPEN');
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 2, numberOfFailedCalls: 2, failureRate: 100 });
      await trials[2].succeed();
      expect(cb.state).toBe('OPEN');
      expect(cb.metrics.numberOfBufferedCalls).toBe(2);
    });

    it('opens again when the trials are too slow', async () => {
      const { cb, clock } = setup({
        ...halfOpen,
        permittedNumberOfCallsInHalfOpenState: 2,
        slowCallDurationThreshold: 500,
        slowCallRateThreshold: 100,
      });
      await toHalfOpen(cb, clock);
      await timed(cb, clock, 501);
      await timed(cb, clock, 800);
      expect(cb.state).toBe('OPEN');
    });

    it('returns the permit of a trial that ends with an ignored error', async () => {
      const { cb, clock } = setup({
        ...halfOpen,
        permittedNumberOfCallsInHalfOpenState: 1,
        ignoreExceptions: [BusinessError],
      });
      await toHalfOpen(cb, clock);
      const trial = start(cb);
      await refused(cb);
      await trial.fail(new BusinessError('not found'));
      expect(cb.state).toBe('HALF_OPEN');
      const next = start(cb);
      expect(next.invoked()).toBe(true);
      await next.succeed();
      expect(cb.state).toBe('CLOSED');
    });

    it('opens again after maxWaitDurationInHalfOpenState, and a late trial no longer counts', async () => {
      const { cb, clock } = setup({
        ...halfOpen,
        permittedNumberOfCallsInHalfOpenState: 1,
        maxWaitDurationInHalfOpenState: 5000,
      });
      const seen = transitions(cb);
      await toHalfOpen(cb, clock);
      const hung = start(cb);
      await clock.advance(4999);
      expect(cb.state).toBe('HALF_OPEN');
      await clock.advance(1);
      expect(cb.state).toBe('OPEN');
      expect((await refused(cb)).retryAfterMs).toBe(1000);
      await hung.succeed();
      expect(cb.state).toBe('OPEN');
      expect(seen).toEqual(['CLOSED->OPEN', 'OPEN->HALF_OPEN', 'HALF_OPEN->OPEN']);
    });

    it('waits for its trials indefinitely when maxWaitDurationInHalfOpenState is 0', async () => {
      const { cb, clock } = setup({
        ...halfOpen,
        permittedNumberOfCallsInHalfOpenState: 1,
        slowCallDurationThreshold: 7_200_000,
      });
      await toHalfOpen(cb, clock);
      const hung = start(cb);
      await clock.advance(3_600_000);
      expect(cb.state).toBe('HALF_OPEN');
      expect(clock.pendingTimers).toBe(0);
      await hung.succeed();
      expect(cb.state).toBe('CLOSED');
    });

    it('does not count a call admitted before the breaker opened as a trial', async () => {
      const { cb, clock } = setup({ ...halfOpen, permittedNumberOfCallsInHalfOpenState: 1 });
      const early = start(cb);
      await toHalfOpen(cb, clock);
      const trial = start(cb);
      await early.succeed();
      expect(cb.state).toBe('HALF_OPEN');
      expect(cb.metrics.numberOfBufferedCalls).toBe(0);
      await trial.fail();
      expect(cb.state).toBe('OPEN');
    });
  });

  describe('a recordResult that throws', () => {
    // As Resilience4j's CircuitBreaker.decorateSupplier (resilience4j-circuitbreaker/src/main/java/io/github/
    // resilience4j/circuitbreaker/CircuitBreaker.java): onResult runs inside the try, so a predicate that
    // throws is recorded through onError with its exception, which the caller then receives.
    let broken = true;
    const predicateBug = new TypeError("Cannot read properties of undefined (reading 'status')");
    const recordResult = (r: unknown) => {
      if (broken) throw predicateBug;
      return (r as { status: number }).status >= 500;
    };
    beforeEach(() => (broken = true));
    const halfOpen = { slidingWindowSize: 2, waitDurationInOpenState: 1000 };
    async function toHalfOpen(cb: CircuitBreakerPolicy, clock: VirtualClock): Promise<void> {
      broken = false;
      await openBreaker(cb, 2);
      await clock.advance(1001);
      broken = true;
    }

    it('never wedges HALF_OPEN: each trial is recorded, and the breaker closes once the predicate recovers', async () => {
      const { cb, clock } = setup({ ...halfOpen, permittedNumberOfCallsInHalfOpenState: 1, recordResult });
      await toHalfOpen(cb, clock);
      await expect(cb.execute(async () => ({ status: 200 }))).rejects.toBe(predicateBug);
      // The trial counted as a failure: the breaker is open again, not stuck half-open with its permit gone.
      expect(cb.state).toBe('OPEN');
      broken = false;
      await clock.advance(1001);
      await expect(cb.execute(async () => ({ status: 200 }))).resolves.toEqual({ status: 200 });
      expect(cb.state).toBe('CLOSED');
    });

    it('counts the call in CLOSED instead of losing it', async () => {
      const { cb } = setup({ slidingWindowSize: 10, recordResult });
      await expect(cb.execute(async () => ({ status: 200 }))).rejects.toBe(predicateBug);
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 1, numberOfFailedCalls: 1 });
    });

    it('records the trial the same way in the fused pipeline, releasing the half-open permit', async () => {
      const { cb, clock } = setup({ ...halfOpen, permittedNumberOfCallsInHalfOpenState: 1, recordResult });
      const pipeline = new StandardPipeline({ circuitBreaker: cb }, async () => ({ status: 200 }), clock);
      await toHalfOpen(cb, clock);
      await expect(pipeline.run([])).rejects.toBe(predicateBug);
      expect(cb.state).toBe('OPEN');
      broken = false;
      await clock.advance(1001);
      await expect(pipeline.run([])).resolves.toEqual({ status: 200 });
      expect(cb.state).toBe('CLOSED');
    });
  });

  describe('error classification', () => {
    it('treats ignored errors as neither success nor failure and not-recorded errors as successes', async () => {
      const { cb } = setup({ recordExceptions: [IoError], ignoreExceptions: ['com.example.BusinessError'] });
      const events: string[] = [];
      cb.onSuccess(() => events.push('success'));
      cb.onError(() => events.push('error'));
      cb.onIgnoredError((e) => events.push(`ignored:${(e.error as Error).message}`));
      await fail(cb, new BusinessError('no such user'));
      expect(cb.metrics.numberOfBufferedCalls).toBe(0);
      await fail(cb, new Error('not listed'));
      expect(cb.metrics).toMatchObject({
        numberOfBufferedCalls: 1,
        numberOfSuccessfulCalls: 1,
        numberOfFailedCalls: 0,
      });
      await fail(cb, new IoError('listed'));
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 2, numberOfFailedCalls: 1 });
      expect(events).toEqual(['ignored:no such user', 'success', 'error']);
    });

    it('lets ignoreExceptions win over recordExceptions', async () => {
      const { cb } = setup({ recordExceptions: [Error], ignoreExceptions: [BusinessError] });
      await fail(cb, new BusinessError('x'));
      expect(cb.metrics.numberOfBufferedCalls).toBe(0);
    });

    it('by default counts 4xx other than 408 and 429 as success, everything else as failure', async () => {
      const { cb } = setup();
      const cases: Array<[unknown, 'success' | 'failure']> = [
        [new StatusError(404), 'success'],
        [new FakeHttpException(400), 'success'],
        [Object.assign(new Error('axios'), { response: { status: 422 } }), 'success'],
        [new StatusError(408), 'failure'],
        [new StatusError(429), 'failure'],
        [new StatusError(500), 'failure'],
        [new FakeHttpException(503), 'failure'],
        [new StatusError(304), 'failure'],
        [new Error('ECONNRESET'), 'failure'],
        ['a string', 'failure'],
      ];
      for (const [error, expected] of cases) {
        const before = cb.metrics.numberOfFailedCalls;
        await fail(cb, error);
        expect([error, cb.metrics.numberOfFailedCalls - before]).toEqual([error, expected === 'failure' ? 1 : 0]);
      }
      expect(cb.metrics).toMatchObject({
        numberOfBufferedCalls: 10,
        numberOfSuccessfulCalls: 3,
        numberOfFailedCalls: 7,
      });
    });

    it('ignores BulkheadFullError by default, and counts it when recordExceptions names it', async () => {
      const byDefault = setup().cb;
      await fail(byDefault, new BulkheadFullError('inventory'));
      expect(byDefault.metrics.numberOfBufferedCalls).toBe(0);
      const broadList = setup({ recordExceptions: [Error] }).cb;
      await fail(broadList, new BulkheadFullError('inventory'));
      expect(broadList.metrics.numberOfBufferedCalls).toBe(0);
      const named = setup({ recordExceptions: ['BulkheadFullError'] }).cb;
      await fail(named, new BulkheadFullError('inventory'));
      expect(named.metrics.numberOfFailedCalls).toBe(1);
    });

    it.each([
      ['its class', BulkheadFullError],
      ['a dotted name ending in its class name', 'com.acme.resilience.BulkheadFullError'],
    ])('counts BulkheadFullError as a failure when recordExceptions names %s', async (_label, entry) => {
      const { cb } = setup({ recordExceptions: [IoError, entry] });
      await fail(cb, new BulkheadFullError('inventory'));
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 1, numberOfFailedCalls: 1 });
    });

    it('still ignores BulkheadFullError when recordExceptions names only other errors by name', async () => {
      const { cb } = setup({ recordExceptions: ['IoError', 'java.io.IOException'] });
      await fail(cb, new BulkheadFullError('inventory'));
      await fail(cb, new IoError('down'));
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 1, numberOfFailedCalls: 1 });
    });

    it('counts a timeout as a failure by default; with recordExceptions, only when listed (as Resilience4j)', async () => {
      const byDefault = setup().cb;
      await fail(byDefault, new TimeoutExceededError('inventory', 2000));
      expect(byDefault.metrics.numberOfFailedCalls).toBe(1);
      const unlisted = setup({ recordExceptions: [IoError] }).cb;
      await fail(unlisted, new TimeoutExceededError('inventory', 2000));
      expect(unlisted.metrics).toMatchObject({ numberOfFailedCalls: 0, numberOfSuccessfulCalls: 1 });
      const listed = setup({ recordExceptions: [IoError, 'TimeoutExceededError'] }).cb;
      await fail(listed, new TimeoutExceededError('inventory', 2000));
      expect(listed.metrics.numberOfFailedCalls).toBe(1);
    });

    it("with exceptionRules 'resilience4j', counts every error as a failure: a 4xx answer and BulkheadFullError too", async () => {
      const { cb } = setup({ exceptionRules: 'resilience4j' });
      await fail(cb, Object.assign(new Error('not found'), { status: 404 }));
      await fail(cb, new BulkheadFullError('inner', 'queue-full'));
      expect(cb.metrics).toMatchObject({ numberOfFailedCalls: 2, numberOfSuccessfulCalls: 0 });
      const native = setup().cb;
      await fail(native, Object.assign(new Error('not found'), { status: 404 }));
      await fail(native, new BulkheadFullError('inner', 'queue-full'));
      expect(native.metrics).toMatchObject({ numberOfFailedCalls: 0, numberOfSuccessfulCalls: 1 });
    });

    it('records a returned value as a failure when recordResult says so, and still returns it', async () => {
      const { cb } = setup({
        slidingWindowSize: 2,
        recordResult: (r) => (r as { status: number }).status >= 500,
      });
      const errors: unknown[] = [];
      cb.onError((e) => errors.push(e.error));
      const bad = { status: 503 };
      await expect(cb.execute(() => ({ status: 200 }))).resolves.toEqual({ status: 200 });
      await expect(cb.execute(() => bad)).resolves.toBe(bad);
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 2, numberOfFailedCalls: 1 });
      expect(errors).toEqual([bad]);
      expect(cb.state).toBe('OPEN');
    });
  });

  describe('manual states', () => {
    it('FORCED_OPEN refuses every call with no retry hint until another transition', async () => {
      const { cb, clock } = setup();
      cb.transitionToForcedOpenState();
      await clock.advance(3_600_000);
      const error = await refused(cb);
      expect(error.state).toBe('FORCED_OPEN');
      expect(error.retryAfterMs).toBeUndefined();
      expect(cb.metrics.numberOfNotPermittedCalls).toBe(1);
      cb.transitionToClosedState();
      await expect(succeed(cb)).resolves.toBe('ok');
    });

    it('FORCED_OPEN keeps no window: the calls before it leave the metrics', async () => {
      const { cb } = setup({ slidingWindowSize: 4, minimumNumberOfCalls: 2 });
      await succeed(cb);
      await fail(cb);
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 2, failureRate: 50 });
      cb.transitionToForcedOpenState();
      await refused(cb);
      expect(cb.metrics).toMatchObject({
        numberOfBufferedCalls: 0,
        numberOfFailedCalls: 0,
        failureRate: -1,
        numberOfNotPermittedCalls: 1,
      });
    });

    it('DISABLED permits every call and records nothing', async () => {
      const { cb } = setup({ slidingWindowSize: 2 });
      const outcomes: string[] = [];
      cb.onError(() => outcomes.push('error'));
      cb.transitionToDisabledState();
      for (let i = 0; i < 5; i++) await fail(cb);
      expect(cb.state).toBe('DISABLED');
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 0, failureRate: -1 });
      expect(outcomes).toEqual([]);
    });

    it('METRICS_ONLY records and reports once, but never opens', async () => {
      const { cb } = setup({ slidingWindowSize: 2 });
      const rates: number[] = [];
      cb.onFailureRateExceeded((e) => rates.push(e.failureRate));
      cb.transitionToMetricsOnlyState();
      for (let i = 0; i < 5; i++) await fail(cb);
      expect(cb.state).toBe('METRICS_ONLY');
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 2, failureRate: 100 });
      expect(rates).toEqual([100]);
    });

    it('transitionToOpenState and transitionToHalfOpenState act at once; same-state transitions are silent', async () => {
      const { cb } = setup({ permittedNumberOfCallsInHalfOpenState: 1, waitDurationInOpenState: 5000 });
      const seen = transitions(cb);
      cb.transitionToClosedState();
      cb.transitionToOpenState();
      cb.transitionToOpenState();
      expect((await refused(cb)).retryAfterMs).toBe(5000);
      cb.transitionToHalfOpenState();
      await succeed(cb);
      expect(cb.state).toBe('CLOSED');
      expect(seen).toEqual(['CLOSED->OPEN', 'OPEN->HALF_OPEN', 'HALF_OPEN->CLOSED']);
    });

    it('reset() returns to an empty CLOSED state and says so', async () => {
      const { cb, clock } = setup({ slidingWindowSize: 2, automaticTransitionFromOpenToHalfOpenEnabled: true });
      const seen = transitions(cb);
      let resets = 0;
      cb.onReset(() => resets++);
      await openBreaker(cb, 2);
      await refused(cb);
      cb.reset();
      expect(cb.state).toBe('CLOSED');
      expect(clock.pendingTimers).toBe(0);
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 0, numberOfNotPermittedCalls: 0 });
      cb.reset();
      expect(seen).toEqual(['CLOSED->OPEN', 'OPEN->CLOSED']);
      expect(resets).toBe(2);
    });

    it('a fresh CLOSED state after a manual transition starts with an empty window', async () => {
      const { cb } = setup({ slidingWindowSize: 4 });
      await fail(cb);
      cb.transitionToMetricsOnlyState();
      expect(cb.metrics.numberOfBufferedCalls).toBe(0);
      await fail(cb);
      cb.transitionToClosedState();
      expect(cb.metrics.numberOfBufferedCalls).toBe(0);
    });
  });

  describe('Resilience4j state-machine rules', () => {
    const STATES: CircuitBreakerState[] = ['CLOSED', 'OPEN', 'HALF_OPEN', 'DISABLED', 'FORCED_OPEN', 'METRICS_ONLY'];
    const moveTo = (cb: CircuitBreakerPolicy, state: CircuitBreakerState): void => {
      const byHand: Record<CircuitBreakerState, () => void> = {
        CLOSED: () => cb.transitionToClosedState(),
        OPEN: () => cb.transitionToOpenState(),
        HALF_OPEN: () => cb.transitionToHalfOpenState(),
        DISABLED: () => cb.transitionToDisabledState(),
        FORCED_OPEN: () => cb.transitionToForcedOpenState(),
        METRICS_ONLY: () => cb.transitionToMetricsOnlyState(),
      };
      byHand[state]();
    };
    /** A breaker put in `state` by a legal path. */
    const inState = (state: CircuitBreakerState): CircuitBreakerPolicy => {
      const { cb } = setup();
      if (state === 'HALF_OPEN') cb.transitionToOpenState();
      if (state !== 'CLOSED') moveTo(cb, state);
      return cb;
    };

    it.each(STATES.flatMap((from) => STATES.map((to) => [from, to] as const)))(
      'manual transition %s -> %s follows CircuitBreaker.StateTransition',
      (from, to) => {
        const cb = inState(from);
        const illegal =
          (from === 'CLOSED' && to === 'HALF_OPEN') ||
          (from === 'METRICS_ONLY' && (to === 'OPEN' || to === 'HALF_OPEN'));
        if (!illegal) {
          moveTo(cb, to);
          expect(cb.state).toBe(to);
          return;
        }
        let error: unknown;
        try {
          moveTo(cb, to);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(IllegalStateTransitionError);
        expect(error).toMatchObject({
          name: 'IllegalStateTransitionError',
          instance: 'backend',
          from,
          to,
          message: `CircuitBreaker 'backend' tried an illegal state transition from ${from} to ${to}`,
        });
        expect(cb.state).toBe(from);
      },
    );

    it("names IllegalStateTransitionError like a built-in error's name: inherited, writable, not enumerable", () => {
      const error = new IllegalStateTransitionError('backend', 'CLOSED', 'HALF_OPEN');
      const { value, ...attributes } = Object.getOwnPropertyDescriptor(IllegalStateTransitionError.prototype, 'name')!;
      const { value: _errorName, ...builtIn } = Object.getOwnPropertyDescriptor(Error.prototype, 'name')!;
      expect([value, attributes]).toEqual(['IllegalStateTransitionError', builtIn]);
      expect(Object.keys(error)).not.toContain('name');
      error.name = 'Relabelled';
      expect(error.name).toBe('Relabelled');
      expect(new IllegalStateTransitionError('backend', 'CLOSED', 'HALF_OPEN').name).toBe(
        'IllegalStateTransitionError',
      );
    });

    it('transitionToClosedState() on CLOSED starts a fresh window, silently', async () => {
      const { cb } = setup({ slidingWindowSize: 4 });
      const seen = transitions(cb);
      await fail(cb);
      await succeed(cb);
      expect(cb.metrics.numberOfBufferedCalls).toBe(2);
      cb.transitionToClosedState();
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 0, numberOfFailedCalls: 0 });
      expect(seen).toEqual([]);
    });

    it('transitionToOpenState() on OPEN restarts the wait, silently', async () => {
      const { cb, clock } = setup({ waitDurationInOpenState: 5000 });
      const seen = transitions(cb);
      cb.transitionToOpenState();
      await clock.advance(4000);
      cb.transitionToOpenState();
      expect((await refused(cb)).retryAfterMs).toBe(5000);
      await clock.advance(5000);
      await refused(cb);
      await clock.advance(1);
      await expect(succeed(cb)).resolves.toBe('ok');
      expect(seen).toEqual(['CLOSED->OPEN', 'OPEN->HALF_OPEN']);
    });

    it('admits a call only strictly after waitDurationInOpenState, not at exactly that time', async () => {
      const { cb, clock } = setup({ slidingWindowSize: 2, waitDurationInOpenState: 10_000 });
      await openBreaker(cb, 2);
      await clock.advance(10_000);
      expect((await refused(cb)).retryAfterMs).toBe(0);
      expect(cb.state).toBe('OPEN');
      await clock.advance(1);
      await expect(succeed(cb)).resolves.toBe('ok');
      expect(cb.state).toBe('HALF_OPEN');
    });
  });

  describe('open-state wait interval', () => {
    /** Opens the breaker from HALF_OPEN with one failed trial and returns the wait it announces. */
    async function reopenWait(cb: CircuitBreakerPolicy, clock: VirtualClock, wait: number): Promise<number> {
      await clock.advance(wait + 1);
      await fail(cb);
      expect(cb.state).toBe('OPEN');
      return (await refused(cb)).retryAfterMs!;
    }

    it('grows by exponentialBackoffMultiplier on each consecutive OPEN, capped, and starts over once closed', async () => {
      const { cb, clock } = setup({
        slidingWindowSize: 2,
        permittedNumberOfCallsInHalfOpenState: 1,
        waitDurationInOpenState: 1000,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 1.5,
        exponentialMaxWaitDurationInOpenState: 4000,
      });
      await openBreaker(cb, 2);
      const waits = [(await refused(cb)).retryAfterMs!];
      for (let i = 0; i < 5; i++) waits.push(await reopenWait(cb, clock, waits[waits.length - 1]));
      expect(waits).toEqual([1000, 1500, 2250, 3375, 4000, 4000]);
      expect(cb.openWaitMs).toBe(4000);
      await clock.advance(4001);
      await succeed(cb);
      expect(cb.state).toBe('CLOSED');
      await openBreaker(cb, 2);
      expect((await refused(cb)).retryAfterMs).toBe(1000);
    });

    it('counts FORCED_OPEN as an open attempt, as Resilience4j (ForcedOpenState(attempts + 1))', async () => {
      const { cb } = setup({
        waitDurationInOpenState: 1000,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 2,
      });
      cb.transitionToForcedOpenState();
      cb.transitionToOpenState();
      expect((await refused(cb)).retryAfterMs).toBe(2000);
    });

    it('counts a manual transitionToOpenState() on OPEN as the next attempt, as Resilience4j', async () => {
      const { cb } = setup({
        waitDurationInOpenState: 1000,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 2,
      });
      cb.transitionToOpenState();
      cb.transitionToOpenState();
      cb.transitionToOpenState();
      expect((await refused(cb)).retryAfterMs).toBe(4000);
    });

    it('arms the automatic HALF_OPEN timer for the grown wait', async () => {
      const { cb, clock } = setup({
        permittedNumberOfCallsInHalfOpenState: 1,
        waitDurationInOpenState: 1000,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 2,
        automaticTransitionFromOpenToHalfOpenEnabled: true,
      });
      cb.transitionToOpenState();
      await clock.advance(1000);
      expect(cb.state).toBe('HALF_OPEN');
      await fail(cb);
      expect(cb.state).toBe('OPEN');
      await clock.advance(1999);
      expect(cb.state).toBe('OPEN');
      await clock.advance(1);
      expect(cb.state).toBe('HALF_OPEN');
    });

    it('randomizes each wait over whole ms in wait x [1 - factor, 1 + factor] with enableRandomizedWait', async () => {
      const draws = [0, 0.9999, 0.5];
      const clock = new VirtualClock();
      const cb = new CircuitBreakerPolicy(
        'backend',
        config({ waitDurationInOpenState: 1000, enableRandomizedWait: true, randomizedWaitFactor: 1 }),
        clock,
        () => draws.shift()!,
      );
      const waits: number[] = [];
      for (let i = 0; i < 3; i++) {
        cb.transitionToOpenState();
        waits.push((await refused(cb)).retryAfterMs!);
      }
      expect(waits).toEqual([1, 2000, 1000]);
    });
  });

  describe('initialState', () => {
    it('starts OPEN as the first open state: waits, turns HALF_OPEN on its timer, and the next OPEN is the second attempt', async () => {
      const { cb, clock } = setup({
        initialState: 'OPEN',
        waitDurationInOpenState: 1000,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 2,
        automaticTransitionFromOpenToHalfOpenEnabled: true,
        permittedNumberOfCallsInHalfOpenState: 1,
      });
      const seen = transitions(cb);
      expect(cb.state).toBe('OPEN');
      expect((await refused(cb)).retryAfterMs).toBe(1000);
      await clock.advance(1000);
      expect(cb.state).toBe('HALF_OPEN');
      await fail(cb);
      expect(cb.openWaitMs).toBe(2000);
      expect(seen).toEqual(['OPEN->HALF_OPEN', 'HALF_OPEN->OPEN']);
    });

    it('starts HALF_OPEN as after a first OPEN: failed trials open it for the second wait', async () => {
      const { cb } = setup({
        initialState: 'HALF_OPEN',
        permittedNumberOfCallsInHalfOpenState: 1,
        waitDurationInOpenState: 1000,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 2,
      });
      await fail(cb);
      expect(cb.state).toBe('OPEN');
      expect((await refused(cb)).retryAfterMs).toBe(2000);
    });

    it.each(['HALF_OPEN', 'DISABLED', 'FORCED_OPEN', 'METRICS_ONLY'] as const)(
      'starts in %s; reset() closes it',
      (initialState) => {
        const { cb } = setup({ initialState });
        expect(cb.state).toBe(initialState);
        cb.reset();
        expect(cb.state).toBe('CLOSED');
      },
    );
  });

  describe('transitionToStateAfterWaitDuration', () => {
    it('moves HALF_OPEN to CLOSED when maxWaitDurationInHalfOpenState runs out, if so configured', async () => {
      const { cb, clock } = setup({
        maxWaitDurationInHalfOpenState: 1000,
        transitionToStateAfterWaitDuration: 'CLOSED',
      });
      const seen = transitions(cb);
      cb.transitionToOpenState();
      cb.transitionToHalfOpenState();
      await clock.advance(999);
      expect(cb.state).toBe('HALF_OPEN');
      await clock.advance(1);
      expect(cb.state).toBe('CLOSED');
      expect(seen).toEqual(['CLOSED->OPEN', 'OPEN->HALF_OPEN', 'HALF_OPEN->CLOSED']);
    });
  });

  describe('config validation of the open-state wait', () => {
    const place = "circuitBreaker instance 'psp'";
    const resolve = (settings: Record<string, unknown>) => () =>
      resolveSection(CIRCUIT_BREAKER_SCHEMA, { instances: { psp: settings } }, () => undefined);

    it.each<[string, Record<string, unknown>, string]>([
      [
        'exponential backoff and randomized wait together',
        { enableExponentialBackoff: true, enableRandomizedWait: true },
        INVALID_VALUE(place, 'enableRandomizedWait', 'false when enableExponentialBackoff is true', true),
      ],
      [
        'a zero cap',
        { 'exponential-max-wait-duration-in-open-state': 0 },
        INVALID_VALUE(place, 'exponential-max-wait-duration-in-open-state', 'a positive duration', 0),
      ],
      [
        'a factor above 1',
        { randomizedWaitFactor: 1.5 },
        INVALID_VALUE(place, 'randomizedWaitFactor', 'a number >= 0 and <= 1', 1.5),
      ],
      [
        'a multiplier below 1 (deliberate: Resilience4j accepts any multiplier > 0, a wait that shrinks)',
        { exponentialBackoffMultiplier: 0.5 },
        INVALID_VALUE(place, 'exponentialBackoffMultiplier', 'a number >= 1', 0.5),
      ],
      [
        'a slow-call threshold of 0 (every call would be slow)',
        { slowCallDurationThreshold: 0 },
        INVALID_VALUE(place, 'slowCallDurationThreshold', 'a positive duration', 0),
      ],
      [
        'HALF_OPEN after the half-open wait',
        { transitionToStateAfterWaitDuration: 'HALF_OPEN' },
        INVALID_VALUE(place, 'transitionToStateAfterWaitDuration', "one of 'OPEN', 'CLOSED'", 'HALF_OPEN'),
      ],
    ])('refuses %s with a message naming the key', (_label, settings, message) => {
      expect(resolve(settings)).toThrow(message);
    });

    it('accepts every initial state, in either case', () => {
      const states = ['CLOSED', 'OPEN', 'HALF_OPEN', 'DISABLED', 'FORCED_OPEN', 'METRICS_ONLY'];
      const read = (initialState: string) => resolve({ initialState })().instances.get('psp')?.initialState;
      expect(states.map(read)).toEqual(states);
      expect(states.map((state) => read(state.toLowerCase()))).toEqual(states);
    });

    it('bounds a TIME_BASED window at 3600 seconds, and only a TIME_BASED one', () => {
      expect(resolve({ slidingWindowType: 'TIME_BASED', slidingWindowSize: 3601 })).toThrow(
        INVALID_VALUE(place, 'slidingWindowSize', 'at most 3600 seconds for a TIME_BASED window', 3601),
      );
      expect(
        resolve({ slidingWindowType: 'TIME_BASED', slidingWindowSize: 3600 })().instances.get('psp'),
      ).toMatchObject({ slidingWindowType: 'TIME_BASED', slidingWindowSize: 3600 });
      expect(resolve({ slidingWindowSize: 3601 })().instances.get('psp')).toMatchObject({ slidingWindowSize: 3601 });
    });

    it('accepts the Resilience4j keys in kebab-case, a factor of 1 and a lower-case target state', () => {
      const { instances } = resolve({
        'enable-exponential-backoff': 'true',
        'exponential-backoff-multiplier': 2,
        'exponential-max-wait-duration-in-open-state': '5m',
        'randomized-wait-factor': 1,
        'transition-to-state-after-wait-duration': 'closed',
      })();
      expect(instances.get('psp')).toMatchObject({
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 2,
        exponentialMaxWaitDurationInOpenState: 300_000,
        randomizedWaitFactor: 1,
        transitionToStateAfterWaitDuration: 'CLOSED',
      });
    });
  });

  describe('events and the permission API', () => {
    it('publishes durations measured on the clock, and stops after unsubscribe', async () => {
      const { cb, clock } = setup();
      const durations: number[] = [];
      const errors: Array<[number, unknown]> = [];
      const unsubscribe = cb.onSuccess((e) => durations.push(e.durationMs));
      cb.onError((e) => errors.push([e.durationMs, e.error]));
      const boom = new IoError('boom');
      await timed(cb, clock, 250);
      await timed(cb, clock, 40, boom);
      unsubscribe();
      await timed(cb, clock, 10);
      expect(durations).toEqual([250]);
      expect(errors).toEqual([[40, boom]]);
    });

    it('exposes acquire, record and release for callers outside call()', () => {
      const { cb } = setup({ slidingWindowSize: 2, permittedNumberOfCallsInHalfOpenState: 2 });
      expect(cb.tryAcquirePermission()).toBe(true);
      cb.onResult(12, new IoError('x'));
      cb.onResult(12, undefined, 'fine');
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 2, numberOfFailedCalls: 1 });
      expect(cb.state).toBe('OPEN');
      expect(cb.tryAcquirePermission()).toBe(false);
      expect(() => cb.acquirePermission()).toThrow(CallNotPermittedError);
      cb.transitionToHalfOpenState();
      expect([cb.tryAcquirePermission(), cb.tryAcquirePermission(), cb.tryAcquirePermission()]).toEqual([
        true,
        true,
        false,
      ]);
      cb.releasePermission();
      expect(cb.tryAcquirePermission()).toBe(true);
      expect(cb.metrics.numberOfNotPermittedCalls).toBe(1);
    });

    it('never admits more trials than permitted, however many permissions are given back', () => {
      const { cb } = setup({ permittedNumberOfCallsInHalfOpenState: 2 });
      cb.transitionToOpenState();
      cb.transitionToHalfOpenState();
      cb.releasePermission();
      expect([cb.tryAcquirePermission(), cb.tryAcquirePermission(), cb.tryAcquirePermission()]).toEqual([
        true,
        true,
        false,
      ]);
      cb.releasePermission();
      cb.releasePermission();
      cb.releasePermission();
      expect([cb.tryAcquirePermission(), cb.tryAcquirePermission(), cb.tryAcquirePermission()]).toEqual([
        true,
        true,
        false,
      ]);
    });

    it('records nothing reported by hand while FORCED_OPEN or DISABLED', () => {
      const { cb } = setup({ slidingWindowSize: 2, minimumNumberOfCalls: 2 });
      const recorded: string[] = [];
      cb.onError(() => recorded.push('error'));
      cb.transitionToForcedOpenState();
      expect(() => cb.onResult(5, new IoError('late'))).not.toThrow();
      expect(recorded).toEqual(['error']);
      cb.transitionToDisabledState();
      cb.onResult(5, new IoError('late'));
      expect(recorded).toEqual(['error']);
      expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 0, failureRate: -1 });
    });

    it('passes values and the original error through, and exposes its config', async () => {
      const settings = config({ slidingWindowSize: 7, minimumNumberOfCalls: 7 });
      const cb = new CircuitBreakerPolicy('payments', settings, new VirtualClock());
      const error = new IoError('original');
      await expect(cb.execute(() => 42)).resolves.toBe(42);
      await expect(cb.execute(() => Promise.reject(error))).rejects.toBe(error);
      expect(cb.config).toBe(settings);
      expect(cb.name).toBe('payments');
    });
  });
});
