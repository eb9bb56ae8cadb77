import { AsyncLocalStorage } from 'node:async_hooks';
import * as fc from 'fast-check';
import { Clock, VirtualClock } from '../../kernel/clock';
import { INVALID_VALUE } from '../../config/config.messages';
import {
  contextStorage,
  currentContext,
  currentSignal,
  DEFAULT_DEADLINE_HEADER,
  remainingTime,
  ResilienceContext,
} from '../../kernel/context';
import { BulkheadFullError, DeadlineExceededError, TimeoutExceededError } from '../../kernel/errors';
import { refusal } from '../../kernel/refusal';
import { callerAbortError } from '../../kernel/cancellation';
import { AttemptContextMode, TimeLimiter } from './time-limiter.policy';
import type { TimeLimiterEvent } from './time-limiter.events';
import { Timeout } from './time-limiter.decorator';
import { LaggingClock } from '../../../test/support/pipelines';

describe('TimeLimiter', () => {
  let clock: VirtualClock;
  beforeEach(() => (clock = new VirtualClock()));

  const limiter = (timeoutDuration = 1000, cancelRunningFuture = true, attemptContext: AttemptContextMode = 'always') =>
    new TimeLimiter('payments', { timeoutDuration, cancelRunningFuture }, clock, attemptContext);

  /** A call that resolves after `ms` on the virtual clock, noting the signal it saw. */
  const slow =
    (ms: number, seen: { signal?: AbortSignal } = {}) =>
    () =>
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
    expect(error).toMatchObject({ instance: 'payments', timeoutMs: 1000 });
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

describe('TimeLimiter: a result that arrives after the limit', () => {
  /** `calls` calls of `workMs` each under `limitMs`, started `gapMs` apart, with timers `lagMs` late; what each came back as. */
  async function run(calls: number, workMs: number, limitMs: number, lagMs: number, gapMs: number, fails = false) {
    const clock = new VirtualClock();
    const tl = new TimeLimiter(
      'late',
      { timeoutDuration: limitMs, cancelRunningFuture: true },
      new LaggingClock(clock, lagMs),
    );
    const outcomes: Array<Promise<string>> = [];
    for (let i = 0; i < calls; i++) {
      const work = () =>
        new Promise<string>((resolve, reject) =>
          clock.setTimeout(() => (fails ? reject(new Error('late failure')) : resolve('value')), workMs),
        );
      outcomes.push(
        tl.execute(work).then(
          () => 'success',
          (e: unknown) => (e as Error).constructor.name,
        ),
      );
      if (gapMs > 0) await clock.advance(gapMs);
    }
    await clock.advance(workMs + limitMs + lagMs + 1);
    return Promise.all(outcomes);
  }

  it('is a TimeoutExceededError, never a success: 2,000 calls of 8 ms under a 4 ms limit, timers 5 ms late', async () => {
    const outcomes = await run(2000, 8, 4, 5, 0.25);
    expect(outcomes.filter((o) => o === 'success')).toHaveLength(0);
    expect(outcomes.filter((o) => o === 'TimeoutExceededError')).toHaveLength(2000);
  });

  it('is a timeout also when it is a failure', async () => {
    expect(await run(3, 8, 4, 5, 1, true)).toEqual([
      'TimeoutExceededError',
      'TimeoutExceededError',
      'TimeoutExceededError',
    ]);
  });

  it('comes back as what it was when it arrives before the limit, however late the timer', async () => {
    expect(await run(3, 3, 4, 5, 1)).toEqual(['success', 'success', 'success']);
  });

  it('property: the outcome is a timeout whenever the work takes longer than the limit, and what it was when shorter', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ workMs: fc.integer({ min: 0, max: 20 }), fails: fc.boolean() }), {
          minLength: 1,
          maxLength: 20,
        }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 0, max: 5 }),
        async (calls, limitMs, lagMs, gapMs) => {
          const clock = new VirtualClock();
          const tl = new TimeLimiter(
            'late',
            { timeoutDuration: limitMs, cancelRunningFuture: true },
            new LaggingClock(clock, lagMs),
          );
          const outcomes: Array<Promise<string>> = [];
          for (const { workMs, fails } of calls) {
            const work = () =>
              new Promise<string>((resolve, reject) =>
                clock.setTimeout(() => (fails ? reject(new Error('failed')) : resolve('value')), workMs),
              );
            outcomes.push(
              tl.execute(work).then(
                (v) => v,
                (e: unknown) => (e as Error).constructor.name,
              ),
            );
            await clock.advance(gapMs);
          }
          await clock.advance(100);
          const settled = await Promise.all(outcomes);
          // At exactly the limit the first to arrive wins, result or timer, as in Resilience4j.
          const expected = calls.map(({ workMs, fails }, i) =>
            workMs > limitMs ? 'TimeoutExceededError' : workMs < limitMs ? (fails ? 'Error' : 'value') : settled[i],
          );
          expect(settled).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("TimeLimiter: listeners on the request's signal", () => {
  it("each attempt stops watching the request's scope when it settles: 20,000 attempts leave none", async () => {
    const clock = new VirtualClock();
    const tl = new TimeLimiter('attempts', { timeoutDuration: 1000, cancelRunningFuture: true }, clock);
    const request = new ResilienceContext(clock, clock.now() + 60_000);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      await contextStorage.run(request, async () => {
        for (let i = 0; i < 20_000; i++) {
          // Each attempt looks at its signal, as a fetch would; some fail, some succeed.
          await tl
            .execute(async () => {
              if (currentSignal()?.aborted) throw new Error('aborted');
              if (i % 2 === 1) throw new Error('failed');
              return i;
            })
            .catch(() => undefined);
        }
      });
      expect(request.watching).toBe(0);
      // One attempt that times out (its signal aborted) and one left running without cancel also let go.
      const timedOut = contextStorage
        .run(request, () => tl.execute(() => new Promise(() => undefined)))
        .catch((e: unknown) => e);
      const uncancelled = new TimeLimiter('uncancelled', { timeoutDuration: 10, cancelRunningFuture: false }, clock);
      let finish!: () => void;
      const running = contextStorage
        .run(request, () =>
          uncancelled.execute(() => {
            void currentSignal();
            return new Promise<void>((resolve) => (finish = resolve));
          }),
        )
        .catch((e: unknown) => e);
      await clock.advance(1000);
      expect(await timedOut).toBeInstanceOf(TimeoutExceededError);
      expect(await running).toBeInstanceOf(TimeoutExceededError);
      // The uncancelled attempt's work still runs and still follows the request's signal until it ends.
      expect(request.watching).toBe(1);
      finish();
      await VirtualClock.settle();
      expect(request.watching).toBe(0);
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      request.dispose();
    }
  });
});

describe('TimeLimiter: limits, scopes and the shared timer', () => {
  let clock: VirtualClock;
  beforeEach(() => (clock = new VirtualClock()));

  const limiter = (timeoutDuration = 100, timers: Clock = clock) =>
    new TimeLimiter('payments', { timeoutDuration, cancelRunningFuture: true }, timers);
  const never = () => new Promise<never>(() => undefined);

  it('is a TimeoutExceededError, not a deadline error, when the request deadline is exactly the limit away', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 100);
    const outcome = contextStorage.run(request, () => tl.execute(never)).catch((e: unknown) => e);
    await clock.advance(100);
    expect(await outcome).toBeInstanceOf(TimeoutExceededError);
    request.dispose();
  });

  it('runs the call in an attempt scope under the caller’s, carrying its deadline header', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 10_000, 'x-budget');
    let inside: ResilienceContext | undefined;
    await contextStorage.run(request, () => tl.execute(async () => (inside = currentContext())));
    expect(inside?.parent).toBe(request);
    expect(inside?.header).toBe('x-budget');
    expect(inside?.deadline).toBe(100);
    const always = new TimeLimiter('payments', { timeoutDuration: 100, cancelRunningFuture: true }, clock, 'always');
    await always.execute(async () => (inside = currentContext()));
    expect(inside?.parent).toBeUndefined();
    expect(inside?.header).toBe(DEFAULT_DEADLINE_HEADER);
  });

  describe("attemptContext 'auto' (the default)", () => {
    it('outside every scope, enters no context, yet the synchronous part sees the attempt, whose signal aborts at the limit', async () => {
      const tl = new TimeLimiter('payments', { timeoutDuration: 100, cancelRunningFuture: true }, clock);
      expect(tl.attemptContext).toBe('auto');
      let seen: AbortSignal | undefined;
      let left = 0;
      let afterAwait: AbortSignal | undefined = new AbortController().signal;
      const outcome = tl
        .execute(async () => {
          left = remainingTime();
          seen = currentSignal();
          await Promise.resolve();
          afterAwait = currentSignal();
          return never();
        })
        .catch((e: unknown) => e);
      expect(seen?.aborted).toBe(false);
      expect(left).toBe(100);
      await clock.advance(0);
      // No async-local context was entered: past the first await the attempt is out of sight.
      expect(afterAwait).toBeUndefined();
      await clock.advance(100);
      expect(await outcome).toBeInstanceOf(TimeoutExceededError);
      expect(seen?.aborted).toBe(true);
      expect(seen?.reason).toBeInstanceOf(TimeoutExceededError);
    });

    it("inside a request's scope, runs the call in an attempt scope whose signal aborts at the limit", async () => {
      const tl = new TimeLimiter('payments', { timeoutDuration: 100, cancelRunningFuture: true }, clock, 'auto');
      const request = new ResilienceContext(clock, 10_000);
      let seen: AbortSignal | undefined;
      let inside: ResilienceContext | undefined;
      const outcome = contextStorage
        .run(request, () =>
          tl.execute(() => {
            inside = currentContext();
            seen = currentSignal();
            return never();
          }),
        )
        .catch((e: unknown) => e);
      await clock.advance(100);
      const error = await outcome;
      expect(error).toBeInstanceOf(TimeoutExceededError);
      expect(inside?.parent).toBe(request);
      expect(inside?.deadline).toBe(100);
      expect(seen?.aborted).toBe(true);
      expect(seen?.reason).toBe(error);
    });
  });

  it('runs nothing for a request that was aborted: the caller gets its AbortError, as a decorated method does', async () => {
    const tl = limiter(100);
    const timeouts: unknown[] = [];
    tl.onTimeout((event) => timeouts.push(event));
    const request = new ResilienceContext(clock, 10_000);
    const reason = new Error('client left');
    request.abort(reason);
    let called = false;
    const outcome = contextStorage.run(request, () => tl.execute(async () => (called = true)));
    await expect(outcome).rejects.toEqual(callerAbortError(reason));
    await expect(outcome).rejects.toHaveProperty('cause', reason);
    expect(called).toBe(false);
    expect(timeouts).toEqual([]);
  });

  it('tells whether a call now would be refused at once', async () => {
    const tl = limiter(100);
    expect(tl.refusesAtOnce()).toBe(false);
    const endless = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
    endless.abort(new Error('gone'));
    expect(contextStorage.run(endless, () => tl.refusesAtOnce())).toBe(false);
    const request = new ResilienceContext(clock, 50);
    expect(contextStorage.run(request, () => tl.refusesAtOnce())).toBe(false);
    await clock.advance(49);
    expect(contextStorage.run(request, () => tl.refusesAtOnce())).toBe(false);
    await clock.advance(1);
    expect(contextStorage.run(request, () => tl.refusesAtOnce())).toBe(true);
    const aborted = new ResilienceContext(clock, 10_000);
    aborted.abort(new Error('gone'));
    expect(contextStorage.run(aborted, () => tl.refusesAtOnce())).toBe(true);
  });

  it('a result that arrives exactly at the limit, before a late timer, is a success', async () => {
    const tl = limiter(4, new LaggingClock(clock, 5));
    const outcome = tl.execute(() => new Promise<string>((resolve) => clock.setTimeout(() => resolve('on time'), 4)));
    await clock.advance(20);
    await expect(outcome).resolves.toBe('on time');
  });

  it('a refusal that arrives after the limit, before a late timer, stays that refusal', async () => {
    const tl = limiter(4, new LaggingClock(clock, 5));
    const refused = refusal(new BulkheadFullError('pool'));
    const outcome = tl.execute(() => new Promise((_, reject) => clock.setTimeout(() => reject(refused), 6)));
    const settled = outcome.catch((e: unknown) => e);
    await clock.advance(20);
    expect(await settled).toBe(refused);
  });

  it('after dispose, times out no pending call by timer: each settles when its own work does', async () => {
    const tl = limiter(100);
    const outcome = tl
      .execute(() => new Promise<string>((resolve) => clock.setTimeout(() => resolve('late'), 300)))
      .catch((e: unknown) => [clock.now(), e]);
    expect(clock.pendingTimers).toBe(2);
    tl.dispose();
    expect(clock.pendingTimers).toBe(1);
    tl.dispose();
    await clock.advance(300);
    const [at, error] = (await outcome) as [number, unknown];
    expect(at).toBe(300);
    expect(error).toBeInstanceOf(TimeoutExceededError);
  });

  it('runs nothing under an aborted request, with or without a deadline: the caller has cancelled', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
    const reason = new Error('client left');
    request.abort(reason);
    let ran = 0;
    await expect(contextStorage.run(request, () => tl.execute(async () => ++ran))).rejects.toMatchObject({
      name: 'AbortError',
      cause: reason,
    });
    expect(ran).toBe(0);
  });

  it('a failure that arrives exactly at the limit, before a late timer, is that failure', async () => {
    const tl = limiter(4, new LaggingClock(clock, 5));
    const failure = new RangeError('on time');
    const outcome = tl
      .execute(() => new Promise((_, reject) => clock.setTimeout(() => reject(failure), 4)))
      .catch((e: unknown) => e);
    await clock.advance(20);
    expect(await outcome).toBe(failure);
  });

  it('reports a timed-out call once, whether its work later succeeds or fails', async () => {
    const tl = limiter(100);
    const kinds: string[] = [];
    tl.onSuccess((e) => kinds.push(e.kind));
    tl.onError((e) => kinds.push(e.kind));
    tl.onTimeout((e) => kinds.push(e.kind));
    const late = tl.execute(() => new Promise((resolve) => clock.setTimeout(() => resolve('late'), 300)));
    const failing = tl.execute(() => new Promise((_, reject) => clock.setTimeout(() => reject(new Error('x')), 300)));
    const outcomes = Promise.allSettled([late, failing]);
    await clock.advance(300);
    expect((await outcomes).map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(kinds).toEqual(['timeout', 'timeout']);
  });

  it('leaves no timer behind for a call cut short by the request deadline that finishes in time', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 50);
    const outcome = contextStorage.run(request, () =>
      tl.execute(() => new Promise<string>((resolve) => clock.setTimeout(() => resolve('fast'), 10))),
    );
    // The method's timer, the attempt's own and the request's deadline, which its caller's cancellation follows.
    expect(clock.pendingTimers).toBe(3);
    await clock.advance(10);
    await expect(outcome).resolves.toBe('fast');
    expect(clock.pendingTimers).toBe(1);
    request.dispose();
    expect(clock.pendingTimers).toBe(0);
  });

  it('re-arms the shared timer for the next pending call once the earliest settled in time', async () => {
    const tl = limiter(100);
    const first = tl.execute(() => new Promise<string>((resolve) => clock.setTimeout(() => resolve('first'), 10)));
    await clock.advance(50);
    const second = tl.execute(never).catch((e: unknown) => [clock.now(), e]);
    await clock.advance(50);
    await expect(first).resolves.toBe('first');
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(49);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(1);
    const [at, error] = (await second) as [number, unknown];
    expect(at).toBe(150);
    expect(error).toBeInstanceOf(TimeoutExceededError);
    expect(clock.pendingTimers).toBe(0);
  });

  it('times out each of 3,000 queued calls at its own limit while earlier ones settle in time', async () => {
    const tl = limiter(100);
    const outcomes: Array<Promise<unknown>> = [];
    // 2,000 calls settle in time, then 1,000 never do: the queue is compacted past its settled head.
    for (let i = 0; i < 2000; i++) outcomes.push(tl.execute(async () => i));
    await VirtualClock.settle();
    for (let i = 0; i < 1000; i++) {
      outcomes.push(tl.execute(never).catch((e: unknown) => [clock.now(), e]));
      if (i % 100 === 99) await clock.advance(1);
    }
    await clock.advance(200);
    const settled = await Promise.all(outcomes);
    expect(settled.slice(0, 2000)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    const timedOut = settled.slice(2000) as Array<[number, unknown]>;
    expect(timedOut.every(([, e]) => e instanceof TimeoutExceededError)).toBe(true);
    expect(timedOut.map(([at]) => at)).toEqual(Array.from({ length: 1000 }, (_, i) => 100 + Math.floor(i / 100)));
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('TimeLimiter: capturing the call context for timeout listeners', () => {
  it('captures each call’s async context only while a listener asks to hear timeouts in it', async () => {
    const clock = new VirtualClock();
    const tl = new TimeLimiter('payments', { timeoutDuration: 100, cancelRunningFuture: true }, clock);
    const snapshot = jest.spyOn(AsyncLocalStorage, 'snapshot');
    try {
      const counting = tl.onTimeout(() => undefined);
      await tl.execute(async () => 1);
      expect(snapshot).not.toHaveBeenCalled();
      const tracing = tl.onTimeoutInCallContext(() => undefined);
      await tl.execute(async () => 2);
      expect(snapshot).toHaveBeenCalledTimes(1);
      tracing();
      tracing();
      await tl.execute(async () => 3);
      expect(snapshot).toHaveBeenCalledTimes(1);
      counting();
    } finally {
      snapshot.mockRestore();
    }
  });
});
