import { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { CIRCUIT_BREAKER_SCHEMA } from '../policies/circuit-breaker/circuit-breaker.config';
import { systemClock, VirtualClock } from './clock';
import { contextStorage, ResilienceContext } from './context';
import { BulkheadFullError, DeadlineExceededError } from './errors';
import { MemoryIdempotencyStore } from '../features/idempotency/memory-idempotency-store';
import { IdempotencyScope } from '../features/idempotency/idempotency.context';
import { IdempotentRun } from '../features/idempotency/idempotent-run';
import { IdempotentMethodSettings, IdempotentTarget } from '../features/idempotency/idempotent-target';

const DAY = 24 * 60 * 60 * 1000;
/** Node's (and the fake timers') longest delay; a longer one fires after 1 ms. */
const NODE_TIMER_MAX = 2 ** 31 - 1;

/**
 * Jest's fake timers overflow past 2^31-1 ms as Node's do (a longer delay
 * fires after 1 ms), so they show whether the system clock chains a long
 * timer; each test then runs a policy on the system clock under them.
 */
describe('systemClock: durations longer than a Node timer holds', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('chains a 30-day timer: not fired after 1 ms nor a moment before 30 days, fired once at 30 days', () => {
    let fired = 0;
    systemClock.setTimeout(() => fired++, 30 * DAY);
    jest.advanceTimersByTime(1000);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(30 * DAY - 1001);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(1);
    expect(fired).toBe(1);
    jest.advanceTimersByTime(60 * DAY);
    expect(fired).toBe(1);
  });

  it('fires a timer of exactly the longest Node delay on time, and one of Infinity never', () => {
    let fired = 0;
    systemClock.setTimeout(() => fired++, NODE_TIMER_MAX);
    systemClock.setTimeout(() => fired++, Number.POSITIVE_INFINITY);
    jest.advanceTimersByTime(NODE_TIMER_MAX - 1);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(1);
    expect(fired).toBe(1);
    jest.advanceTimersByTime(1000 * DAY);
    expect(fired).toBe(1);
  });

  it('cancels a chained timer, and unrefs it like a Node timer', () => {
    let fired = 0;
    const handle = systemClock.setTimeout(() => fired++, 40 * DAY) as { unref(): unknown; hasRef(): boolean };
    expect(handle.hasRef()).toBe(true);
    expect(handle.unref()).toBe(handle);
    expect(handle.hasRef()).toBe(false);
    jest.advanceTimersByTime(30 * DAY);
    systemClock.clearTimeout(handle);
    jest.advanceTimersByTime(30 * DAY);
    expect(fired).toBe(0);
  });

  it('a breaker with a 30-day waitDurationInOpenState stays OPEN for 30 days, then turns HALF_OPEN', () => {
    const breaker = new CircuitBreakerPolicy(
      'psp',
      {
        ...CIRCUIT_BREAKER_SCHEMA.defaults,
        waitDurationInOpenState: 30 * DAY,
        automaticTransitionFromOpenToHalfOpenEnabled: true,
      },
      systemClock,
    );
    breaker.transitionToOpenState();
    jest.advanceTimersByTime(20);
    expect(breaker.state).toBe('OPEN');
    jest.advanceTimersByTime(30 * DAY - 21);
    expect(breaker.state).toBe('OPEN');
    jest.advanceTimersByTime(1);
    expect(breaker.state).toBe('HALF_OPEN');
  });

  it('a bulkhead with a 30-day maxWaitDuration keeps its waiter for 30 days', async () => {
    const bulkhead = new BulkheadPolicy(
      'pool',
      { maxConcurrentCalls: 1, maxWaitDuration: 30 * DAY, queueCapacity: 1 },
      systemClock,
    );
    void bulkhead.execute(() => new Promise(() => undefined));
    let outcome: unknown = 'waiting';
    bulkhead.execute(() => 'ran').catch((e: unknown) => (outcome = e));
    await jest.advanceTimersByTimeAsync(8);
    expect(outcome).toBe('waiting');
    await jest.advanceTimersByTimeAsync(30 * DAY - 9);
    expect(outcome).toBe('waiting');
    await jest.advanceTimersByTimeAsync(1);
    expect(outcome).toBeInstanceOf(BulkheadFullError);
  });

  it("a 30-day request deadline does not abort the request's signal early", () => {
    const request = new ResilienceContext(systemClock, systemClock.now() + 30 * DAY);
    const signal = request.signal;
    jest.advanceTimersByTime(1000);
    expect(signal.aborted).toBe(false);
    jest.advanceTimersByTime(30 * DAY - 1000);
    expect(signal.reason).toBeInstanceOf(DeadlineExceededError);
    request.dispose();
  });

  it('a 90-day lease is renewed once every 30 days, not every millisecond', async () => {
    const store = new MemoryIdempotencyStore({ clock: systemClock });
    const renew = jest.spyOn(store, 'renew');
    const claim = await store.claim('k', 'f', { leaseMs: 90 * DAY, ttlMs: 180 * DAY });
    if (claim.outcome !== 'claimed') throw new Error(`expected a claim, got ${claim.outcome}`);
    const settings = {
      store,
      clock: systemClock,
      leaseMs: 90 * DAY,
      ttlMs: 180 * DAY,
      storeTimeoutMs: 2000,
    } as unknown as IdempotentMethodSettings;
    const target: IdempotentTarget = { name: 'Payments.pay', settings, report: () => undefined, warn: () => undefined };
    const run = new IdempotentRun(
      target,
      'k',
      claim.token,
      new IdempotencyScope({}, 'Payments.pay', 'k', 0, undefined),
    );
    await jest.advanceTimersByTimeAsync(200);
    expect(renew).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(30 * DAY);
    expect(renew).toHaveBeenCalledTimes(1);
    await run.finish('release');
  });
});

describe('VirtualClock: long durations in policies are exact', () => {
  it("a request deadline of 30 days passes the bulkhead's 30-day wait on the dot", async () => {
    const clock = new VirtualClock();
    const bulkhead = new BulkheadPolicy(
      'pool',
      { maxConcurrentCalls: 1, maxWaitDuration: 30 * DAY, queueCapacity: 1 },
      clock,
    );
    void bulkhead.execute(() => new Promise(() => undefined));
    const request = new ResilienceContext(clock, clock.now() + 60 * DAY);
    let settledAt = Number.NaN;
    contextStorage.run(request, () => bulkhead.execute(() => 'ran')).catch(() => (settledAt = clock.now()));
    await clock.advance(30 * DAY - 1);
    expect(settledAt).toBeNaN();
    await clock.advance(1);
    expect(settledAt).toBe(30 * DAY);
    request.dispose();
  });
});

describe('VirtualClock.runUntilSettled', () => {
  const wait = (clock: VirtualClock, ms: number, value: string): Promise<string> =>
    new Promise((resolve) => clock.setTimeout(() => resolve(value), ms));

  it('fires timers in order until the promise settles, and no further', async () => {
    const clock = new VirtualClock();
    const later = wait(clock, 5_000, 'later');
    const chained = wait(clock, 100, 'a').then(() => wait(clock, 250, 'b'));
    await expect(clock.runUntilSettled(chained)).resolves.toBe('b');
    expect(clock.now()).toBe(350);
    expect(clock.pendingTimers).toBe(1);
    await expect(clock.runUntilSettled(later)).resolves.toBe('later');
  });

  it('rejects with the promise error', async () => {
    const clock = new VirtualClock();
    const failing = wait(clock, 10, 'x').then(() => Promise.reject(new Error('down')));
    await expect(clock.runUntilSettled(failing)).rejects.toThrow('down');
  });

  it('fails after maxTime of virtual time, and when no timer is left', async () => {
    const clock = new VirtualClock();
    await expect(clock.runUntilSettled(wait(clock, 2_000, 'x'), { maxTime: 1_000 })).rejects.toThrow(
      'VirtualClock.runUntilSettled: the promise did not settle within maxTime 1000 ms of virtual time (next timer at 2000 ms)',
    );
    expect(clock.now()).toBe(1_000);
    const idle = new VirtualClock(40);
    await expect(idle.runUntilSettled(new Promise(() => undefined))).rejects.toThrow(
      'the promise is still pending at 40 ms and no timer is left to fire',
    );
    await expect(clock.runUntilSettled(Promise.resolve(1), { maxTime: -1 })).rejects.toThrow(RangeError);
  });
});

describe('VirtualClock: bad input', () => {
  const firings = (clock: VirtualClock, delays: readonly number[]): string[] => {
    const fired: string[] = [];
    for (const ms of delays) clock.setTimeout(() => fired.push(`${ms}@${clock.now()}`), ms);
    return fired;
  };

  it('fires a timer of NaN, negative or -Infinity delay at the current instant, and the others in due order', async () => {
    const clock = new VirtualClock(100);
    const fired = firings(clock, [5, 10, Number.NaN, 1, 15, -3, 0, Number.NEGATIVE_INFINITY, 7]);
    await clock.advance(20);
    expect(fired).toEqual([
      'NaN@100',
      '-3@100',
      '0@100',
      '-Infinity@100',
      '1@101',
      '5@105',
      '7@107',
      '10@110',
      '15@115',
    ]);
  });

  it('never fires a timer of Infinity delay (as on systemClock), and runNext passes it by', async () => {
    const clock = new VirtualClock();
    const fired = firings(clock, [Number.POSITIVE_INFINITY, 3]);
    await expect(clock.runNext()).resolves.toBe(true);
    await expect(clock.runNext()).resolves.toBe(false);
    expect(clock.now()).toBe(3);
    await clock.advance(1_000 * DAY);
    expect(fired).toEqual(['3@3']);
    expect(clock.pendingTimers).toBe(1);
  });

  it('refuses to advance by Infinity, a negative amount or NaN, naming the argument', async () => {
    const clock = new VirtualClock(10);
    for (const ms of [Number.POSITIVE_INFINITY, -1, Number.NaN])
      await expect(clock.advance(ms)).rejects.toThrow(
        new RangeError(`VirtualClock.advance: ms must be a finite non-negative number of milliseconds, got ${ms}`),
      );
    expect(clock.now()).toBe(10);
  });

  it('refuses a start time or a maxTime that is not finite, naming the argument', async () => {
    expect(() => new VirtualClock(Number.NaN)).toThrow(
      new RangeError('VirtualClock: start must be a finite number of milliseconds, got NaN'),
    );
    expect(() => new VirtualClock(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    await expect(
      new VirtualClock().runUntilSettled(Promise.resolve(1), { maxTime: Number.POSITIVE_INFINITY }),
    ).rejects.toThrow(
      new RangeError(
        'VirtualClock.runUntilSettled: maxTime must be a finite non-negative number of milliseconds, got Infinity',
      ),
    );
  });

  it('fails runUntilSettled, and advance, when a zero-delay timer keeps rescheduling itself at the same instant', async () => {
    const clock = new VirtualClock(50);
    let rounds = 0;
    const spin = (): void => {
      rounds++;
      clock.setTimeout(spin, 0);
    };
    clock.setTimeout(spin, 0);
    await expect(clock.runUntilSettled(new Promise(() => undefined), { maxTime: 1_000 })).rejects.toThrow(
      'VirtualClock.runUntilSettled: cannot make progress: 10000 timers scheduled at 50 ms fired at 50 ms (a timer that schedules another with delay 0 each time it fires keeps time from moving)',
    );
    expect(clock.now()).toBe(50);
    expect(rounds).toBe(1 + 10_000);
    await expect(clock.advance(5)).rejects.toThrow('VirtualClock.advance: cannot make progress: 10000 timers');
    expect(clock.now()).toBe(50);
  });
});
