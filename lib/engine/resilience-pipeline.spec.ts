import { firstValueFrom, Observable } from 'rxjs';
import { VirtualClock } from '../kernel/clock';
import { TimeoutExceededError } from '../kernel/errors';
import { ResilienceRegistry } from '../registry/resilience.registry';

class Unavailable extends Error {
  readonly status = 503;
}

function registry(clock = new VirtualClock()) {
  return new ResilienceRegistry({
    clock,
    random: () => 0.5,
    retry: { instances: { inventory: { maxAttempts: 3, waitDuration: 100 } } },
    circuitBreaker: { instances: { inventory: {} } },
    bulkhead: { instances: { other: {} } },
  });
}

describe('ResilienceRegistry.pipeline', () => {
  it('by name holds every policy declared under that name, outermost first', () => {
    expect(registry().pipeline('inventory').layers).toEqual([
      ['retry', 'inventory'],
      ['circuitBreaker', 'inventory'],
    ]);
  });

  it('by name refuses a name no policy declares', () => {
    expect(() => registry().pipeline('inventroy')).toThrow(
      "resilience4nest: pipeline 'inventroy': no retry, circuitBreaker, rateLimiter, timeLimiter or bulkhead instance is declared under 'inventroy'",
    );
  });

  it('hedges inside the retry: after the delay a second copy runs, and the first answer wins', async () => {
    const clock = new VirtualClock();
    const r = registry(clock);
    const pipeline = r.pipeline({
      name: 'quotes',
      retry: 'inventory',
      hedge: { delay: 50, maxHedgedAttempts: 1, safe: true },
    });
    expect(pipeline.layers).toEqual([
      ['retry', 'inventory'],
      ['hedge', 'quotes'],
    ]);
    let calls = 0;
    const outcome = pipeline.execute(
      () =>
        new Promise<string>((resolve) => {
          const copy = ++calls;
          // The first copy is the slow one; the hedge answers 10 ms after it starts.
          if (copy === 2) clock.setTimeout(() => resolve('from the hedge'), 10);
        }),
    );
    await clock.advance(60);
    await expect(outcome).resolves.toBe('from the hedge');
    expect(calls).toBe(2);
    expect(r.hedges.map((h) => [h.name, h.metrics.hedged, h.metrics.winner])).toEqual([['quotes', 1, 1]]);
  });

  it('refuses a hedge not declared safe to repeat, naming the instance and the setting', () => {
    expect(() => registry().pipeline({ name: 'quotes', hedge: { delay: 50 } })).toThrow(
      "resilience4nest: pipeline 'quotes' would run its function more than once at a time through hedging instance 'quotes', which is not declared safe to repeat: set 'safe: true' on it if running the function twice is harmless",
    );
  });

  it('takes inline options, named after the pipeline, and validates them like config', () => {
    const r = registry();
    const pipeline = r.pipeline({ name: 'stock', timeLimiter: { timeoutDuration: '2s' }, retry: 'inventory' });
    expect(pipeline.layers).toEqual([
      ['retry', 'inventory'],
      ['timeLimiter', 'stock'],
    ]);
    expect(() => r.pipeline({ name: 'stock', timeLimiter: { timeoutDuration: -1 } })).toThrow(
      /timeLimiter options of pipeline 'stock'.*timeoutDuration/,
    );
  });

  it('refuses unknown keys, bad layers and bad fallbacks, naming the pipeline', () => {
    const r = registry();
    expect(() => r.pipeline({ name: 'p', retries: 'inventory' } as never)).toThrow(
      "pipeline 'p': unknown key 'retries' (known keys: name, retry, circuitBreaker, rateLimiter, timeLimiter, bulkhead, hedge, cache, fallback)",
    );
    expect(() => r.pipeline({ name: 'p', retry: 3 } as never)).toThrow(
      "pipeline 'p': key 'retry' must be an instance name or an options object, got 3",
    );
    expect(() => r.pipeline({ name: 'p', fallback: { errors: [], handler: () => 1 } })).toThrow(
      "pipeline 'p': each fallback must be",
    );
    expect(() => r.pipeline(42 as never)).toThrow('registry.pipeline() takes an instance name or an options object');
  });

  it("gives the function its attempt's signal, aborted when the time limit fires (attempts with a context)", async () => {
    const clock = new VirtualClock();
    // Outside a request deadline, an attempt has a context (and a signal) of its own only with attemptContext 'always'.
    const pipeline = new ResilienceRegistry({ clock, deadline: { attemptContext: 'always' } }).pipeline({
      timeLimiter: { timeoutDuration: 100 },
    });
    let seen: AbortSignal | undefined;
    const outcome = pipeline
      .execute((signal) => {
        seen = signal;
        return new Promise(() => undefined);
      })
      .catch((error: unknown) => error);
    await clock.advance(100);
    expect(await outcome).toBeInstanceOf(TimeoutExceededError);
    expect(seen?.aborted).toBe(true);
  });

  it('retries a failing function and answers its value; a synchronous throw is a failure like any other', async () => {
    const clock = new VirtualClock();
    const pipeline = registry(clock).pipeline('inventory');
    let calls = 0;
    const outcome = pipeline.execute(() => {
      calls++;
      if (calls < 3) throw new Unavailable('down');
      return 'stock';
    });
    await clock.advance(200);
    expect(await outcome).toBe('stock');
    expect(calls).toBe(3);
  });

  it('with no layer runs the function and turns a synchronous throw into a rejection', async () => {
    const pipeline = registry().pipeline({});
    await expect(pipeline.execute(() => 1)).resolves.toBe(1);
    await expect(
      pipeline.execute(() => {
        throw new Unavailable('down');
      }),
    ).rejects.toBeInstanceOf(Unavailable);
  });

  it('re-subscribes an Observable on retry and falls back to an Observable answer', async () => {
    const clock = new VirtualClock();
    const pipeline = registry(clock).pipeline({
      retry: 'inventory',
      fallback: { errors: Unavailable, handler: () => new Observable((s) => s.next('cached')) },
    });
    let subscriptions = 0;
    const failing = new Observable<string>((subscriber) => {
      subscriptions++;
      subscriber.error(new Unavailable('down'));
    });
    const answer = firstValueFrom(pipeline.observe(failing));
    expect(subscriptions).toBe(1);
    await clock.advance(200);
    expect(await answer).toBe('cached');
    expect(subscriptions).toBe(3);
  });
});
