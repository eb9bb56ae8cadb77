import { VirtualClock } from '../../kernel/clock';
import { currentSignal } from '../../kernel/context';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { HEDGE_BUDGET_WITHOUT_RETRY_BUDGET, SAFE_NOT_LIVE } from './hedge.messages';
import type { HedgeEvent } from './hedge.events';

/** A dependency that answers each call after `ms`, noting when each attempt started and under which call. */
function slowDependency(clock: VirtualClock, ms: number) {
  const started: Array<[string, number]> = [];
  const call = (label: string) => (): Promise<string> => {
    started.push([label, clock.now()]);
    const signal = currentSignal();
    return new Promise<string>((resolve, reject) => {
      clock.setTimeout(() => resolve(label), ms);
      signal?.addEventListener('abort', () => reject(signal.reason));
    });
  };
  return { started, call };
}

describe('ResilienceRegistry.reconfigure of a hedge', () => {
  it('hedges calls that start after the change with the new delay and attempts, a call in flight keeping its own', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      hedging: {
        instances: {
          catalog: { delay: '100ms', maxHedgedAttempts: 1, safe: true, budget: { ratio: 1, maxTokens: 100 } },
        },
      },
    });
    const hedge = registry.hedge('catalog');
    const hedges: HedgeEvent[] = [];
    hedge.onHedge((event) => hedges.push(event));
    const dependency = slowDependency(clock, 1000);

    const before = hedge.execute(dependency.call('before'));
    await clock.advance(50);
    const events = registry.reconfigure('hedge', 'catalog', { delay: '20ms', maxHedgedAttempts: 2 });
    const after = hedge.execute(dependency.call('after'));
    await clock.advance(2000);

    expect(await Promise.all([before, after])).toEqual(['before', 'after']);
    expect(dependency.started).toEqual([
      ['before', 0],
      ['after', 50],
      ['after', 70],
      ['after', 90],
      ['before', 100],
    ]);
    expect(hedges.map((e) => e.attempt)).toEqual([2, 3, 2]);
    expect(events).toEqual([
      expect.objectContaining({
        policy: 'hedge',
        name: 'catalog',
        changed: ['delay', 'maxHedgedAttempts'],
        before: expect.objectContaining({ delay: 100, maxHedgedAttempts: 1 }),
        after: expect.objectContaining({ delay: 20, maxHedgedAttempts: 2 }),
      }),
    ]);
    expect(hedge.config.delay).toBe(20);
  });

  it('keeps the latencies it knows when the percentile or the window size changes; a percentile after a fixed delay starts empty', () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      hedging: { instances: { catalog: { delay: 'p50', latencyWindowSize: 20, safe: true } } },
    });
    const hedge = registry.hedge('catalog');
    for (let ms = 5; ms <= 100; ms += 5) hedge.recordLatency(ms);
    expect(hedge.currentDelay).toBe(50);

    registry.reconfigure('hedge', 'catalog', { delay: 'p90' });
    expect(hedge.currentDelay).toBe(90);

    // The 10 latest are kept: 55..100, whose p90 (nearest rank) is the 9th.
    const [resized] = registry.reconfigure('hedge', 'catalog', { latencyWindowSize: 10 });
    expect(hedge.currentDelay).toBe(95);
    expect(resized.windowReset).toBe(false);
    // The next latency takes the place of the oldest kept (55).
    hedge.recordLatency(200);
    expect(hedge.currentDelay).toBe(100);

    registry.reconfigure('hedge', 'catalog', { delay: '300ms' });
    expect(hedge.currentDelay).toBe(300);
    const [again] = registry.reconfigure('hedge', 'catalog', { delay: 'p90' });
    expect(hedge.currentDelay).toBe(Number.POSITIVE_INFINITY);
    expect(again.windowReset).toBe(true);
  });

  it("keeps its own budget's tokens, and moves between a budget of its own and a retry's", async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      retry: { instances: { inventory: { maxAttempts: 2, waitDuration: 0, budget: { ratio: 0.5, maxTokens: 6 } } } },
      hedging: { instances: { catalog: { delay: '10ms', safe: true, budget: { ratio: 0.5, maxTokens: 10 } } } },
    });
    const hedge = registry.hedge('catalog');
    const retry = registry.retry('inventory');
    expect(hedge.budgetTokens).toBe(5);

    registry.reconfigure('hedge', 'catalog', { budget: { ratio: 0.5, maxTokens: 4 } });
    expect(hedge.budgetTokens).toBe(4);

    registry.reconfigure('hedge', 'catalog', { budget: 'inventory' });
    expect(hedge.budgetTokens).toBe(3);
    // A retry's budget is refilled by the retry's calls, not by the hedge's.
    await hedge.execute(() => 'ok');
    expect([hedge.budgetTokens, retry.budgetTokens]).toEqual([3, 3]);
    await retry.execute(() => 'ok');
    expect([hedge.budgetTokens, retry.budgetTokens]).toEqual([3.5, 3.5]);

    registry.reconfigure('hedge', 'catalog', { budget: { ratio: 0.5, maxTokens: 8 } });
    expect(hedge.budgetTokens).toBe(4);
    await hedge.execute(() => 'ok');
    expect([hedge.budgetTokens, retry.budgetTokens]).toEqual([4.5, 3.5]);
  });

  it('refuses a budget naming a retry without one, and changes nothing; the same move giving the retry a budget is taken', () => {
    const clock = new VirtualClock();
    const options = {
      clock,
      retry: { instances: { plain: { maxAttempts: 2 } } },
      hedging: { instances: { catalog: { delay: '10ms', safe: true } } },
    };
    const registry = new ResilienceRegistry(options);
    const hedge = registry.hedge('catalog');
    const retry = registry.retry('plain');

    expect(() => registry.reconfigure('hedge', 'catalog', { budget: 'plain', delay: '50ms' })).toThrow(
      HEDGE_BUDGET_WITHOUT_RETRY_BUDGET("hedging instance 'catalog'", 'plain'),
    );
    expect(() =>
      registry.applyOptions({
        ...options,
        hedging: { instances: { catalog: { delay: '50ms', safe: true, budget: 'plain' } } },
      }),
    ).toThrow(HEDGE_BUDGET_WITHOUT_RETRY_BUDGET("hedging instance 'catalog'", 'plain'));
    expect(hedge.config).toEqual(expect.objectContaining({ delay: 10, budget: { ratio: 0.1, maxTokens: 10 } }));

    const events = registry.applyOptions({
      ...options,
      retry: { instances: { plain: { maxAttempts: 2, budget: { ratio: 0.5, maxTokens: 4 } } } },
      hedging: { instances: { catalog: { delay: '50ms', safe: true, budget: 'plain' } } },
    });
    expect(events.map((e) => `${e.policy} ${e.name}`)).toEqual(['retry plain', 'hedge catalog']);
    expect(hedge.budgetTokens).toBe(2);
    expect(retry.budgetTokens).toBe(2);
  });

  it('refuses a change of safe, which is checked when methods and pipelines are wired, and changes nothing', () => {
    const registry = new ResilienceRegistry({
      clock: new VirtualClock(),
      hedging: { instances: { catalog: { delay: '10ms', safe: true } } },
    });
    const hedge = registry.hedge('catalog');
    expect(() => registry.reconfigure('hedge', 'catalog', { safe: false, delay: '50ms' })).toThrow(
      SAFE_NOT_LIVE("hedging instance 'catalog'", true, false),
    );
    expect(hedge.config).toEqual(expect.objectContaining({ safe: true, delay: 10 }));
  });

  it("reaches every key of the name, and a pipeline's own hedge made from configs.default", async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      hedging: {
        configs: { default: { delay: '100ms', safe: true, budget: { ratio: 1, maxTokens: 100 } } },
        instances: { catalog: { delay: '100ms', safe: true } },
      },
    });
    const eu = registry.hedge('catalog', { key: 'eu' });
    const pipeline = registry.pipeline({ name: 'search', hedge: { maxHedgedAttempts: 2 } });

    const events = registry.applyOptions({
      clock,
      hedging: {
        configs: { default: { delay: '30ms', safe: true, budget: { ratio: 1, maxTokens: 100 } } },
        instances: { catalog: { delay: '40ms', safe: true } },
      },
    });

    expect(events.map((e) => [e.name, e.key, e.changed])).toEqual(
      expect.arrayContaining([
        ['catalog', undefined, ['delay']],
        ['catalog', 'eu', ['delay']],
        ['search', undefined, ['delay']],
      ]),
    );
    expect(eu.config.delay).toBe(40);
    expect(registry.hedge('catalog', { key: 'us' }).config.delay).toBe(40);
    const dependency = slowDependency(clock, 1000);
    const searched = pipeline.execute(dependency.call('search'));
    await clock.advance(1000);
    await searched;
    expect(dependency.started).toEqual([
      ['search', 0],
      ['search', 30],
      ['search', 60],
    ]);
  });

  it('keeps the hedges as they are when the options leave hedging out, as a Spring file does', () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      retry: { instances: { payments: { maxAttempts: 2 } } },
      hedging: { instances: { catalog: { delay: '10ms', safe: true } } },
    });
    const hedge = registry.hedge('catalog');
    registry.retry('payments');

    const events = registry.applyOptions({ clock, retry: { instances: { payments: { maxAttempts: 3 } } } });

    expect(events.map((e) => e.policy)).toEqual(['retry']);
    expect(hedge.config).toEqual(expect.objectContaining({ delay: 10, safe: true }));
    expect(registry.options.hedging.instances.get('catalog')).toBe(hedge.config);
  });

  it('moves hedges with the rest of a whole options object, and leaves alone those that do not differ', () => {
    const clock = new VirtualClock();
    const options = {
      clock,
      retry: { instances: { payments: { maxAttempts: 2 } } },
      hedging: { instances: { catalog: { delay: '10ms', safe: true }, search: { delay: 'p90', safe: true } } },
    };
    const registry = new ResilienceRegistry(options);
    const search = registry.hedge('search');
    registry.hedge('catalog');

    const events = registry.applyOptions({
      ...options,
      hedging: { instances: { catalog: { delay: '25ms', safe: true }, search: { delay: 'p90', safe: true } } },
    });

    expect(events.map((e) => [e.policy, e.name, e.changed])).toEqual([['hedge', 'catalog', ['delay']]]);
    expect(registry.hedge('catalog').config.delay).toBe(25);
    expect(search.config.delay).toBe('p90');
  });
});
