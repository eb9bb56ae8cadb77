import { callerAbortError } from '../../kernel/cancellation';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { RateLimiterConfig } from './rate-limiter.config';
import { RateLimiterPolicy } from './rate-limiter.policy';
import { RateLimiterStore, RateLimiterStoreRelease, RateLimiterStoreRequest } from './rate-limiter-store';
import { track } from '../../../test/support/outcome';

const ONE_PER_SECOND: RateLimiterConfig = {
  limitForPeriod: 1,
  limitRefreshPeriod: 1000,
  timeoutDuration: 5000,
  shared: false,
  failOpen: false,
  storeTimeout: 500,
  registerHealthIndicator: false,
  allowHealthIndicatorToFail: false,
};

/** A caller's scope, as the request scope makes it. */
function callerOf(clock: VirtualClock): ResilienceContext {
  return new ResilienceContext(clock, Number.POSITIVE_INFINITY);
}

describe('RateLimiterPolicy and the caller’s cancellation', () => {
  let clock: VirtualClock;
  let calls: number;
  const method = (): string => {
    calls++;
    return 'ok';
  };

  beforeEach(() => {
    clock = new VirtualClock();
    calls = 0;
  });

  it('takes no permit for a caller that has already cancelled, and rejects with its AbortError', async () => {
    const limiter = new RateLimiterPolicy('partner', ONE_PER_SECOND, clock);
    const caller = callerOf(clock);
    const reason = new Error('client went away');
    caller.abort(reason);
    const outcome = track(
      clock,
      contextStorage.run(caller, () => limiter.execute(method)),
    );
    await VirtualClock.settle();
    expect(outcome).toEqual({ status: 'rejected', error: callerAbortError(reason), at: 0 });
    expect((outcome.error as Error).cause).toBe(reason);
    expect(calls).toBe(0);
    expect(limiter.metrics).toEqual({ availablePermissions: 1, numberOfWaitingThreads: 0 });
  });

  it('ends the wait for a reserved permit at once when the caller cancels, and gives the permit back', async () => {
    const limiter = new RateLimiterPolicy('partner', ONE_PER_SECOND, clock);
    await limiter.execute(method);
    await clock.advance(100);
    const before = limiter.metrics;
    expect(before).toEqual({ availablePermissions: 0, numberOfWaitingThreads: 0 });
    const caller = callerOf(clock);
    const outcome = track(
      clock,
      contextStorage.run(caller, () => limiter.execute(method)),
    );
    await VirtualClock.settle();
    expect(limiter.metrics).toEqual({ availablePermissions: -1, numberOfWaitingThreads: 1 });
    await clock.advance(300);
    const reason = new Error('client went away');
    caller.abort(reason);
    await VirtualClock.settle();
    expect(outcome.status).toBe('rejected');
    expect(outcome.at).toBe(400);
    expect(outcome.error).toMatchObject({ name: 'AbortError', cause: reason });
    expect(limiter.metrics).toEqual(before);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(600);
    expect(calls).toBe(1);
    // The permit of the next period was given back: the next caller gets it at once.
    expect(limiter.metrics).toEqual({ availablePermissions: 1, numberOfWaitingThreads: 0 });
  });

  it('through execute(fn, { signal }): the wait ends at the abort and the next waiter keeps its place', async () => {
    const limiter = new RateLimiterPolicy('partner', ONE_PER_SECOND, clock);
    await limiter.execute(method);
    const controller = new AbortController();
    const cancelled = track(clock, limiter.execute(method, { signal: controller.signal }));
    const next = track(clock, limiter.execute(method));
    await VirtualClock.settle();
    expect(limiter.metrics).toEqual({ availablePermissions: -2, numberOfWaitingThreads: 2 });
    await clock.advance(200);
    controller.abort(new Error('gone'));
    await VirtualClock.settle();
    expect(cancelled.status).toBe('rejected');
    expect(cancelled.at).toBe(200);
    expect(cancelled.error).toMatchObject({ name: 'AbortError' });
    expect(limiter.metrics).toEqual({ availablePermissions: -1, numberOfWaitingThreads: 1 });
    await clock.advance(2000);
    expect(next).toEqual({ status: 'fulfilled', value: 'ok', at: 2000 });
    expect(calls).toBe(2);
  });

  it('waitForPermission: reserves nothing for a cancelled caller, and gives back a reservation it cancels', async () => {
    const limiter = new RateLimiterPolicy('partner', ONE_PER_SECOND, clock);
    expect(limiter.tryAcquire()).toBe(true);
    const gone = callerOf(clock);
    gone.abort(new Error('gone'));
    const refused = track(
      clock,
      contextStorage.run(gone, () => limiter.waitForPermission()),
    );
    const leaving = callerOf(clock);
    const waiting = track(
      clock,
      contextStorage.run(leaving, () => limiter.waitForPermission()),
    );
    await VirtualClock.settle();
    expect(refused.status).toBe('rejected');
    expect(refused.error).toMatchObject({ name: 'AbortError' });
    expect(limiter.metrics).toEqual({ availablePermissions: -1, numberOfWaitingThreads: 1 });
    await clock.advance(500);
    leaving.abort(new Error('left'));
    await VirtualClock.settle();
    expect(waiting).toMatchObject({ status: 'rejected', at: 500, error: { name: 'AbortError' } });
    expect(limiter.metrics).toEqual({ availablePermissions: 0, numberOfWaitingThreads: 0 });
  });

  it('shared: a caller that cancels while waiting for a reserved permit gives it back to the store', async () => {
    const acquired: RateLimiterStoreRequest[] = [];
    const released: RateLimiterStoreRelease[] = [];
    const store: RateLimiterStore = {
      acquire: (request) => {
        acquired.push(request);
        return Promise.resolve({
          reserved: true,
          waitMs: 700,
          availablePermissions: -1,
          nextPeriodInMs: 700,
          drained: 0,
        });
      },
      release: (request) => {
        released.push(request);
        return Promise.resolve();
      },
    };
    const limiter = new RateLimiterPolicy('partner', { ...ONE_PER_SECOND, shared: true }, clock, store);
    const controller = new AbortController();
    const outcome = track(clock, limiter.execute(method, { signal: controller.signal }));
    await VirtualClock.settle();
    expect(acquired).toHaveLength(1);
    expect(limiter.metrics.numberOfWaitingThreads).toBe(1);
    await clock.advance(100);
    controller.abort(new Error('gone'));
    await VirtualClock.settle();
    expect(outcome).toMatchObject({ status: 'rejected', at: 100, error: { name: 'AbortError' } });
    expect(released).toEqual([{ name: 'partner', permits: 1, limitForPeriod: 1, limitRefreshPeriodMs: 1000 }]);
    expect(limiter.metrics.numberOfWaitingThreads).toBe(0);
    await clock.advance(1000);
    expect(calls).toBe(0);
  });
});
