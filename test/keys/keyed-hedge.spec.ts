import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Pool } from 'pg';
import { lastValueFrom, Observable } from 'rxjs';
import { Registry } from 'prom-client';
import {
  Hedge,
  HedgeEvent,
  HedgePolicy,
  Idempotent,
  PostgresIdempotencyStore,
  ResilienceMetricsBinding,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  VirtualClock,
} from '../../lib';
import { HEDGE_NOT_SAFE, HEDGE_ON_TRANSACTION } from '../../lib/policies/hedge/hedge.messages';

/** A hedge `h` at the median of its last 10 latencies (known after two), its own budget: 2 tokens to start, 0.1 per success. */
function registryOf(clock: VirtualClock, options: ResilienceModuleOptions = {}): ResilienceRegistry {
  return new ResilienceRegistry({
    clock,
    hedging: {
      instances: {
        h: { delay: 'p50', latencyWindowSize: 10, safe: true, budget: { ratio: 0.1, maxTokens: 4 } },
      },
      ...options.hedging,
    },
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  });
}

/** Runs `hedge` over a call that answers after `ms`, each attempt counted in `started`; resolves once it answered. */
async function callTaking(clock: VirtualClock, hedge: HedgePolicy, ms: number, started: number[] = []): Promise<void> {
  const call = hedge.execute(
    () =>
      new Promise<number>((resolve) => {
        started.push(clock.now());
        clock.setTimeout(() => resolve(ms), ms);
      }),
  );
  await clock.runUntilSettled(call);
  await call;
}

describe('registry.hedge(name, { key })', () => {
  it("keeps a latency window and a budget per key: a slow key's delay and hedges leave the other key's alone", async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock);
    const slow = registry.hedge('h', { key: 'slow' });
    const fast = registry.hedge('h', { key: 'fast' });
    expect(slow).not.toBe(fast);
    expect(registry.hedge('h', { key: 'slow' })).toBe(slow);
    for (let i = 0; i < 2; i++) {
      await callTaking(clock, slow, 100);
      await callTaking(clock, fast, 10);
    }
    expect([slow.currentDelay, fast.currentDelay, registry.hedge('h').currentDelay]).toEqual([100, 10, Infinity]);
    expect([slow.budgetTokens, fast.budgetTokens]).toEqual([2.2, 2.2]);

    const hedges: HedgeEvent[] = [];
    fast.onHedge((event) => hedges.push(event));
    slow.onHedge((event) => hedges.push(event));
    const fastStarts: number[] = [];
    const slowStarts: number[] = [];
    await callTaking(clock, fast, 50, fastStarts);
    await callTaking(clock, slow, 50, slowStarts);
    expect(fastStarts.map((at) => at - fastStarts[0])).toEqual([0, 10]);
    expect(slowStarts).toHaveLength(1);
    expect(hedges).toEqual([{ name: 'h', key: 'fast', attempt: 2, waitedMs: 10 }]);
    expect(fast.metrics).toEqual({ hedged: 1, winner: 0, cancelled: 1, budgetDenied: 0 });
    expect(slow.metrics).toEqual({ hedged: 0, winner: 0, cancelled: 0, budgetDenied: 0 });
    expect([fast.budgetTokens, slow.budgetTokens]).toEqual([1.3, 2.3]);
    expect(registry.hedge('h').metrics.hedged).toBe(0);
  });

  it('denies hedges of a key whose budget is spent while another key still hedges', async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock, { hedging: { instances: { h: { delay: '10ms', safe: true } } } });
    const spent = registry.hedge('h', { key: 'spent' });
    const other = registry.hedge('h', { key: 'other' });
    const denied: object[] = [];
    spent.onBudgetDenied((event) => denied.push(event));
    for (let i = 0; i < 6; i++) await callTaking(clock, spent, 50);
    expect(spent.metrics).toMatchObject({ hedged: 5, budgetDenied: 1 });
    expect(denied).toEqual([{ name: 'h', key: 'spent', attempt: 2 }]);
    const starts: number[] = [];
    await callTaking(clock, other, 50, starts);
    expect(starts).toEqual([starts[0], starts[0] + 10]);
    expect(other.metrics).toMatchObject({ hedged: 1, budgetDenied: 0 });
  });

  it('draws, per key, from the same key of the retry instance its budget names', async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock, {
      retry: { instances: { inventory: { maxAttempts: 2, waitDuration: 0, budget: { ratio: 0.5, maxTokens: 10 } } } },
      hedging: { instances: { inventory: { delay: '10ms', budget: 'inventory', safe: true } } },
    });
    const hedge = registry.hedge('inventory', { key: 'a' });
    expect(hedge.budgetTokens).toBe(5);
    await callTaking(clock, hedge, 50);
    expect(registry.retry('inventory', { key: 'a' }).budgetTokens).toBe(4);
    expect(registry.retry('inventory', { key: 'b' }).budgetTokens).toBe(5);
    expect(registry.retry('inventory').budgetTokens).toBe(5);
    await registry.retry('inventory', { key: 'a' }).execute(() => 'ok');
    expect(hedge.budgetTokens).toBe(4.5);
  });

  it('evicts the least recently used key past keys.max, and an idle key after keys.idleTimeout', async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock, { hedging: { keys: { max: 2, idleTimeout: '1m' } } });
    const a = registry.hedge('h', { key: 'a' });
    for (let i = 0; i < 2; i++) await callTaking(clock, a, 100);
    expect(a.currentDelay).toBe(100);
    const b = registry.hedge('h', { key: 'b' });
    const c = registry.hedge('h', { key: 'c' });
    const remade = registry.hedge('h', { key: 'a' });
    expect(remade).not.toBe(a);
    expect(remade.currentDelay).toBe(Infinity);
    expect(registry.hedge('h', { key: 'c' })).toBe(c);
    expect(registry.hedge('h', { key: 'b' })).not.toBe(b);
    await clock.advance(60_000);
    expect(registry.hedge('h', { key: 'a' })).not.toBe(remade);
  });

  it("announces each hedge it makes, named, a method's own and each key's, to onHedgeCreated", () => {
    const registry = registryOf(new VirtualClock());
    const made: HedgePolicy[] = [];
    const stop = registry.onHedgeCreated((hedge) => made.push(hedge));
    const a = registry.hedge('h', { key: 'a' });
    expect(registry.hedge('h', { key: 'a' })).toBe(a);
    const b = registry.hedge('h', { key: 'b' });
    const own = registry.deriveHedge('h', { maxHedgedAttempts: 2 }, "@Hedge('h') on Shop.list", '@Hedge on Shop.list');
    stop();
    registry.hedge('h', { key: 'c' });
    expect(made.map((hedge) => [hedge.name, hedge.key])).toEqual([
      ['h', undefined],
      ['h', 'a'],
      ['h', 'b'],
      ['h', undefined],
    ]);
    expect(made.map((hedge) => [registry.hedge('h'), a, b, own].indexOf(hedge))).toEqual([0, 1, 2, 3]);
  });
});

describe('registry.pipeline(…, { key }) with a hedge', () => {
  it('hedges each key with its own instance of the hedge', async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock);
    const perRegion = registry.pipeline({ hedge: 'h' }, { key: (region: string) => region });
    const run = async (region: string, ms: number, started: number[] = []): Promise<void> => {
      const call = perRegion.execute(
        () =>
          new Promise<number>((resolve) => {
            started.push(clock.now());
            clock.setTimeout(() => resolve(ms), ms);
          }),
        { args: [region] },
      );
      await clock.runUntilSettled(call);
      await call;
    };
    for (let i = 0; i < 2; i++) {
      await run('eu', 100);
      await run('us', 10);
    }
    expect(registry.hedge('h', { key: 'eu' }).currentDelay).toBe(100);
    expect(registry.hedge('h', { key: 'us' }).currentDelay).toBe(10);
    expect(registry.hedge('h').currentDelay).toBe(Infinity);
    const starts: number[] = [];
    await run('us', 50, starts);
    expect(starts.map((at) => at - starts[0])).toEqual([0, 10]);
    expect(registry.hedge('h', { key: 'eu' }).metrics.hedged).toBe(0);
  });
});

describe('the metrics of hedges used per key', () => {
  /** The samples of resilience4nest_hedge_calls_total of kind `kind`. */
  async function hedged(prom: Registry, kind = 'hedged'): Promise<string[]> {
    return (await prom.metrics())
      .split('\n')
      .filter((line) => line.startsWith('resilience4nest_hedge_calls_total{') && line.includes(`kind="${kind}"`));
  }

  it('add every key into the name series; with perKey, the most used keys and key="other"; evicted keys stay counted', async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock, {
      hedging: { keys: { max: 3 }, instances: { h: { delay: '10ms', safe: true } } },
    });
    const prom = new Registry();
    const binding = new ResilienceMetricsBinding(registry, { registry: prom, perKey: true, perKeySeries: 1 });
    const uses: Record<string, number> = { hot: 3, warm: 2, cold: 1 };
    for (const [key, n] of Object.entries(uses))
      for (let i = 0; i < n; i++) await callTaking(clock, registry.hedge('h', { key }), 50);
    expect(await hedged(prom)).toEqual([
      'resilience4nest_hedge_calls_total{name="h",kind="hedged"} 6',
      'resilience4nest_hedge_calls_total{name="h",kind="hedged",key="hot"} 3',
      'resilience4nest_hedge_calls_total{name="h",kind="hedged",key="other"} 3',
    ]);
    // Past keys.max the least recently used key, `hot`, is evicted: its hedges move to key="other".
    await callTaking(clock, registry.hedge('h', { key: 'new' }), 50);
    expect((await hedged(prom)).sort()).toEqual([
      'resilience4nest_hedge_calls_total{name="h",kind="hedged",key="other"} 5',
      'resilience4nest_hedge_calls_total{name="h",kind="hedged",key="warm"} 2',
      'resilience4nest_hedge_calls_total{name="h",kind="hedged"} 7',
    ]);
    binding.close();
  });

  it('label no key without perKey', async () => {
    const clock = new VirtualClock();
    const registry = registryOf(clock, { hedging: { instances: { h: { delay: '10ms', safe: true } } } });
    const prom = new Registry();
    const binding = new ResilienceMetricsBinding(registry, { registry: prom });
    for (const key of ['a', 'b']) await callTaking(clock, registry.hedge('h', { key }), 50);
    expect(await hedged(prom)).toEqual(['resilience4nest_hedge_calls_total{name="h",kind="hedged"} 2']);
    binding.close();
  });

  it("count a hedge made after the binding started, a method's own hedge of its name and each of its keys", async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      hedging: { configs: { default: { delay: '10ms', safe: true } } },
    });
    const prom = new Registry();
    const binding = new ResilienceMetricsBinding(registry, { registry: prom, perKey: true, perKeySeries: 1 });
    await callTaking(clock, registry.hedge('late'), 50);
    const own = registry.deriveHedge('late', { latencyWindowSize: 20 }, "@Hedge('late') on Shop", '@Hedge on Shop');
    await callTaking(clock, own, 50);
    const uses: Record<string, number> = { hot: 3, cold: 1 };
    for (const [key, n] of Object.entries(uses))
      for (let i = 0; i < n; i++) await callTaking(clock, registry.hedge('late', { key }), 50);
    expect(await hedged(prom)).toEqual([
      'resilience4nest_hedge_calls_total{name="late",kind="hedged"} 6',
      'resilience4nest_hedge_calls_total{name="late",kind="hedged",key="hot"} 3',
      'resilience4nest_hedge_calls_total{name="late",kind="hedged",key="other"} 1',
    ]);
    binding.close();
  });

  it('count an undeclared hedge evicted when idle once, under its name alone', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      hedging: { keys: { idleTimeout: '1m' }, configs: { default: { delay: '10ms', safe: true } } },
    });
    const prom = new Registry();
    const binding = new ResilienceMetricsBinding(registry, { registry: prom, perKey: true });
    const idle = registry.hedge('idle');
    await callTaking(clock, idle, 50);
    await clock.advance(120_000);
    expect(registry.hedge('idle')).not.toBe(idle);
    expect(await hedged(prom)).toEqual(['resilience4nest_hedge_calls_total{name="idle",kind="hedged"} 1']);
    binding.close();
  });
});

/** A backend per region: `eu` answers after 100 ms, `us` after 10 ms unless told otherwise. */
@Injectable()
class Backend {
  readonly started: Array<[string, number]> = [];
  latency: Record<string, number> = { eu: 100, us: 10 };

  constructor(private readonly clock: VirtualClock) {}

  fetch(region: string): Promise<string> {
    this.started.push([region, this.clock.now()]);
    return new Promise((resolve) => this.clock.setTimeout(() => resolve(region), this.latency[region]));
  }
}

const byRegion = (region: string): string => region;

@Injectable()
class Catalog {
  constructor(readonly backend: Backend) {}

  @Hedge('catalog', { key: byRegion })
  async product(region: string): Promise<string> {
    return this.backend.fetch(region);
  }
}

async function boot(providers: unknown[], options: ResilienceModuleOptions) {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ clock, metrics: false, ...options })],
    providers: [{ provide: VirtualClock, useValue: clock }, Backend, ...(providers as never[])],
  }).compile();
  moduleRef.useLogger(false);
  return { moduleRef: await moduleRef.init(), clock };
}

describe('@Hedge(name, { key })', () => {
  it("hedges each key of the method's arguments with its own window; events carry the key", async () => {
    const { moduleRef, clock } = await boot([Catalog], {
      hedging: { instances: { catalog: { delay: 'p50', latencyWindowSize: 10, safe: true } } },
    });
    const catalog = moduleRef.get(Catalog);
    const registry = moduleRef.get(ResilienceRegistry);
    for (let i = 0; i < 2; i++) for (const region of ['eu', 'us']) await clock.runUntilSettled(catalog.product(region));
    expect(registry.hedge('catalog', { key: 'eu' }).currentDelay).toBe(100);
    expect(registry.hedge('catalog', { key: 'us' }).currentDelay).toBe(10);
    expect(registry.hedge('catalog').currentDelay).toBe(Infinity);

    const events: HedgeEvent[] = [];
    registry.hedge('catalog', { key: 'us' }).onHedge((event) => events.push(event));
    catalog.backend.latency.us = 50;
    catalog.backend.started.length = 0;
    await expect(clock.runUntilSettled(catalog.product('us'))).resolves.toBe('us');
    expect(catalog.backend.started).toEqual([
      ['us', catalog.backend.started[0][1]],
      ['us', catalog.backend.started[0][1] + 10],
    ]);
    expect(events).toEqual([{ name: 'catalog', key: 'us', attempt: 2, waitedMs: 10 }]);
    expect(registry.hedge('catalog', { key: 'eu' }).metrics.hedged).toBe(0);
    await moduleRef.close();
  });

  it("keys a method's own hedge (no name, overrides): one key's spent budget leaves the other key hedging", async () => {
    @Injectable()
    class Regions {
      constructor(readonly backend: Backend) {}

      @Hedge(undefined, { delay: '10ms', safe: true, budget: { ratio: 0.1, maxTokens: 2 }, key: byRegion })
      async product(region: string): Promise<string> {
        return this.backend.fetch(region);
      }
    }
    const { moduleRef, clock } = await boot([Regions], {});
    const regions = moduleRef.get(Regions);
    regions.backend.latency = { eu: 50, us: 50 };
    for (const region of ['eu', 'eu', 'us']) await clock.runUntilSettled(regions.product(region));
    const offsets = regions.backend.started.map(([region, at]) => [region, at - regions.backend.started[0][1]]);
    // One token each to start: eu hedges once and then has 0.1 left; us still has its own.
    expect(offsets).toEqual([
      ['eu', 0],
      ['eu', 10],
      ['eu', 50],
      ['us', 100],
      ['us', 110],
    ]);
    await moduleRef.close();
  });

  it('keys each subscription of an Observable method', async () => {
    @Injectable()
    class Feeds {
      constructor(
        readonly backend: Backend,
        private readonly clock: VirtualClock,
      ) {}

      @Hedge('feed', { key: byRegion })
      quote(region: string): Observable<string> {
        return new Observable<string>((subscriber) => {
          this.backend.started.push([region, this.clock.now()]);
          const timer = this.clock.setTimeout(() => {
            subscriber.next(region);
            subscriber.complete();
          }, this.backend.latency[region]);
          return () => this.clock.clearTimeout(timer);
        });
      }
    }
    const { moduleRef, clock } = await boot([Feeds], {
      hedging: { instances: { feed: { delay: '10ms', safe: true, budget: { ratio: 0.1, maxTokens: 2 } } } },
    });
    const feeds = moduleRef.get(Feeds);
    feeds.backend.latency = { eu: 50, us: 50 };
    for (const region of ['eu', 'eu', 'us'])
      await expect(clock.runUntilSettled(lastValueFrom(feeds.quote(region)))).resolves.toBe(region);
    const offsets = feeds.backend.started.map(([region, at]) => [region, at - feeds.backend.started[0][1]]);
    expect(offsets).toEqual([
      ['eu', 0],
      ['eu', 10],
      ['eu', 50],
      ['us', 100],
      ['us', 110],
    ]);
    const registry = moduleRef.get(ResilienceRegistry);
    expect(registry.hedge('feed', { key: 'eu' }).metrics).toMatchObject({ hedged: 1, budgetDenied: 1 });
    expect(registry.hedge('feed', { key: 'us' }).metrics).toMatchObject({ hedged: 1, budgetDenied: 0 });
    await moduleRef.close();
  });

  it('is refused on a method not safe to repeat, with or without key', async () => {
    @Injectable()
    class Payments {
      @Hedge('psp', { key: byRegion })
      async charge(region: string): Promise<string> {
        return region;
      }
    }
    await expect(boot([Payments], {})).rejects.toThrow(HEDGE_NOT_SAFE('Payments.charge', 'psp'));
  });

  it('is refused on a transactional @Idempotent method, with or without key', async () => {
    @Injectable()
    class Ledger {
      @Idempotent({ key: (id: string) => id, transactional: true })
      @Hedge('ledger', { safe: true, key: (id: string) => id })
      async record(id: string): Promise<string> {
        return id;
      }
    }
    // Never connected: bootstrap is refused before any statement.
    const pool = new Pool({ host: '127.0.0.1', port: 1 });
    await expect(
      boot([Ledger], { idempotency: { store: new PostgresIdempotencyStore({ pool, createSchema: false }) } }),
    ).rejects.toThrow(HEDGE_ON_TRANSACTION('Ledger.record', 'ledger'));
    await pool.end();
  });
});
