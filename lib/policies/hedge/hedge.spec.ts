import { firstValueFrom, Observable, toArray } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, currentSignal, ResilienceContext } from '../../kernel/context';
import { CallNotPermittedError, DeadlineExceededError } from '../../kernel/errors';
import { refusal } from '../../kernel/refusal';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { ResilienceModuleOptions } from '../../options/resilience.options';
import { HedgeConfigInput } from './hedge.config';
import { HedgePolicy } from './hedge.policy';
import type { HedgeEvent, HedgeWinnerEvent } from './hedge.events';

class Unavailable extends Error {
  readonly status = 503;
}

interface Attempt {
  readonly started: number;
  readonly signal: AbortSignal | undefined;
}

/** A dependency whose n-th call (1-based) answers after `latencies[n-1]` ms, or fails when that entry is an Error. */
function dependency(clock: VirtualClock, plan: ReadonlyArray<number | [number, Error]>) {
  const attempts: Attempt[] = [];
  const call = (): Promise<number> => {
    const n = attempts.length + 1;
    attempts.push({ started: clock.now(), signal: currentSignal() });
    const step = plan[n - 1] ?? 0;
    const [ms, error] = Array.isArray(step) ? step : [step, undefined];
    return new Promise<number>((resolve, reject) =>
      clock.setTimeout(() => (error === undefined ? resolve(n) : reject(error)), ms),
    );
  };
  return { attempts, call };
}

function hedgeOf(clock: VirtualClock, config: HedgeConfigInput, options: ResilienceModuleOptions = {}): HedgePolicy {
  const registry = new ResilienceRegistry({
    clock,
    hedging: { instances: { h: { safe: true, ...config } } },
    ...options,
  });
  return registry.hedge('h');
}

async function settle<T>(clock: VirtualClock, promise: Promise<T>, ms = 10_000): Promise<PromiseSettledResult<T>> {
  const outcome = Promise.allSettled([promise]).then(([r]) => r);
  await clock.advance(ms);
  return outcome;
}

describe('HedgePolicy', () => {
  it('starts a second attempt after the delay and takes the first answer; the loser is aborted', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const hedges: HedgeEvent[] = [];
    const winners: HedgeWinnerEvent[] = [];
    hedge.onHedge((e) => hedges.push(e));
    hedge.onWinner((e) => winners.push(e));
    const dep = dependency(clock, [1000, 50]);
    let answeredAt = -1;
    const call = hedge.execute(dep.call).then((v) => {
      answeredAt = clock.now();
      return v;
    });
    await clock.advance(99);
    expect(dep.attempts).toHaveLength(1);
    await clock.advance(1);
    expect(dep.attempts.map((a) => a.started)).toEqual([0, 100]);
    expect(await settle(clock, call)).toEqual({ status: 'fulfilled', value: 2 });
    expect(answeredAt).toBe(150);
    expect(dep.attempts[0].signal?.aborted).toBe(true);
    expect((dep.attempts[0].signal?.reason as DOMException).name).toBe('AbortError');
    expect(dep.attempts[1].signal?.aborted).toBe(false);
    expect(hedges).toEqual([{ name: 'h', attempt: 2, waitedMs: 100 }]);
    expect(winners).toEqual([{ name: 'h', attempt: 2, cancelled: 1 }]);
    expect(hedge.metrics).toEqual({ hedged: 1, winner: 1, cancelled: 1, budgetDenied: 0 });
  });

  it('starts nothing more when the first attempt answers within the delay, and leaves no timer behind', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const dep = dependency(clock, [99]);
    expect(await settle(clock, hedge.execute(dep.call), 500)).toEqual({ status: 'fulfilled', value: 1 });
    expect(dep.attempts).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
    expect(hedge.metrics).toEqual({ hedged: 0, winner: 0, cancelled: 0, budgetDenied: 0 });
  });

  it('lets the first attempt win when it answers before the hedge, and aborts the hedge', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const winners: HedgeWinnerEvent[] = [];
    hedge.onWinner((e) => winners.push(e));
    const dep = dependency(clock, [120, 500]);
    expect(await settle(clock, hedge.execute(dep.call))).toEqual({ status: 'fulfilled', value: 1 });
    expect(dep.attempts[1].signal?.aborted).toBe(true);
    expect(winners).toEqual([{ name: 'h', attempt: 1, cancelled: 1 }]);
    expect(hedge.metrics).toMatchObject({ hedged: 1, winner: 0, cancelled: 1 });
  });

  it('starts up to maxHedgedAttempts hedges, one delay apart', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100, maxHedgedAttempts: 2 });
    const dep = dependency(clock, [1000, 1000, 30, 0]);
    expect(await settle(clock, hedge.execute(dep.call))).toEqual({ status: 'fulfilled', value: 3 });
    expect(dep.attempts.map((a) => a.started)).toEqual([0, 100, 200]);
    expect(dep.attempts.map((a) => a.signal?.aborted)).toEqual([true, true, false]);
    expect(hedge.metrics).toMatchObject({ hedged: 2, winner: 1, cancelled: 2 });
  });

  it('hands a failure over to the next attempt at once', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const hedges: HedgeEvent[] = [];
    hedge.onHedge((e) => hedges.push(e));
    const dep = dependency(clock, [[10, new Unavailable('down')], 20]);
    expect(await settle(clock, hedge.execute(dep.call))).toEqual({ status: 'fulfilled', value: 2 });
    expect(dep.attempts.map((a) => a.started)).toEqual([0, 10]);
    expect(hedges).toEqual([{ name: 'h', attempt: 2, waitedMs: 0 }]);
  });

  it('waits for a running attempt when another fails and no attempt is left', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const dep = dependency(clock, [300, [10, new Unavailable('hedge down')]]);
    expect(await settle(clock, hedge.execute(dep.call))).toEqual({ status: 'fulfilled', value: 1 });
  });

  it('fails with the error of the last attempt when every attempt failed', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const last = new Unavailable('second');
    const dep = dependency(clock, [
      [150, new Unavailable('first')],
      [100, last],
    ]);
    expect(await settle(clock, hedge.execute(dep.call))).toEqual({ status: 'rejected', reason: last });
  });

  it('never lets a refusal hide an attempt that reached the method', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const reached = new Unavailable('reached');
    const refused = refusal(new CallNotPermittedError('b', 'OPEN', 1000));
    let n = 0;
    const call = (): Promise<number> =>
      ++n === 1 ? new Promise((_, reject) => clock.setTimeout(() => reject(reached), 10)) : Promise.reject(refused);
    const outcome = await settle(clock, hedge.execute(call));
    // The failure handed over at once; the hedge was refused: the call ends with the outcome-unknown error.
    expect(n).toBe(2);
    expect(outcome).toEqual({ status: 'rejected', reason: reached });
    expect((reached as Error & { cause?: unknown }).cause).toBe(refused);
  });

  it('waits for a running attempt when a hedge is refused', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const refused = refusal(new CallNotPermittedError('b', 'OPEN', 1000));
    let n = 0;
    const call = (): Promise<number> =>
      ++n === 1 ? new Promise((resolve) => clock.setTimeout(() => resolve(1), 300)) : Promise.reject(refused);
    expect(await settle(clock, hedge.execute(call))).toEqual({ status: 'fulfilled', value: 1 });
    expect(n).toBe(2);
  });

  it('ends with a refusal at once when the only attempt was refused, without spending a hedge', async () => {
    const clock = new VirtualClock();
    const hedge = hedgeOf(clock, { delay: 100 });
    const refused = refusal(new CallNotPermittedError('b', 'OPEN', 1000));
    let n = 0;
    const outcome = await settle(
      clock,
      hedge.execute(() => {
        n++;
        return Promise.reject(refused);
      }),
    );
    expect(outcome).toEqual({ status: 'rejected', reason: refused });
    expect(n).toBe(1);
    expect(hedge.budgetTokens).toBe(5);
  });

  describe('retry budget', () => {
    it('denies hedges once its tokens are spent, and counts the denials', async () => {
      const clock = new VirtualClock();
      // Starts at half of maxTokens: one token.
      const hedge = hedgeOf(clock, { delay: 10, budget: { ratio: 0.1, maxTokens: 2 } });
      const dep = dependency(clock, [100, 100, 100, 100, 100]);
      const calls = [hedge.execute(dep.call), hedge.execute(dep.call), hedge.execute(dep.call)];
      await clock.advance(1000);
      await Promise.all(calls);
      expect(dep.attempts).toHaveLength(4);
      expect(hedge.metrics).toMatchObject({ hedged: 1, budgetDenied: 2 });
    });

    it('holds the extra load to its ratio over many slow calls', async () => {
      const clock = new VirtualClock();
      const hedge = hedgeOf(clock, { delay: 10, budget: { ratio: 0.1, maxTokens: 10 } });
      let attempts = 0;
      const slow = (): Promise<void> => {
        attempts++;
        return new Promise((resolve) => clock.setTimeout(resolve, 50));
      };
      for (let i = 0; i < 1000; i++) {
        const call = hedge.execute(slow);
        await clock.advance(100);
        await call;
      }
      // 5 tokens at the start, then one hedge per ten successes.
      expect(attempts - 1000).toBeLessThanOrEqual(5 + 100);
      expect(attempts - 1000).toBeGreaterThanOrEqual(100);
    });

    it("draws from a retry instance's budget when named, without refilling it", async () => {
      const clock = new VirtualClock();
      const registry = new ResilienceRegistry({
        clock,
        retry: { instances: { backend: { budget: { ratio: 0.5, maxTokens: 4 } } } },
        hedging: { instances: { h: { safe: true, delay: 10, budget: 'backend' } } },
      });
      const hedge = registry.hedge('h');
      expect(registry.retry('backend').budgetTokens).toBe(2);
      const dep = dependency(clock, [100, 5]);
      await settle(clock, hedge.execute(dep.call), 200);
      expect(registry.retry('backend').budgetTokens).toBe(1);
    });

    it('refuses a retry instance without a budget', () => {
      const clock = new VirtualClock();
      const registry = new ResilienceRegistry({
        clock,
        hedging: { instances: { h: { budget: 'backend' } } },
      });
      expect(() => registry.hedge('h')).toThrow(/'budget' names retry instance 'backend', which has no budget/);
    });
  });

  describe('deadline', () => {
    it('starts no hedge that the request deadline would not leave time for', async () => {
      const clock = new VirtualClock();
      const hedge = hedgeOf(clock, { delay: 100 });
      const dep = dependency(clock, [150, 10]);
      const request = new ResilienceContext(clock, 80);
      const call = contextStorage.run(request, () => hedge.execute(dep.call));
      // The dependency's timer and the request deadline's: no hedge timer is armed.
      expect(clock.pendingTimers).toBe(2);
      await settle(clock, call, 500);
      expect(dep.attempts).toHaveLength(1);
      request.dispose();
    });

    it("bounds every attempt: the deadline aborts the first attempt's signal and the hedge's", async () => {
      const clock = new VirtualClock();
      const hedge = hedgeOf(clock, { delay: 100 });
      const dep = dependency(clock, [1000, 1000]);
      const request = new ResilienceContext(clock, 300);
      void request.signal;
      const call = Promise.allSettled([contextStorage.run(request, () => hedge.execute(dep.call))]);
      await clock.advance(299);
      expect(dep.attempts.map((a) => a.signal?.aborted)).toEqual([false, false]);
      await clock.advance(1);
      expect(dep.attempts.map((a) => a.signal?.reason)).toEqual([
        expect.any(DeadlineExceededError),
        expect.any(DeadlineExceededError),
      ]);
      // The call ends with the deadline, as a caller's cancellation: the AbortError caused by it.
      const [outcome] = await call;
      expect(outcome).toMatchObject({ status: 'rejected', reason: { name: 'AbortError' } });
      expect((outcome as PromiseRejectedResult).reason.cause).toBeInstanceOf(DeadlineExceededError);
      request.dispose();
    });
  });

  describe('percentile delay', () => {
    it('hedges only once enough latencies are known, then after their percentile', async () => {
      const clock = new VirtualClock();
      const hedge = hedgeOf(clock, { delay: 'p95' });
      expect(hedge.currentDelay).toBe(Number.POSITIVE_INFINITY);
      // Nineteen answers: a p95 needs twenty.
      for (let i = 1; i <= 19; i++) await settle(clock, hedge.execute(dependency(clock, [i * 10]).call), 1000);
      expect(hedge.currentDelay).toBe(Number.POSITIVE_INFINITY);
      await settle(clock, hedge.execute(dependency(clock, [200]).call), 1000);
      // 10..200 ms: the 19th of 20 sorted latencies.
      expect(hedge.currentDelay).toBe(190);
      const dep = dependency(clock, [1000, 10]);
      await settle(clock, hedge.execute(dep.call));
      expect(dep.attempts.map((a) => a.started - dep.attempts[0].started)).toEqual([0, 190]);
    });
  });

  describe('observe', () => {
    function source(clock: VirtualClock, plan: number[], subscribed: number[], unsubscribed: number[]) {
      let n = 0;
      return new Observable<number>((subscriber) => {
        const id = ++n;
        subscribed.push(id);
        const timer = clock.setTimeout(
          () => {
            subscriber.next(id);
            subscriber.complete();
          },
          plan[id - 1],
        );
        return () => {
          clock.clearTimeout(timer);
          unsubscribed.push(id);
        };
      });
    }

    it('keeps the first subscription to emit and unsubscribes the others', async () => {
      const clock = new VirtualClock();
      const hedge = hedgeOf(clock, { delay: 100 });
      const subscribed: number[] = [];
      const unsubscribed: number[] = [];
      const values = firstValueFrom(hedge.observe(source(clock, [1000, 20], subscribed, unsubscribed)).pipe(toArray()));
      expect(await settle(clock, values)).toEqual({ status: 'fulfilled', value: [2] });
      expect(subscribed).toEqual([1, 2]);
      expect(unsubscribed).toContain(1);
      expect(hedge.metrics).toMatchObject({ hedged: 1, winner: 1, cancelled: 1 });
    });
  });
});
