import { Injectable, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  CallNotPermittedError,
  CircuitBreaker,
  currentSignal,
  Hedge,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
  VirtualClock,
} from '../../lib';

class Unavailable extends Error {
  readonly status = 503;
}

@Injectable()
class Inventory {
  calls = 0;

  @Retry('inventory')
  @CircuitBreaker('inventory')
  async shared(): Promise<string> {
    this.calls++;
    throw new Unavailable();
  }

  @Retry('inventory', { waitDuration: 0 })
  async own(): Promise<string> {
    this.calls++;
    throw new Unavailable();
  }
}

/** A catalog whose every call answers after a second, noting when each attempt started. */
@Injectable()
class Catalog {
  readonly started: number[] = [];

  constructor(private readonly clock: VirtualClock) {}

  @Hedge('catalog', { maxHedgedAttempts: 2 })
  find(): Promise<string> {
    this.started.push(this.clock.now());
    const signal = currentSignal();
    return new Promise((resolve, reject) => {
      this.clock.setTimeout(() => resolve('found'), 1000);
      signal?.addEventListener('abort', () => reject(signal.reason));
    });
  }
}

/** An application of `providers` (the clock among them) on `options`, with neither metrics nor logs. */
async function start(clock: VirtualClock, options: ResilienceModuleOptions, providers: Provider[]) {
  const app = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ clock, metrics: false, logging: false, ...options })],
    providers: [{ provide: VirtualClock, useValue: clock }, ...providers],
  }).compile();
  return app.init();
}

describe('a decorated method after its instance is reconfigured', () => {
  it('runs with the new settings, through the shared instance and through its own', async () => {
    const clock = new VirtualClock();
    const app = await start(
      clock,
      {
        retry: { instances: { inventory: { maxAttempts: 2, waitDuration: 0 } } },
        circuitBreaker: { instances: { inventory: { slidingWindowSize: 10, minimumNumberOfCalls: 10 } } },
      },
      [Inventory],
    );
    const inventory = app.get(Inventory);
    const registry = app.get(ResilienceRegistry);

    await expect(inventory.shared()).rejects.toBeInstanceOf(Unavailable);
    await expect(inventory.own()).rejects.toBeInstanceOf(Unavailable);
    expect(inventory.calls).toBe(4);

    const events = registry.reconfigure('retry', 'inventory', { maxAttempts: 4 });
    registry.reconfigure('circuitBreaker', 'inventory', { minimumNumberOfCalls: 4 });
    expect(events.map((e) => (e.after as { maxAttempts: number }).maxAttempts)).toEqual([4, 4]);

    inventory.calls = 0;
    await expect(inventory.own()).rejects.toBeInstanceOf(Unavailable);
    expect(inventory.calls).toBe(4);
    // Two attempts were recorded before the change: two more reach the new minimum and open the breaker,
    // which refuses the third attempt.
    const refused = await inventory.shared().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Unavailable);
    expect((refused as Error).cause).toBeInstanceOf(CallNotPermittedError);
    expect(inventory.calls).toBe(6);
    expect(registry.circuitBreaker('inventory').state).toBe('OPEN');
    await app.close();
  });
});

describe('a hedged method after its hedge is reconfigured', () => {
  it('hedges after the new delay, its own overrides still applied', async () => {
    const clock = new VirtualClock();
    const app = await start(
      clock,
      { hedging: { instances: { catalog: { delay: '300ms', safe: true, budget: { ratio: 1, maxTokens: 100 } } } } },
      [Catalog],
    );
    const catalog = app.get(Catalog);
    const registry = app.get(ResilienceRegistry);

    const first = catalog.find();
    await clock.advance(1000);
    await first;
    expect(catalog.started).toEqual([0, 300, 600]);

    const events = registry.reconfigure('hedge', 'catalog', { delay: '100ms' });
    // The method's own hedge, made from 'catalog' with its override, is the only one running.
    expect(
      events.map((e) => [e.name, e.changed, (e.after as { maxHedgedAttempts: number }).maxHedgedAttempts]),
    ).toEqual([['catalog', ['delay'], 2]]);
    catalog.started.length = 0;
    const second = catalog.find();
    await clock.advance(1000);
    await second;
    expect(catalog.started).toEqual([1000, 1100, 1200]);
    await app.close();
  });
});
