import { getEventListeners } from 'node:events';
import { VirtualClock } from '../../kernel/clock';
import { ResilienceContext, contextStorage } from '../../kernel/context';
import { BulkheadFullError, DeadlineExceededError, TimeoutExceededError } from '../../kernel/errors';
import { TimeLimiter } from '../time-limiter/time-limiter.policy';
import { BulkheadPolicy } from './bulkhead.policy';
import type { BulkheadCallFinishedEvent, BulkheadCallRejectedEvent } from './bulkhead.events';
import { BulkheadConfig } from './bulkhead.config';

interface Outcome<T> {
  status: 'pending' | 'fulfilled' | 'rejected';
  value?: T;
  error?: unknown;
  /** Virtual time at which the promise settled. */
  at?: number;
}

/** Records how and when a promise settled, on the virtual clock. */
function track<T>(clock: VirtualClock, promise: Promise<T>): Outcome<T> {
  const outcome: Outcome<T> = { status: 'pending' };
  promise.then(
    (value) => Object.assign(outcome, { status: 'fulfilled', value, at: clock.now() }),
    (error: unknown) => Object.assign(outcome, { status: 'rejected', error, at: clock.now() }),
  );
  return outcome;
}

function sleep(clock: VirtualClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

function bulkhead(clock: VirtualClock, config: Partial<BulkheadConfig>): BulkheadPolicy {
  return new BulkheadPolicy('reports', { maxConcurrentCalls: 25, maxWaitDuration: 0, ...config }, clock);
}

describe('BulkheadPolicy', () => {
  let clock: VirtualClock;

  beforeEach(() => {
    clock = new VirtualClock();
  });

  it('admits 15 of 50 simultaneous calls with 5 permits and a queue of 10, rejecting 35 at once', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 5, queueCapacity: 10, maxWaitDuration: 1000 });
    const calls = Array.from({ length: 50 }, (_, i) =>
      track(
        clock,
        b.execute(() => sleep(clock, 100).then(() => i)),
      ),
    );
    await VirtualClock.settle();

    const rejected = calls.filter((c) => c.status === 'rejected');
    expect(rejected).toHaveLength(35);
    for (const c of rejected) {
      expect(c.at).toBe(0);
      expect(c.error).toBeInstanceOf(BulkheadFullError);
      expect((c.error as BulkheadFullError).reason).toBe('queue-full');
    }
    expect(b.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 5, queueDepth: 10 });

    await clock.advance(300);
    expect(calls.filter((c) => c.status === 'fulfilled')).toHaveLength(15);
    expect(b.metrics).toEqual({ availableConcurrentCalls: 5, maxAllowedConcurrentCalls: 5, queueDepth: 0 });
  });

  it('refuses every call at once with maxConcurrentCalls 0, even with a queue and a wait allowed', async () => {
    const rejections: string[] = [];
    const b = bulkhead(clock, { maxConcurrentCalls: 0, queueCapacity: 5, maxWaitDuration: 1000 });
    b.onCallRejected((e) => rejections.push(e.reason));
    let invoked = 0;
    const calls = Array.from({ length: 3 }, () =>
      track(
        clock,
        b.execute(async () => ++invoked),
      ),
    );
    await VirtualClock.settle();
    // Resilience4j would hold each caller for maxWaitDuration first; no permit can ever come, so refuse now.
    expect(calls.map((c) => [c.status, c.at])).toEqual([
      ['rejected', 0],
      ['rejected', 0],
      ['rejected', 0],
    ]);
    expect(invoked).toBe(0);
    expect(rejections).toEqual(['queue-full', 'queue-full', 'queue-full']);
    expect(b.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 0, queueDepth: 0 });
  });

  it('queues up to maxConcurrentCalls callers when queueCapacity is not set', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 2, maxWaitDuration: 1000 });
    const calls = Array.from({ length: 6 }, () =>
      track(
        clock,
        b.execute(() => sleep(clock, 10)),
      ),
    );
    await VirtualClock.settle();
    expect(calls.filter((c) => c.status === 'rejected')).toHaveLength(2);
    expect(b.metrics.queueDepth).toBe(2);
    await clock.advance(20);
    expect(calls.filter((c) => c.status === 'fulfilled')).toHaveLength(4);
  });

  it('refuses at once when all permits are taken and maxWaitDuration is 0, whatever the queue capacity', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 1, queueCapacity: 10 });
    const first = track(
      clock,
      b.execute(() => sleep(clock, 100)),
    );
    await expect(b.execute(() => 'never')).rejects.toMatchObject({ reason: 'queue-full', instance: 'reports' });
    expect(b.metrics.queueDepth).toBe(0);
    await clock.advance(100);
    expect(first.status).toBe('fulfilled');
  });

  it('gives up waiting after maxWaitDuration with a wait-timeout error that suggests retrying after that long', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 100 });
    const holder = track(
      clock,
      b.execute(() => sleep(clock, 1000)),
    );
    const waiter = track(
      clock,
      b.execute(() => 'late'),
    );
    await clock.advance(99);
    expect(waiter.status).toBe('pending');
    expect(b.metrics.queueDepth).toBe(1);

    await clock.advance(1);
    expect(waiter.status).toBe('rejected');
    const error = waiter.error as BulkheadFullError;
    expect(error).toBeInstanceOf(BulkheadFullError);
    expect(error.reason).toBe('wait-timeout');
    expect(error.retryAfterMs).toBe(100);
    expect(b.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 1, queueDepth: 0 });

    await clock.advance(900);
    expect(holder.status).toBe('fulfilled');
    expect(b.metrics.availableConcurrentCalls).toBe(1);
  });

  it('hands permits to waiters in arrival order, skipping those that left', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000, queueCapacity: 5 });
    const order: number[] = [];
    const run = (id: number, ms: number, ctx?: ResilienceContext): Promise<void> => {
      const call = (): Promise<void> =>
        b.execute(async () => {
          order.push(id);
          await sleep(clock, ms);
        });
      return ctx ? contextStorage.run(ctx, call) : call();
    };
    const leaving = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
    const calls = [run(0, 10), run(1, 10), run(2, 10, leaving), run(3, 10), run(4, 10)].map((p) => track(clock, p));
    await VirtualClock.settle();
    leaving.abort(new Error('client went away'));
    await clock.advance(100);

    expect(order).toEqual([0, 1, 3, 4]);
    expect(calls.map((c) => c.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  });

  it('releases the permit when the call rejects', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 2 });
    await expect(b.execute(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(b.metrics.availableConcurrentCalls).toBe(2);
  });

  it('releases the permit when the call throws synchronously', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 2 });
    await expect(
      b.execute(() => {
        throw new TypeError('sync');
      }),
    ).rejects.toThrow(TypeError);
    expect(b.metrics.availableConcurrentCalls).toBe(2);
  });

  it('passes a released permit straight to a waiter after a failure, and never releases twice', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
    const failing = track(
      clock,
      b.execute(() => sleep(clock, 10).then(() => Promise.reject(new Error('boom')))),
    );
    const waiting = track(
      clock,
      b.execute(() => sleep(clock, 10).then(() => 'ok')),
    );
    await clock.advance(10);
    expect(failing.status).toBe('rejected');
    expect(b.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
    await clock.advance(10);
    expect(waiting.value).toBe('ok');
    expect(b.metrics.availableConcurrentCalls).toBe(1);
  });

  it('passes the argument to next on its queued path', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 1 });
    await expect(b.callQueued((n: number) => n * 2, 21)).resolves.toBe(42);
  });

  describe('inside a time limiter, with no request deadline', () => {
    it('a wait that runs out of maxWaitDuration is BulkheadFullError (503), not a deadline error', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
      const limiter = new TimeLimiter('reports', { timeoutDuration: 1000, cancelRunningFuture: true }, clock);
      // An earlier quick call leaves the limiter's shared timer armed for t=1000, so it re-arms for the waiter after the bulkhead's timer.
      const quick = track(
        clock,
        limiter.execute(() => sleep(clock, 10)),
      );
      void b.execute(() => sleep(clock, 5000));
      await clock.advance(500);
      expect(quick.status).toBe('fulfilled');
      const waiter = track(
        clock,
        limiter.execute(() => b.execute(() => 'late')),
      );
      await clock.advance(1000);
      expect(waiter.error).toBeInstanceOf(BulkheadFullError);
      expect(waiter.error).toMatchObject({ reason: 'wait-timeout', instance: 'reports' });
      expect(waiter.at).toBe(1500);
      await clock.advance(5000);
    });

    it("a wait cut short by the attempt's time limit is the limiter's TimeoutExceededError", async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 5000 });
      const limiter = new TimeLimiter('reports', { timeoutDuration: 1000, cancelRunningFuture: true }, clock);
      void b.execute(() => sleep(clock, 5000));
      const waiter = track(
        clock,
        limiter.execute(() => b.execute(() => 'late')),
      );
      await clock.advance(1000);
      expect(waiter.error).toBeInstanceOf(TimeoutExceededError);
      expect(b.metrics.queueDepth).toBe(0);
      await clock.advance(5000);
    });
  });

  describe('with a request context', () => {
    it('leaves the queue with DeadlineExceededError when the deadline comes before maxWaitDuration', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
      const holder = track(
        clock,
        b.execute(() => sleep(clock, 500)),
      );
      const ctx = new ResilienceContext(clock, clock.now() + 50);
      const waiter = track(
        clock,
        contextStorage.run(ctx, () => b.execute(() => 'late')),
      );
      await clock.advance(49);
      expect(waiter.status).toBe('pending');

      await clock.advance(1);
      expect(waiter.error).toBeInstanceOf(DeadlineExceededError);
      expect((waiter.error as DeadlineExceededError).instance).toBe('reports');
      expect(b.metrics.queueDepth).toBe(0);

      await clock.advance(450);
      expect(holder.status).toBe('fulfilled');
      expect(b.metrics.availableConcurrentCalls).toBe(1);
      ctx.dispose();
    });

    it('refuses at once with DeadlineExceededError when no time is left and no permit is free', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
      void b.execute(() => sleep(clock, 100));
      const ctx = new ResilienceContext(clock, clock.now());
      await expect(contextStorage.run(ctx, () => b.execute(() => 'late'))).rejects.toBeInstanceOf(
        DeadlineExceededError,
      );
      expect(b.metrics.queueDepth).toBe(0);
      await clock.advance(100);
    });

    it('leaves the queue when the context is aborted', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
      void b.execute(() => sleep(clock, 500));
      const ctx = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
      const waiter = track(
        clock,
        contextStorage.run(ctx, () => b.execute(() => 'late')),
      );
      await clock.advance(10);
      expect(b.metrics.queueDepth).toBe(1);

      const reason = new Error('client went away');
      ctx.abort(reason);
      await VirtualClock.settle();
      expect(waiter.status).toBe('rejected');
      expect(waiter.error).toMatchObject({ name: 'AbortError', cause: reason });
      expect(waiter.at).toBe(10);
      expect(b.metrics.queueDepth).toBe(0);
      await clock.advance(500);
      expect(b.metrics.availableConcurrentCalls).toBe(1);
    });

    it('maps an abort caused by the passing deadline to DeadlineExceededError', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
      void b.execute(() => sleep(clock, 500));
      const ctx = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
      const waiter = track(
        clock,
        contextStorage.run(ctx, () => b.execute(() => 'late')),
      );
      await VirtualClock.settle();
      ctx.abort(new DeadlineExceededError('deadline'));
      await VirtualClock.settle();
      expect(waiter.error).toBeInstanceOf(DeadlineExceededError);
      await clock.advance(500);
    });

    it('refuses at once when the context was already aborted', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
      void b.execute(() => sleep(clock, 100));
      const ctx = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
      const reason = new Error('gone');
      ctx.abort(reason);
      await expect(contextStorage.run(ctx, () => b.execute(() => 'late'))).rejects.toMatchObject({
        name: 'AbortError',
        cause: reason,
      });
      expect(b.metrics.queueDepth).toBe(0);
      await clock.advance(100);
    });

    it('does not create the context signal when a permit is free', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
      const ctx = new ResilienceContext(clock, clock.now() + 1000);
      const signal = jest.spyOn(ctx, 'signal', 'get');
      await contextStorage.run(ctx, () => b.execute(() => 'fast'));
      expect(signal).not.toHaveBeenCalled();
      expect(clock.pendingTimers).toBe(0);
    });
  });

  describe('events', () => {
    it('reports permitted, rejected and finished calls', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 50, queueCapacity: 1 });
      const permitted: string[] = [];
      const rejected: BulkheadCallRejectedEvent[] = [];
      const finished: BulkheadCallFinishedEvent[] = [];
      b.onCallPermitted((e) => permitted.push(e.name));
      b.onCallRejected((e) => rejected.push(e));
      b.onCallFinished((e) => finished.push(e));

      const holder = b.execute(() => sleep(clock, 200));
      const timedOut = track(
        clock,
        b.execute(() => 'late'),
      );
      const refused = track(
        clock,
        b.execute(() => 'refused'),
      );
      await clock.advance(200);
      await holder;

      expect(timedOut.status).toBe('rejected');
      expect(refused.status).toBe('rejected');
      expect(permitted).toEqual(['reports']);
      expect(rejected.map((e) => e.reason)).toEqual(['queue-full', 'wait-timeout']);
      expect(rejected[0].error).toBeInstanceOf(BulkheadFullError);
      expect(finished).toEqual([{ name: 'reports', durationMs: 200 }]);
    });

    it('reports a deadline or an abort that ends a wait, with the error the caller gets', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000, queueCapacity: 2 });
      const rejected: BulkheadCallRejectedEvent[] = [];
      b.onCallRejected((e) => rejected.push(e));
      void b.execute(() => sleep(clock, 500));
      const request = new ResilienceContext(clock, 50);
      const late = track(
        clock,
        contextStorage.run(request, () => b.execute(() => 'late')),
      );
      const leaving = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
      const gone = track(
        clock,
        contextStorage.run(leaving, () => b.execute(() => 'gone')),
      );
      await clock.advance(20);
      leaving.abort(new Error('client went away'));
      await clock.advance(30);

      expect(rejected.map((e) => [e.name, e.reason])).toEqual([
        ['reports', 'aborted'],
        ['reports', 'deadline'],
      ]);
      expect(rejected[0].error).toBe(gone.error);
      expect(rejected[1].error).toBe(late.error);
      expect(late.error).toBeInstanceOf(DeadlineExceededError);
      expect((late.error as Error).message).toBe(
        "Deadline exceeded at 'reports': no bulkhead permit became free before the deadline",
      );
      expect(gone.error).toMatchObject({
        name: 'AbortError',
        cause: expect.objectContaining({ message: 'client went away' }),
      });
      await clock.advance(500);
      request.dispose();
    });

    it('exposes onBulkheadRejected as the same subscription as onCallRejected, with unsubscribe', async () => {
      const b = bulkhead(clock, { maxConcurrentCalls: 1 });
      expect(b.onBulkheadRejected).toBe(b.onCallRejected);
      const seen: string[] = [];
      const unsubscribe = b.onBulkheadRejected((e) => seen.push(e.reason));
      void b.execute(() => sleep(clock, 10));
      await expect(b.execute(() => 1)).rejects.toBeInstanceOf(BulkheadFullError);
      unsubscribe();
      await expect(b.execute(() => 1)).rejects.toBeInstanceOf(BulkheadFullError);
      expect(seen).toEqual(['queue-full']);
      await clock.advance(10);
    });
  });

  it('suggests no retry delay when it never lets a call wait', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 1 });
    void b.execute(() => sleep(clock, 10));
    const error = await b.execute(() => 'never').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BulkheadFullError);
    expect((error as BulkheadFullError).retryAfterMs).toBeUndefined();
    await clock.advance(10);
  });

  it('reports a finished event only for calls that entered while someone listened', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 2 });
    const finished: BulkheadCallFinishedEvent[] = [];
    const unmeasured = b.execute(() => sleep(clock, 30).then(() => 'unmeasured'));
    await clock.advance(10);
    b.onCallFinished((e) => finished.push(e));
    const measured = b.execute(() => sleep(clock, 30).then(() => 'measured'));
    await clock.advance(30);
    await expect(unmeasured).resolves.toBe('unmeasured');
    await expect(measured).resolves.toBe('measured');
    expect(finished).toEqual([{ name: 'reports', durationMs: 30 }]);
  });

  it('removes its abort listener from the request signal once a waiter gets its permit', async () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 1, maxWaitDuration: 1000 });
    void b.execute(() => sleep(clock, 10));
    const ctx = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
    const waiter = contextStorage.run(ctx, () => b.execute(() => 'served'));
    await VirtualClock.settle();
    expect(getEventListeners(ctx.signal, 'abort')).toHaveLength(1);
    await clock.advance(10);
    await expect(waiter).resolves.toBe('served');
    expect(getEventListeners(ctx.signal, 'abort')).toHaveLength(0);
    ctx.abort(new Error('late abort'));
    expect(b.metrics).toEqual({ availableConcurrentCalls: 1, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
  });

  it('runs a call at once whatever the clock reads when it enters, 1 ms included', async () => {
    // The entry time is returned where "no permit" is signalled: no clock reading may be mistaken for it.
    const b = new BulkheadPolicy('reports', { maxConcurrentCalls: 1, maxWaitDuration: 0 }, new VirtualClock(1));
    const finished: number[] = [];
    b.onCallFinished((e) => finished.push(e.durationMs));
    await expect(b.execute(() => 'ran')).resolves.toBe('ran');
    expect(finished).toEqual([0]);
    expect(b.metrics.availableConcurrentCalls).toBe(1);
  });

  it('exposes its config', () => {
    const b = bulkhead(clock, { maxConcurrentCalls: 3, maxWaitDuration: 20, queueCapacity: 4 });
    expect(b.config).toEqual({ maxConcurrentCalls: 3, maxWaitDuration: 20, queueCapacity: 4 });
    expect(b.name).toBe('reports');
  });
});
