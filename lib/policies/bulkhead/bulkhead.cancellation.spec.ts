import { firstValueFrom, Observable } from 'rxjs';
import { callerAbortError } from '../../kernel/cancellation';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, currentSignal, ResilienceContext } from '../../kernel/context';
import { TimeoutExceededError } from '../../kernel/errors';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { BulkheadPolicy } from './bulkhead.policy';
import type { BulkheadCallRejectedEvent } from './bulkhead.events';
import { track } from '../../../test/support/outcome';

function sleep(clock: VirtualClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/** A caller's scope, as the request scope makes it. */
function callerOf(clock: VirtualClock): ResilienceContext {
  return new ResilienceContext(clock, Number.POSITIVE_INFINITY);
}

describe('BulkheadPolicy and the caller’s cancellation', () => {
  let clock: VirtualClock;
  let bulkhead: BulkheadPolicy;
  let permitted: number;
  let rejected: BulkheadCallRejectedEvent[];
  let calls: number;
  const method = (): string => {
    calls++;
    return 'ok';
  };

  beforeEach(() => {
    clock = new VirtualClock();
    bulkhead = new BulkheadPolicy('reports', { maxConcurrentCalls: 1, maxWaitDuration: 1000 }, clock);
    permitted = 0;
    rejected = [];
    calls = 0;
    bulkhead.onCallPermitted(() => permitted++);
    bulkhead.onCallRejected((e) => rejected.push(e));
  });

  it('gives no permit to a caller that has already cancelled, and rejects with its AbortError before reaching the bulkhead', async () => {
    const caller = callerOf(clock);
    const reason = new Error('client went away');
    caller.abort(reason);
    const outcome = track(
      clock,
      contextStorage.run(caller, () => bulkhead.execute(method)),
    );
    await VirtualClock.settle();
    expect(outcome).toEqual({ status: 'rejected', error: callerAbortError(reason), at: 0 });
    expect((outcome.error as Error).cause).toBe(reason);
    expect(calls).toBe(0);
    expect(permitted).toBe(0);
    expect(rejected).toEqual([]);
    expect(bulkhead.metrics).toEqual({ availableConcurrentCalls: 1, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
  });

  it('leaves the queue at once when the caller cancels, rejecting with its AbortError rather than a BulkheadFullError', async () => {
    void bulkhead.execute(() => sleep(clock, 500));
    const caller = callerOf(clock);
    const outcome = track(
      clock,
      contextStorage.run(caller, () => bulkhead.execute(method)),
    );
    await clock.advance(100);
    expect(bulkhead.metrics.queueDepth).toBe(1);
    const reason = new Error('client went away');
    caller.abort(reason);
    await VirtualClock.settle();
    expect(outcome.status).toBe('rejected');
    expect(outcome.at).toBe(100);
    expect(outcome.error).toEqual(callerAbortError(reason));
    expect((outcome.error as Error).cause).toBe(reason);
    expect(rejected).toEqual([{ name: 'reports', reason: 'aborted', error: outcome.error }]);
    expect(bulkhead.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
    await clock.advance(500);
    expect(calls).toBe(0);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
  });

  it('through execute(fn, { signal }): a queued caller that aborts leaves with its AbortError', async () => {
    void bulkhead.execute(() => sleep(clock, 500));
    const controller = new AbortController();
    const outcome = track(clock, bulkhead.execute(method, { signal: controller.signal }));
    await clock.advance(50);
    controller.abort('gone');
    await VirtualClock.settle();
    expect(outcome).toEqual({ status: 'rejected', error: callerAbortError('gone'), at: 50 });
    expect(bulkhead.metrics.queueDepth).toBe(0);
  });

  describe('observe', () => {
    function source(): Observable<string> {
      return new Observable<string>((subscriber) => {
        calls++;
        subscriber.next('ok');
        subscriber.complete();
      });
    }

    it('gives no permit to a subscription whose caller has already cancelled', async () => {
      const caller = callerOf(clock);
      const reason = new Error('client went away');
      caller.abort(reason);
      const outcome = track(
        clock,
        contextStorage.run(caller, () => firstValueFrom(bulkhead.observe(source()))),
      );
      await VirtualClock.settle();
      expect(outcome.status).toBe('rejected');
      expect(outcome.error).toEqual(callerAbortError(reason));
      expect(calls).toBe(0);
      expect(permitted).toBe(0);
      expect(rejected.map((e) => e.reason)).toEqual(['aborted']);
    });

    it('leaves the queue with the caller’s AbortError when the caller of a waiting subscription cancels', async () => {
      void bulkhead.execute(() => sleep(clock, 500));
      const caller = callerOf(clock);
      const outcome = track(
        clock,
        contextStorage.run(caller, () => firstValueFrom(bulkhead.observe(source()))),
      );
      await clock.advance(100);
      expect(bulkhead.metrics.queueDepth).toBe(1);
      const reason = new Error('client went away');
      caller.abort(reason);
      await VirtualClock.settle();
      expect(outcome).toEqual({ status: 'rejected', error: callerAbortError(reason), at: 100 });
      expect(bulkhead.metrics.queueDepth).toBe(0);
      await clock.advance(500);
      expect(calls).toBe(0);
    });
  });
});

describe('a call that waited in the bulkhead queue under a time limit', () => {
  it('sees its attempt’s signal once it runs, and that signal aborts at the limit, outside every request scope', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      timeLimiter: { instances: { reports: { timeoutDuration: 500 } } },
      bulkhead: { instances: { reports: { maxConcurrentCalls: 1, maxWaitDuration: 1000 } } },
    });
    const pipeline = registry.pipeline({ name: 'reports', timeLimiter: 'reports', bulkhead: 'reports' });
    const signals: (AbortSignal | undefined)[] = [];
    const stopped: number[] = [];
    // Runs 400 ms, or until its signal aborts, as a fetch given that signal does.
    const method = (): Promise<string> => {
      const signal = currentSignal();
      signals.push(signal);
      return new Promise((resolve, reject) => {
        const timer = clock.setTimeout(() => resolve('done'), 400);
        signal?.addEventListener('abort', () => {
          clock.clearTimeout(timer);
          stopped.push(clock.now());
          reject(signal.reason);
        });
      });
    };
    const first = track(clock, pipeline.execute(method));
    await clock.advance(100);
    // Queued at 100 behind the first call; its limit runs from 100 to 600; it starts at 400.
    const second = track(clock, pipeline.execute(method));
    await clock.advance(1000);
    expect(first).toEqual({ status: 'fulfilled', value: 'done', at: 400 });
    expect(second).toEqual({ status: 'rejected', error: expect.any(TimeoutExceededError), at: 600 });
    expect(signals).toHaveLength(2);
    expect(signals[1]).toBeInstanceOf(AbortSignal);
    expect(signals[1]!.aborted).toBe(true);
    expect(stopped).toEqual([600]);
    expect(registry.bulkhead('reports').metrics.availableConcurrentCalls).toBe(1);
  });
});
