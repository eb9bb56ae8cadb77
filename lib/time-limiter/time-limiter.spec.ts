import { VirtualClock } from '../clock';
import { INVALID_VALUE } from '../config/config.messages';
import { contextStorage, currentSignal, remainingTime, ResilienceContext } from '../context';
import { DeadlineExceededError, TimeoutExceededError } from '../errors';
import { TimeLimiter, TimeLimiterEvent } from './time-limiter';
import { Timeout } from './timeout.decorator';

describe('TimeLimiter', () => {
  let clock: VirtualClock;
  beforeEach(() => (clock = new VirtualClock()));

  const limiter = (timeoutDuration = 1000, cancelRunningFuture = true) =>
    new TimeLimiter('payments', { timeoutDuration, cancelRunningFuture }, clock);

  /** A call that resolves after `ms` on the virtual clock, noting the signal it saw. */
  const slow = (ms: number, seen: { signal?: AbortSignal } = {}) => () =>
    new Promise<string>((resolve) => {
      seen.signal = currentSignal();
      clock.setTimeout(() => resolve('done'), ms);
    });

  it('returns the result of a call that finishes in time, and leaves no timer behind once drained', async () => {
    const tl = limiter();
    await expect(tl.execute(async () => 42)).resolves.toBe(42);
    await clock.advance(1000);
    expect(clock.pendingTimers).toBe(0);
  });

  it('with timeoutDuration 0, lets through only an attempt already settled when the zero-delay timer fires, as Resilience4j', async () => {
    const tl = limiter(0);
    const settledAtOnce = tl.execute(async () => 'cached');
    const needsTime = tl.execute(slow(1));
    const needsTimeOutcome = needsTime.catch((e: unknown) => e);
    await clock.advance(0);
    await expect(settledAtOnce).resolves.toBe('cached');
    const error = await needsTimeOutcome;
    expect(error).toBeInstanceOf(TimeoutExceededError);
    expect(error).toMatchObject({ timeoutMs: 0 });
  });

  it('rejects with TimeoutExceededError at exactly the limit and aborts the attempt signal', async () => {
    const tl = limiter(1000);
    const seen: { signal?: AbortSignal } = {};
    const result = tl.execute(slow(5000, seen));
    const outcome = result.catch((e) => e);
    await clock.advance(999);
    expect(seen.signal?.aborted).toBe(false);
    await clock.advance(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(TimeoutExceededError);
    expect(error).toMatchObject({ name: 'payments', timeoutMs: 1000 });
    expect(seen.signal?.aborted).toBe(true);
    expect(seen.signal?.reason).toBe(error);
  });

  it('does not abort the signal when cancelRunningFuture is false', async () => {
    const tl = limiter(100, false);
    const seen: { signal?: AbortSignal } = {};
    const outcome = tl.execute(slow(500, seen)).catch((e) => e);
    await clock.advance(100);
    expect(await outcome).toBeInstanceOf(TimeoutExceededError);
    expect(seen.signal?.aborted).toBe(false);
  });

  it('times out many concurrent calls each at its own limit through the shared timer', async () => {
    const tl = limiter(100);
    const outcomes: Array<Promise<unknown>> = [];
    for (let i = 0; i < 5; i++) {
      outcomes.push(tl.execute(slow(1000)).catch((e) => [clock.now(), e]));
      await clock.advance(10);
    }
    await clock.advance(200);
    const results = (await Promise.all(outcomes)) as Array<[number, unknown]>;
    expect(results.map(([t]) => t)).toEqual([100, 110, 120, 130, 140]);
    expect(results.every(([, e]) => e instanceof TimeoutExceededError)).toBe(true);
  });

  it('a call finishing in time is not timed out later by the shared timer', async () => {
    const tl = limiter(100);
    const fast = tl.execute(slow(50));
    const late = tl.execute(slow(500)).catch((e) => e);
    await clock.advance(100);
    await expect(fast).resolves.toBe('done');
    expect(await late).toBeInstanceOf(TimeoutExceededError);
  });

  it('uses min(timeoutDuration, remaining deadline) and reports a deadline cut as DeadlineExceededError', async () => {
    const tl = limiter(1000);
    const request = new ResilienceContext(clock, clock.now() + 300);
    let insideRemaining = -1;
    const outcome = contextStorage
      .run(request, () =>
        tl.execute(() => {
          insideRemaining = remainingTime();
          return slow(5000)();
        }),
      )
      .catch((e) => [clock.now(), e]);
    await clock.advance(1000);
    const [at, error] = (await outcome) as [number, unknown];
    expect(insideRemaining).toBe(300);
    expect(at).toBe(300);
    expect(error).toBeInstanceOf(DeadlineExceededError);
  });

  it('fails at once with DeadlineExceededError when no time is left, without calling the function', async () => {
    const tl = limiter(1000);
    const request = new ResilienceContext(clock, clock.now() + 50);
    await clock.advance(50);
    let called = false;
    const outcome = contextStorage.run(request, () =>
      tl.execute(async () => {
        called = true;
      }),
    );
    await expect(outcome).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(called).toBe(false);
  });

  it('rejects with the error of a function that throws synchronously', async () => {
    const tl = limiter();
    const boom = new Error('sync');
    await expect(
      tl.execute(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
  });

  it('emits successful, failed and timeout events', async () => {
    const tl = limiter(100);
    const kinds: TimeLimiterEvent['kind'][] = [];
    tl.onSuccess((e) => kinds.push(e.kind));
    tl.onError((e) => kinds.push(e.kind));
    tl.onTimeout((e) => kinds.push(e.kind));
    await tl.execute(async () => 1);
    await tl.execute(async () => Promise.reject(new Error('x'))).catch(() => undefined);
    const timedOut = tl.execute(slow(1000)).catch(() => undefined);
    await clock.advance(100);
    await timedOut;
    expect(kinds).toEqual(['successful', 'failed', 'timeout']);
  });

  it('does not create an AbortSignal on the happy path', async () => {
    const tl = limiter();
    const spy = jest.spyOn(globalThis, 'AbortController');
    await tl.execute(async () => 'fine');
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });

  it('@Timeout(ms) takes 0 (legal, as timeoutDuration 0) but refuses a negative number', () => {
    class Service {
      async call(): Promise<string> {
        return 'ok';
      }
    }
    const descriptor = () => Object.getOwnPropertyDescriptor(Service.prototype, 'call')!;
    expect(() => Timeout(0)(Service.prototype, 'call', descriptor())).not.toThrow();
    expect(() => Timeout(-1)(Service.prototype, 'call', descriptor())).toThrow(
      INVALID_VALUE('@Timeout on call', 'timeoutDuration', 'a non-negative number of ms', -1),
    );
  });
});
