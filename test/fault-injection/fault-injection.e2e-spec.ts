import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { lastValueFrom, Observable, toArray } from 'rxjs';
import {
  Bulkhead,
  CallNotPermittedError,
  CircuitBreaker,
  Fallback,
  FaultInjectedEvent,
  FaultInjector,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';
import { FAULTS_DISABLED, FAULTS_IN_PRODUCTION } from '../../lib/features/fault-injection/fault-injection.messages';

/** The dependency behind the service: counts the calls that really reached it. */
class Inventory {
  calls = 0;
  subscriptions = 0;
}

@Injectable()
class StockService {
  constructor(readonly inventory: Inventory) {}

  @Fallback(CallNotPermittedError, 'unknownStock')
  @Retry('inventory')
  @CircuitBreaker('inventory')
  @Timeout('inventory')
  @Bulkhead('inventory')
  async stock(sku: string): Promise<unknown> {
    this.inventory.calls++;
    return { sku, available: 7 };
  }

  unknownStock(sku: string): unknown {
    return { sku, available: null };
  }

  @Fallback(Error, 'cachedPrice')
  @CircuitBreaker('pricing')
  async price(): Promise<unknown> {
    this.inventory.calls++;
    return { status: 200, price: 10 };
  }

  cachedPrice(): unknown {
    return { status: 200, price: 9, stale: true };
  }

  @Retry('inventory')
  stream(): Observable<number> {
    return new Observable<number>((subscriber) => {
      this.inventory.subscriptions++;
      subscriber.next(1);
      subscriber.complete();
    });
  }
}

const INSTANCES: ResilienceModuleOptions = {
  retry: { instances: { inventory: { maxAttempts: 3, waitDuration: 100, jitter: 'none' } } },
  circuitBreaker: {
    instances: {
      inventory: { slidingWindowSize: 4, minimumNumberOfCalls: 4, failureRateThreshold: 50 },
      pricing: {
        slidingWindowSize: 2,
        minimumNumberOfCalls: 2,
        recordResult: (value: unknown) => (value as { status?: number }).status === 500,
      },
    },
  },
  timeLimiter: { instances: { inventory: { timeoutDuration: 1000 } } },
  bulkhead: { instances: { inventory: { maxConcurrentCalls: 5 } } },
};

async function boot(faultInjection: ResilienceModuleOptions['faultInjection'], extra: ResilienceModuleOptions = {}) {
  const clock = new VirtualClock();
  const metrics = new Registry();
  const warnings: string[] = [];
  const moduleRef = await Test.createTestingModule({
    imports: [
      ResilienceModule.forRoot({
        clock,
        random: () => 0.25,
        metrics: { registry: metrics },
        logging: false,
        ...INSTANCES,
        faultInjection,
        ...extra,
      }),
    ],
    providers: [StockService, Inventory],
  })
    .setLogger({
      log: () => undefined,
      error: () => undefined,
      warn: (message: unknown) => void warnings.push(String(message)),
    })
    .compile();
  await moduleRef.init();
  const faults = moduleRef.get(FaultInjector);
  const events: FaultInjectedEvent[] = [];
  faults.onFaultInjected((e) => events.push(e));
  return {
    clock,
    metrics,
    warnings,
    moduleRef,
    faults,
    events,
    service: moduleRef.get(StockService),
    inventory: moduleRef.get(Inventory),
    registry: moduleRef.get(ResilienceRegistry),
  };
}

/** Settles `promise` on the virtual clock, advancing in 100 ms steps. */
async function settle<T>(clock: VirtualClock, promise: Promise<T>): Promise<T | Error> {
  let done = false;
  const outcome = promise.then(
    (value) => value,
    (error: Error) => error,
  );
  void outcome.finally(() => (done = true));
  for (let i = 0; i < 100 && !done; i++) await clock.advance(100);
  return outcome;
}

const metricLine = (text: string, name: string, kind: string): string | undefined =>
  text.split('\n').find((l) => l.startsWith(`resilience4nest_injected_faults_total{name="${name}",kind="${kind}"}`));

describe('fault injection through the decorator stack', () => {
  const env = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = env;
  });

  it('is off by default: configured faults do nothing and inject() is refused', async () => {
    const app = await boot(undefined);
    expect(app.faults.enabled).toBe(false);
    expect(() => app.faults.inject('inventory', { error: { rate: 1, error: 'ECONNREFUSED' } })).toThrow(
      FAULTS_DISABLED('inventory'),
    );
    expect(await app.service.stock('a')).toEqual({ sku: 'a', available: 7 });
    expect(app.inventory.calls).toBe(1);
    await app.moduleRef.close();

    const listedButOff = await boot({ instances: { inventory: { error: { rate: 1, error: 503 } } } });
    expect(await listedButOff.service.stock('a')).toEqual({ sku: 'a', available: 7 });
    expect(listedButOff.events).toEqual([]);
    await listedButOff.moduleRef.close();
  });

  it('is refused at startup in production unless allowed, and warns naming the instances while on', async () => {
    process.env.NODE_ENV = 'production';
    const faultInjection = { enabled: true, instances: { inventory: { error: { rate: 1, error: 503 } } } };
    await expect(boot(faultInjection)).rejects.toThrow(FAULTS_IN_PRODUCTION(['inventory'], 'production'));
    const allowed = await boot({ ...faultInjection, allowInProduction: true });
    expect(
      allowed.warnings.filter((w) => w.includes("fault injection is enabled; faults are injected into 'inventory'")),
    ).toHaveLength(1);
    await allowed.moduleRef.close();
  });

  it.each(['Production', ' production', 'PRODUCTION\n', 'prod', 'Prod '])(
    'takes NODE_ENV=%j for production: refused at startup unless allowed',
    async (environment) => {
      process.env.NODE_ENV = environment;
      const faultInjection = { enabled: true, instances: { inventory: { error: { rate: 1, error: 503 } } } };
      await expect(boot(faultInjection)).rejects.toThrow(FAULTS_IN_PRODUCTION(['inventory'], environment));
      const allowed = await boot({ ...faultInjection, allowInProduction: true });
      await allowed.moduleRef.close();
    },
  );

  it.each(['development', 'staging', 'preproduction', 'test'])('starts with NODE_ENV=%j', async (environment) => {
    process.env.NODE_ENV = environment;
    const app = await boot({ enabled: true, instances: { inventory: { error: { rate: 1, error: 503 } } } });
    expect(app.faults.enabled).toBe(true);
    await app.moduleRef.close();
  });

  it('opens the breaker on injected connection errors, which the retry retries and the fallback answers', async () => {
    const app = await boot({ enabled: true, instances: { inventory: { error: { rate: 1, error: 'ECONNREFUSED' } } } });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await settle(app.clock, app.service.stock(`s${i}`)));
    // Call 1: three injected failures; call 2: a fourth opens the breaker and the retry's next attempt is refused.
    expect(app.registry.circuitBreaker('inventory').state).toBe('OPEN');
    expect(answers[0]).toMatchObject({ code: 'ECONNREFUSED' });
    expect(answers[2]).toEqual({ sku: 's2', available: null });
    expect(app.inventory.calls).toBe(0);
    expect(app.events.every((e) => e.type === 'FAULT_INJECTED' && e.name === 'inventory' && e.kind === 'error')).toBe(
      true,
    );
    expect(app.events).toHaveLength(4);
    expect(metricLine(await app.metrics.metrics(), 'inventory', 'error')).toBe(
      'resilience4nest_injected_faults_total{name="inventory",kind="error"} 4',
    );
    await app.moduleRef.close();
  });

  it('fires the timeout on injected latency, and the real call never runs for the abandoned attempt', async () => {
    // The delay ends early on the attempt's signal, which an attempt has outside a request deadline with 'always'.
    const app = await boot({ enabled: true }, { deadline: { attemptContext: 'always' } });
    app.faults.inject('inventory', { latency: { rate: 1, duration: '5s' } });
    const started = app.clock.now();
    const outcome = await settle(app.clock, app.service.stock('a'));
    // Three attempts, each timed out at 1 s, 100 ms apart.
    expect(outcome).toBeInstanceOf(TimeoutExceededError);
    expect(app.clock.now() - started).toBeGreaterThanOrEqual(3200);
    await app.clock.advance(10_000);
    expect(app.inventory.calls).toBe(0);
    expect(app.events.map((e) => [e.kind, e.durationMs])).toEqual([
      ['latency', 5000],
      ['latency', 5000],
      ['latency', 5000],
    ]);
    await app.moduleRef.close();
  });

  it('serves injected outcomes to the caller, and the breaker and fallback react to them as to real ones', async () => {
    const app = await boot({ enabled: true });
    app.faults.inject('pricing', { outcome: { rate: 1, value: { status: 500 } } });
    expect(await app.service.price()).toEqual({ status: 500 });
    expect(await app.service.price()).toEqual({ status: 500 });
    // recordResult counted both as failures: the breaker is open and the fallback answers the refusal.
    expect(app.registry.circuitBreaker('pricing').state).toBe('OPEN');
    expect(await app.service.price()).toEqual({ status: 200, price: 9, stale: true });
    app.faults.clear('pricing');
    app.faults.inject('StockService.price', { error: { rate: 1, error: 503 } });
    app.registry.circuitBreaker('pricing').transitionToClosedState();
    expect(await app.service.price()).toEqual({ status: 200, price: 9, stale: true });
    expect(app.inventory.calls).toBe(0);
    await app.moduleRef.close();
  });

  it('injects at the configured rate, from the module random source', async () => {
    const draws = [0.1, 0.9, 0.4, 0.6];
    let i = 0;
    const app = await boot(
      { enabled: true, instances: { pricing: { error: { rate: 0.5, error: 'IOException' } } } },
      { random: () => draws[i++ % draws.length] },
    );
    // Out of the way, so only the injected faults decide.
    app.registry.circuitBreaker('pricing').transitionToDisabledState();
    const answers = [];
    for (let c = 0; c < 4; c++) answers.push(await app.service.price());
    expect(answers.map((a) => (a as { stale?: boolean }).stale === true)).toEqual([true, false, true, false]);
    expect(app.inventory.calls).toBe(2);
    await app.moduleRef.close();
  });

  it('turns a fault off after its "for" duration, lists active faults, and clears them all', async () => {
    const app = await boot({ enabled: true });
    app.faults.inject('pricing', { error: { rate: 1, error: 503 } }, { for: '30s' });
    app.faults.inject('inventory', { latency: { rate: 0.5, duration: 200 } });
    expect(app.faults.active()).toEqual([
      { name: 'pricing', error: { rate: 1, error: 503 }, remainingMs: 30_000 },
      { name: 'inventory', latency: { rate: 0.5, duration: 200 } },
    ]);
    expect(await app.service.price()).toMatchObject({ stale: true });
    await app.clock.advance(30_000);
    expect(await app.service.price()).toEqual({ status: 200, price: 10 });
    app.faults.clear();
    expect(app.faults.active()).toEqual([]);
    expect(() => app.faults.inject('x', { error: { rate: 2, error: 503 } })).toThrow(
      "invalid configuration of fault for 'x' 'error': key 'rate' must be a rate in [0, 1], got 2",
    );
    await app.moduleRef.close();
  });

  it('injects into each subscription of an Observable method, and the retry re-subscribes', async () => {
    const draws = [0, 0, 0.9];
    let i = 0;
    const app = await boot({ enabled: true }, { random: () => draws[i++] ?? 0.9 });
    app.faults.inject('inventory', { error: { rate: 0.5, error: 'ECONNRESET' } });
    const values = lastValueFrom(app.service.stream().pipe(toArray()));
    await settle(app.clock, values);
    expect(await values).toEqual([1]);
    expect(app.inventory.subscriptions).toBe(1);
    expect(app.events.map((e) => e.kind)).toEqual(['error', 'error']);
    await app.moduleRef.close();
  });
});
