import { firstValueFrom, Observable } from 'rxjs';
import { callerAbortError } from '../../kernel/cancellation';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { FaultSpec } from './fault-injection.options';
import { FaultInjectedEvent } from './fault-injector';
import { track } from '../../../test/support/outcome';

function registryWith(clock: VirtualClock, fault: FaultSpec): ResilienceRegistry {
  return new ResilienceRegistry({
    clock,
    random: () => 0,
    bulkhead: { instances: { inventory: { maxConcurrentCalls: 10 } } },
    faultInjection: { enabled: true, instances: { inventory: fault } },
  });
}

/** A caller's scope, as the request scope makes it. */
function callerOf(clock: VirtualClock): ResilienceContext {
  return new ResilienceContext(clock, Number.POSITIVE_INFINITY);
}

describe('FaultInjector and the caller’s cancellation', () => {
  let clock: VirtualClock;
  let calls: number;
  const method = (): Promise<string> => {
    calls++;
    return Promise.resolve('stock');
  };

  beforeEach(() => {
    clock = new VirtualClock();
    calls = 0;
  });

  it('injects no fault and calls nothing for a caller that has already cancelled', async () => {
    const registry = registryWith(clock, { error: { rate: 1, error: 503 }, latency: { rate: 1, duration: 100 } });
    const events: FaultInjectedEvent[] = [];
    registry.faults.onFaultInjected((e) => events.push(e));
    const call = registry.faults.wrapCall(['inventory'], method);
    const caller = callerOf(clock);
    const reason = new Error('client went away');
    caller.abort(reason);
    const outcome = track(
      clock,
      contextStorage.run(caller, () => call([]) as Promise<unknown>),
    );
    await clock.advance(1000);
    expect(outcome).toEqual({ status: 'rejected', error: callerAbortError(reason), at: 0 });
    expect((outcome.error as Error).cause).toBe(reason);
    expect(calls).toBe(0);
    expect(events).toEqual([]);
    expect([...registry.faults.injected()]).toEqual([]);
  });

  it('ends an injected latency at once when the caller cancels, with its AbortError, and calls nothing', async () => {
    const registry = registryWith(clock, { latency: { rate: 1, duration: 1000 } });
    const call = registry.faults.wrapCall(['inventory'], method);
    const caller = callerOf(clock);
    const outcome = track(
      clock,
      contextStorage.run(caller, () => call([]) as Promise<unknown>),
    );
    await clock.advance(300);
    const reason = new Error('client went away');
    caller.abort(reason);
    await VirtualClock.settle();
    expect(outcome.status).toBe('rejected');
    expect(outcome.at).toBe(300);
    expect(outcome.error).toMatchObject({ name: 'AbortError', cause: reason });
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(1000);
    expect(calls).toBe(0);
  });

  it('in a pipeline: execute(fn, { signal }) cancelled during an injected latency rejects at once with the AbortError', async () => {
    const registry = registryWith(clock, { latency: { rate: 1, duration: 1000 } });
    const pipeline = registry.pipeline('inventory');
    const controller = new AbortController();
    const outcome = track(clock, pipeline.execute(method, { signal: controller.signal }));
    await clock.advance(300);
    const reason = new Error('client went away');
    controller.abort(reason);
    await VirtualClock.settle();
    expect(outcome.status).toBe('rejected');
    expect(outcome.at).toBe(300);
    expect(outcome.error).toMatchObject({ name: 'AbortError', cause: reason });
    await clock.advance(1000);
    expect(calls).toBe(0);
    expect(registry.bulkhead('inventory').metrics.availableConcurrentCalls).toBe(10);
  });

  it('in a pipeline: a request scope that has cancelled draws no fault', async () => {
    const registry = registryWith(clock, { error: { rate: 1, error: 503 } });
    const pipeline = registry.pipeline('inventory');
    const caller = callerOf(clock);
    const reason = new Error('client went away');
    caller.abort(reason);
    const outcome = track(
      clock,
      contextStorage.run(caller, () => pipeline.execute(method)),
    );
    await clock.advance(10);
    expect(outcome.status).toBe('rejected');
    expect(outcome.error).toMatchObject({ name: 'AbortError', cause: reason });
    expect([...registry.faults.injected()]).toEqual([]);
    expect(calls).toBe(0);
  });

  describe('observe', () => {
    function source(): Observable<string> {
      return new Observable<string>((subscriber) => {
        calls++;
        subscriber.next('stock');
        subscriber.complete();
      });
    }

    it('injects no fault and subscribes nothing for a caller that has already cancelled', async () => {
      const registry = registryWith(clock, { error: { rate: 1, error: 503 } });
      const caller = callerOf(clock);
      const reason = new Error('client went away');
      caller.abort(reason);
      const outcome = track(
        clock,
        contextStorage.run(caller, () => firstValueFrom(registry.faults.observe(['inventory'], source()))),
      );
      await clock.advance(10);
      expect(outcome.status).toBe('rejected');
      expect(outcome.error).toMatchObject({ name: 'AbortError', cause: reason });
      expect(calls).toBe(0);
      expect([...registry.faults.injected()]).toEqual([]);
    });

    it('ends an injected latency at once when the caller cancels, subscribing nothing', async () => {
      const registry = registryWith(clock, { latency: { rate: 1, duration: 1000 } });
      const caller = callerOf(clock);
      const outcome = track(
        clock,
        contextStorage.run(caller, () => firstValueFrom(registry.faults.observe(['inventory'], source()))),
      );
      await clock.advance(300);
      const reason = new Error('client went away');
      caller.abort(reason);
      await VirtualClock.settle();
      expect(outcome.status).toBe('rejected');
      expect(outcome.at).toBe(300);
      expect(outcome.error).toMatchObject({ name: 'AbortError', cause: reason });
      expect(clock.pendingTimers).toBe(0);
      await clock.advance(1000);
      expect(calls).toBe(0);
    });
  });
});
