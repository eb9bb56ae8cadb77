import { Controller, Injectable, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
import {
  Bulkhead,
  CircuitBreaker,
  currentSignal,
  Hedge,
  Idempotent,
  PostgresIdempotencyStore,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
  VirtualClock,
} from '../../lib';
import { HEDGE_KEY_OPTIONAL, HEDGE_NOT_SAFE, HEDGE_ON_TRANSACTION } from '../../lib/policies/hedge/hedge.messages';

class Unavailable extends Error {
  readonly status = 503;
}

/** A backend whose n-th call answers after `plan[n-1]` ms (an Error entry fails then), and stops when its signal aborts. */
@Injectable()
class Backend {
  plan: Array<number | [number, Error]> = [];
  readonly started: number[] = [];
  readonly signals: Array<AbortSignal | undefined> = [];

  constructor(private readonly clock: VirtualClock) {}

  fetch(): Promise<number> {
    const n = this.started.length + 1;
    const signal = currentSignal();
    this.started.push(this.clock.now());
    this.signals.push(signal);
    const step = this.plan[n - 1] ?? 0;
    const [ms, error] = Array.isArray(step) ? step : [step, undefined];
    return new Promise<number>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => (error === undefined ? resolve(n) : reject(error)), ms);
      signal?.addEventListener('abort', () => {
        this.clock.clearTimeout(timer);
        reject(signal.reason);
      });
    });
  }
}

@Injectable()
class Catalog {
  constructor(readonly backend: Backend) {}

  @Retry('catalog')
  @Hedge('catalog')
  @CircuitBreaker('catalog')
  @Bulkhead('catalog')
  async product(): Promise<number> {
    return this.backend.fetch();
  }
}

const OPTIONS: ResilienceModuleOptions = {
  retry: { instances: { catalog: { maxAttempts: 2, waitDuration: 0 } } },
  hedging: { instances: { catalog: { delay: '100ms', safe: true } } },
  circuitBreaker: { instances: { catalog: { slidingWindowSize: 10, minimumNumberOfCalls: 10 } } },
  bulkhead: { instances: { catalog: { maxConcurrentCalls: 5 } } },
};

async function boot(providers: unknown[], options: ResilienceModuleOptions = OPTIONS) {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ clock, random: () => 0, metrics: false, ...options })],
    providers: [{ provide: VirtualClock, useValue: clock }, Backend, ...(providers as never[])],
  }).compile();
  moduleRef.useLogger(false);
  return { moduleRef: await moduleRef.init(), clock };
}

describe('@Hedge', () => {
  describe('safe to repeat', () => {
    it('fails bootstrap on a method neither @Idempotent nor declared safe', async () => {
      @Injectable()
      class Payments {
        @Hedge('psp')
        async charge(): Promise<void> {}
      }
      await expect(boot([Payments], {})).rejects.toThrow(HEDGE_NOT_SAFE('Payments.charge', 'psp'));
    });

    it('fails bootstrap on a method with a private hedge that is not safe', async () => {
      @Injectable()
      class Payments {
        @Hedge()
        async charge(): Promise<void> {}
      }
      await expect(boot([Payments], {})).rejects.toThrow(HEDGE_NOT_SAFE('Payments.charge', 'Payments.charge'));
    });

    it('fails bootstrap on a POST route whose @Idempotent lets a request without a key through', async () => {
      @Controller('payments')
      class PaymentsController {
        @Post()
        @Idempotent({ required: false, principal: 'shared' })
        @Hedge('psp')
        async charge(): Promise<void> {}
      }
      const clock = new VirtualClock();
      const moduleRef = await Test.createTestingModule({
        imports: [ResilienceModule.forRoot({ clock, metrics: false })],
        controllers: [PaymentsController],
      }).compile();
      moduleRef.useLogger(false);
      await expect(moduleRef.init()).rejects.toThrow(HEDGE_KEY_OPTIONAL('PaymentsController.charge', 'psp'));
    });

    it('fails bootstrap on a handler whose @Idempotent runs a call without a key unprotected', async () => {
      @Injectable()
      class Handlers {
        @Idempotent({ required: false, key: (id?: string) => id })
        @Hedge()
        async onEvent(id?: string): Promise<string | undefined> {
          return id;
        }
      }
      await expect(boot([Handlers], {})).rejects.toThrow(HEDGE_KEY_OPTIONAL('Handlers.onEvent', 'Handlers.onEvent'));
    });

    it('accepts an optional key when the hedge instance says safe: true', async () => {
      @Injectable()
      class Handlers {
        @Idempotent({ required: false, key: (id?: string) => id })
        @Hedge('events', { safe: true })
        async onEvent(id?: string): Promise<string | undefined> {
          return id;
        }
      }
      const { moduleRef } = await boot([Handlers], {});
      await expect(moduleRef.get(Handlers).onEvent()).resolves.toBeUndefined();
      await moduleRef.close();
    });

    it('fails bootstrap on a transactional @Idempotent method: its copies would share one transaction', async () => {
      @Injectable()
      class Ledger {
        @Idempotent({ key: (id: string) => id, transactional: true })
        @Hedge('ledger', { safe: true })
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
      expect(HEDGE_ON_TRANSACTION('Ledger.record', 'ledger')).toMatch(
        /@Hedge on Ledger.record .*transactional: true.*one transaction.*both copies' writes would commit/,
      );
    });

    it('accepts a method with @Idempotent, and one whose instance (or override) says safe: true', async () => {
      @Injectable()
      class Handlers {
        @Idempotent({ key: (id: string) => id })
        @Hedge('events')
        async onEvent(id: string): Promise<string> {
          return id;
        }

        @Hedge('reads', { safe: true })
        async read(): Promise<number> {
          return 1;
        }
      }
      const { moduleRef } = await boot([Handlers], {});
      await expect(moduleRef.get(Handlers).onEvent('e-1')).resolves.toBe('e-1');
      await expect(moduleRef.get(Handlers).read()).resolves.toBe(1);
      await moduleRef.close();
    });
  });

  it('takes the first answer and aborts the slower attempt through its currentSignal()', async () => {
    const { moduleRef, clock } = await boot([Catalog]);
    const catalog = moduleRef.get(Catalog);
    catalog.backend.plan = [1000, 30];
    const call = catalog.product();
    await clock.advance(130);
    await expect(call).resolves.toBe(2);
    expect(catalog.backend.started).toEqual([0, 100]);
    expect(catalog.backend.signals[0]?.aborted).toBe(true);
    expect(moduleRef.get(ResilienceRegistry).hedge('catalog').metrics).toMatchObject({ hedged: 1, winner: 1 });
    await moduleRef.close();
  });

  describe('composition: Retry → Hedge → CircuitBreaker → Bulkhead', () => {
    it('each hedge is a breaker call; an attempt cancelled by the winner is not recorded as a failure', async () => {
      const { moduleRef, clock } = await boot([Catalog]);
      const catalog = moduleRef.get(Catalog);
      const breaker = moduleRef.get(ResilienceRegistry).circuitBreaker('catalog');
      catalog.backend.plan = [1000, 30];
      const call = catalog.product();
      await clock.advance(200);
      await call;
      expect(breaker.metrics).toMatchObject({ numberOfSuccessfulCalls: 1, numberOfFailedCalls: 0 });
      catalog.backend.plan.push([150, new Unavailable('a')], [10, new Unavailable('b')], 10, 10);
      const failing = catalog.product();
      await clock.advance(1000);
      await failing;
      // Both attempts of the second call failed (two breaker calls), then the retry's attempt succeeded.
      expect(breaker.metrics).toMatchObject({ numberOfSuccessfulCalls: 2, numberOfFailedCalls: 2 });
      await moduleRef.close();
    });

    it('the retry retries the whole hedged call', async () => {
      const { moduleRef, clock } = await boot([Catalog]);
      const catalog = moduleRef.get(Catalog);
      catalog.backend.plan = [[150, new Unavailable('a')], [10, new Unavailable('b')], 5];
      const call = catalog.product();
      await clock.advance(1000);
      await expect(call).resolves.toBe(3);
      expect(catalog.backend.started).toEqual([0, 100, 150]);
      expect(moduleRef.get(ResilienceRegistry).retry('catalog').metrics.successfulCallsWithRetry).toBe(1);
      await moduleRef.close();
    });

    it('each hedge takes a bulkhead permit, given back when its attempt ends', async () => {
      const { moduleRef, clock } = await boot([Catalog]);
      const catalog = moduleRef.get(Catalog);
      const bulkhead = moduleRef.get(ResilienceRegistry).bulkhead('catalog');
      catalog.backend.plan = [300, 100];
      const call = catalog.product();
      await clock.advance(50);
      expect(bulkhead.metrics.availableConcurrentCalls).toBe(4);
      await clock.advance(100);
      expect(bulkhead.metrics.availableConcurrentCalls).toBe(3);
      await clock.advance(100);
      await expect(call).resolves.toBe(2);
      expect(bulkhead.metrics.availableConcurrentCalls).toBe(5);
      await moduleRef.close();
    });

    it('a hedge the bulkhead refuses leaves the first attempt running', async () => {
      const { moduleRef, clock } = await boot([Catalog], {
        ...OPTIONS,
        bulkhead: { instances: { catalog: { maxConcurrentCalls: 1 } } },
      });
      const catalog = moduleRef.get(Catalog);
      catalog.backend.plan = [300];
      const call = catalog.product();
      await clock.advance(1000);
      await expect(call).resolves.toBe(1);
      expect(catalog.backend.started).toEqual([0]);
      expect(moduleRef.get(ResilienceRegistry).bulkhead('catalog').metrics.availableConcurrentCalls).toBe(1);
      await moduleRef.close();
    });
  });

  it('@Idempotent outermost: the key is claimed once, the copies run inside the claim, a repeat replays the winner', async () => {
    @Injectable()
    class Reservations {
      constructor(readonly backend: Backend) {}

      @Idempotent({ key: (id: string) => id })
      @Hedge('reservations', { delay: 100 })
      async reserve(id: string): Promise<string> {
        return `${id}: copy ${await this.backend.fetch()}`;
      }
    }
    const { moduleRef, clock } = await boot([Reservations], {});
    const reservations = moduleRef.get(Reservations);
    reservations.backend.plan = [1000, 30];
    const first = reservations.reserve('r-1');
    await clock.advance(200);
    await expect(first).resolves.toBe('r-1: copy 2');
    await expect(reservations.reserve('r-1')).resolves.toBe('r-1: copy 2');
    expect(reservations.backend.started).toHaveLength(2);
    await moduleRef.close();
  });

  it('counts resilience4nest_hedge_calls_total by kind', async () => {
    const registry = new Registry();
    const { moduleRef, clock } = await boot([Catalog], { ...OPTIONS, metrics: { registry } });
    const catalog = moduleRef.get(Catalog);
    catalog.backend.plan = [1000, 30];
    const call = catalog.product();
    await clock.advance(200);
    await call;
    const text = await registry.metrics();
    expect(text).toContain('resilience4nest_hedge_calls_total{name="catalog",kind="hedged"} 1');
    expect(text).toContain('resilience4nest_hedge_calls_total{name="catalog",kind="winner"} 1');
    expect(text).toContain('resilience4nest_hedge_calls_total{name="catalog",kind="cancelled"} 1');
    await moduleRef.close();
  });

  describe('config', () => {
    it.each([
      [{ delay: 'p101' }, "hedging instance 'x'", 'delay'],
      [{ delay: -5 }, "hedging instance 'x'", 'delay'],
      [{ maxHedgedAttempts: 0 }, "hedging instance 'x'", 'maxHedgedAttempts'],
      [{ budget: { ratio: 2, maxTokens: 1 } }, "hedging instance 'x'", 'budget.ratio'],
      [{ 'max-hedged-attempts': 'two' }, "hedging instance 'x'", 'max-hedged-attempts'],
      [{ dealy: 100 }, "hedging instance 'x'", 'dealy'],
    ])('refuses %j naming the instance and the key', (settings, place, key) => {
      expect(() => new ResilienceRegistry({ hedging: { instances: { x: settings as never } } })).toThrow(
        new RegExp(`${place}.*'${key.replace('.', '\\.')}'|${place}.*${key}`),
      );
    });

    it('reads kebab-case keys, durations as text and percentiles', () => {
      const registry = new ResilienceRegistry({
        hedging: {
          configs: { default: { delay: 'P99', 'max-hedged-attempts': '2' } },
          instances: { a: {}, b: { delay: '250ms', safe: 'true' } },
        },
      } as never);
      expect(registry.hedge('a').config).toMatchObject({ delay: 'p99', maxHedgedAttempts: 2, safe: false });
      expect(registry.hedge('b').config).toMatchObject({ delay: 250, maxHedgedAttempts: 2, safe: true });
    });
  });
});
