import { firstValueFrom, Observable } from 'rxjs';
import { callerAbortError } from '../../kernel/cancellation';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, currentSignal, ResilienceContext } from '../../kernel/context';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { HedgePolicy } from './hedge.policy';
import type { HedgeEvent } from './hedge.events';
import { track } from '../../../test/support/outcome';

class Unavailable extends Error {
  readonly status = 503;
}

function hedgeOf(clock: VirtualClock, delay: number): HedgePolicy {
  return new ResilienceRegistry({ clock, hedging: { instances: { h: { safe: true, delay } } } }).hedge('h');
}

/**
 * A method that ignores its signal, as a decorated method does: the n-th
 * call answers after `plan[n-1]` ms, or fails when that entry is an Error.
 */
function method(clock: VirtualClock, plan: ReadonlyArray<number | [number, Error]>) {
  const signals: AbortSignal[] = [];
  const call = (): Promise<number> => {
    const n = signals.length + 1;
    signals.push(currentSignal()!);
    const step = plan[n - 1] ?? 0;
    const [ms, error] = Array.isArray(step) ? step : [step, undefined];
    return new Promise<number>((resolve, reject) =>
      clock.setTimeout(() => (error === undefined ? resolve(n) : reject(error)), ms),
    );
  };
  return { signals, call };
}

/** A caller's scope, as the request scope or `execute(fn, { signal })` makes it. */
function callerOf(clock: VirtualClock): ResilienceContext {
  return new ResilienceContext(clock, Number.POSITIVE_INFINITY);
}

describe('HedgePolicy and the caller’s cancellation', () => {
  it('runs nothing for a caller that has already cancelled, and rejects with its AbortError', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, 100);
    const hedges: HedgeEvent[] = [];
    hedge.onHedge((e) => hedges.push(e));
    const dep = method(clock, [5000, 10]);
    const caller = callerOf(clock);
    const reason = new Error('client went away');
    caller.abort(reason);
    const call = track(
      clock,
      contextStorage.run(caller, () => hedge.call(dep.call, undefined)),
    );
    await clock.advance(10_000);
    expect(dep.signals).toHaveLength(0);
    expect(hedges).toEqual([]);
    expect(call.status).toBe('rejected');
    expect(call.at).toBe(0);
    expect(call.error).toMatchObject({ name: 'AbortError', cause: reason });
    expect(call.error).toEqual(callerAbortError(reason));
    expect(clock.pendingTimers).toBe(0);
  });

  it('settles at once when the caller cancels, aborts every running attempt and starts no hedge after', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, 200);
    const hedges: HedgeEvent[] = [];
    hedge.onHedge((e) => hedges.push(e));
    const dep = method(clock, [5000, 5000, 5000]);
    const caller = callerOf(clock);
    const call = track(
      clock,
      contextStorage.run(caller, () => hedge.call(dep.call, undefined)),
    );
    await clock.advance(300);
    expect(dep.signals).toHaveLength(2);
    const reason = new Error('client went away');
    caller.abort(reason);
    await clock.advance(200);
    expect(call.status).toBe('rejected');
    expect(call.at).toBe(300);
    expect(call.error).toMatchObject({ name: 'AbortError', cause: reason });
    expect(dep.signals.map((s) => s.aborted)).toEqual([true, true]);
    expect(dep.signals.map((s) => s.reason)).toEqual([reason, reason]);
    await clock.advance(10_000);
    expect(dep.signals).toHaveLength(2);
    expect(hedges).toEqual([{ name: 'h', attempt: 2, waitedMs: 200 }]);
    expect(hedge.metrics).toEqual({ hedged: 1, winner: 0, cancelled: 0, budgetDenied: 0 });
  });

  it('clears the hedge timer when the caller cancels before the first hedge is due', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, 1000);
    const dep = method(clock, [5000]);
    const caller = callerOf(clock);
    const call = track(
      clock,
      contextStorage.run(caller, () => hedge.call(dep.call, undefined)),
    );
    await clock.advance(500);
    // The method's timer and the hedge's.
    expect(clock.pendingTimers).toBe(2);
    caller.abort(new Error('gone'));
    await VirtualClock.settle();
    expect(call.status).toBe('rejected');
    expect(call.at).toBe(500);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(10_000);
    expect(dep.signals).toHaveLength(1);
  });

  it('rejects with the last error of an attempt that reached the method when one failed before the caller cancelled', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, 1000);
    const reached = new Unavailable('primary down');
    const dep = method(clock, [[100, reached], 5000]);
    const caller = callerOf(clock);
    const call = track(
      clock,
      contextStorage.run(caller, () => hedge.call(dep.call, undefined)),
    );
    await clock.advance(500);
    expect(dep.signals).toHaveLength(2);
    caller.abort(new Error('gone'));
    await VirtualClock.settle();
    expect(call).toEqual({ status: 'rejected', error: reached, at: 500 });
  });

  it('through execute(fn, { signal }): settles at the cancel with the reached error, never the AbortError of the attempt it cut', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, 1000);
    const reached = new Unavailable('primary down');
    const dep = method(clock, [[100, reached], 5000]);
    const controller = new AbortController();
    const call = track(clock, hedge.execute(dep.call, { signal: controller.signal }));
    await clock.advance(500);
    controller.abort(new Error('gone'));
    await VirtualClock.settle();
    expect(call).toEqual({ status: 'rejected', error: reached, at: 500 });
    expect(dep.signals).toHaveLength(2);
  });

  it('does not hand an attempt failing with a cancellation’s own AbortError over to a hedge, nor spend a token on it', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, 1000);
    const hedges: HedgeEvent[] = [];
    hedge.onHedge((e) => hedges.push(e));
    const inner = new AbortController();
    inner.abort(new Error('inner caller gone'));
    let calls = 0;
    // The attempt runs a call of its own that its own caller cancelled: an AbortError, no outcome of the dependency.
    const call = track(
      clock,
      hedge.call(() => {
        calls++;
        return hedge.execute(() => 1, { signal: inner.signal });
      }, undefined),
    );
    await clock.advance(5000);
    expect(calls).toBe(1);
    expect(hedges).toEqual([]);
    expect(call.status).toBe('rejected');
    expect(call.at).toBe(0);
    expect(call.error).toMatchObject({ name: 'AbortError', cause: inner.signal.reason });
    expect(hedge.budgetTokens).toBe(5);
  });

  it('ends with the reached error when the attempt it handed over to fails with a cancellation’s AbortError', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, 1000);
    const reached = new Unavailable('primary down');
    const inner = new AbortController();
    inner.abort(new Error('inner caller gone'));
    let calls = 0;
    const call = track(
      clock,
      hedge.call(() => {
        calls++;
        return calls === 1 ? Promise.reject(reached) : hedge.execute(() => 1, { signal: inner.signal });
      }, undefined),
    );
    await clock.advance(5000);
    expect(calls).toBe(2);
    expect(call).toEqual({ status: 'rejected', error: reached, at: 0 });
  });

  describe('observe', () => {
    function slow(clock: VirtualClock, subscribed: number[], unsubscribed: number[]): Observable<number> {
      let n = 0;
      return new Observable<number>((subscriber) => {
        const id = ++n;
        subscribed.push(id);
        const timer = clock.setTimeout(() => {
          subscriber.next(id);
          subscriber.complete();
        }, 5000);
        return () => {
          clock.clearTimeout(timer);
          unsubscribed.push(id);
        };
      });
    }

    it('subscribes nothing for a caller that has already cancelled', async () => {
      const clock = new VirtualClock();
      const hedge = hedgeOf(clock, 100);
      const subscribed: number[] = [];
      const caller = callerOf(clock);
      const reason = new Error('gone');
      caller.abort(reason);
      const value = track(
        clock,
        contextStorage.run(caller, () => firstValueFrom(hedge.observe(slow(clock, subscribed, [])))),
      );
      await clock.advance(10_000);
      expect(subscribed).toEqual([]);
      expect(value.status).toBe('rejected');
      expect(value.error).toMatchObject({ name: 'AbortError', cause: reason });
    });

    it('unsubscribes every attempt and errors at once when the caller scope aborts', async () => {
      const clock = new VirtualClock();
      const hedge = hedgeOf(clock, 200);
      const subscribed: number[] = [];
      const unsubscribed: number[] = [];
      const caller = callerOf(clock);
      const value = track(
        clock,
        contextStorage.run(caller, () => firstValueFrom(hedge.observe(slow(clock, subscribed, unsubscribed)))),
      );
      await clock.advance(300);
      expect(subscribed).toEqual([1, 2]);
      const reason = new Error('gone');
      caller.abort(reason);
      await VirtualClock.settle();
      expect(value.status).toBe('rejected');
      expect(value.at).toBe(300);
      expect(value.error).toMatchObject({ name: 'AbortError', cause: reason });
      expect(unsubscribed.sort()).toEqual([1, 2]);
      expect(clock.pendingTimers).toBe(0);
      await clock.advance(10_000);
      expect(subscribed).toEqual([1, 2]);
    });
  });
});
