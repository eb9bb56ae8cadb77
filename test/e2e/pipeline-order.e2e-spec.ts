import { Injectable } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import {
  Bulkhead,
  CircuitBreaker,
  DEFAULT_ORDER,
  Fallback,
  PolicyKind,
  RateLimiter,
  ResilienceModule,
  ResilienceRegistry,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';

/*
 * The explorer runs a method's standard layers as one fused pipeline when
 * they sit in the order that pipeline implements, and nests each policy's
 * `call` otherwise. Which order that is must follow from the order's
 * contents, never from the array's identity.
 */

class Unavailable extends Error {
  readonly status = 503;
}

/** What each call of the method does, in turn: answer, fail, or hang past the time limit. */
type Step = 'ok' | 'fail' | 'hang';

@Injectable()
class Inventory {
  script: Step[] = [];
  calls = 0;
  constructor(private readonly clock: VirtualClock) {}

  @Fallback(TimeoutExceededError, 'stale')
  @Retry('inventory')
  @CircuitBreaker('inventory')
  @RateLimiter('inventory')
  @Timeout(100)
  @Bulkhead('inventory')
  async stock(sku: string): Promise<string> {
    const step = this.script[this.calls++] ?? 'ok';
    if (step === 'hang') await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 250));
    if (step === 'fail') throw new Unavailable(`no stock for ${sku}`);
    return `${sku}:${this.calls}`;
  }

  stale(sku: string): string {
    return `${sku}:stale`;
  }
}

/** Only retry and the time limit: the shape the fused pipeline runs under any order that keeps retry outside. */
@Injectable()
class Prices {
  calls = 0;

  @Retry('inventory')
  @Timeout(100)
  async price(): Promise<number> {
    return ++this.calls;
  }
}

async function boot(order?: readonly PolicyKind[]): Promise<{ moduleRef: TestingModule; clock: VirtualClock }> {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    imports: [
      ResilienceModule.forRoot({
        clock,
        random: () => 0,
        ...(order === undefined ? {} : { order }),
        metrics: false,
        logging: false,
        retry: { instances: { inventory: { maxAttempts: 3, waitDuration: 10 } } },
        circuitBreaker: {
          instances: {
            inventory: {
              slidingWindowSize: 4,
              minimumNumberOfCalls: 4,
              failureRateThreshold: 50,
              waitDurationInOpenState: 1500,
              permittedNumberOfCallsInHalfOpenState: 1,
            },
          },
        },
        rateLimiter: { instances: { inventory: { limitForPeriod: 5, limitRefreshPeriod: 1000, timeoutDuration: 0 } } },
        bulkhead: { instances: { inventory: { maxConcurrentCalls: 2, maxWaitDuration: 0 } } },
      }),
    ],
    providers: [{ provide: VirtualClock, useValue: clock }, Inventory, Prices],
  }).compile();
  moduleRef.useLogger(false);
  return { moduleRef: await moduleRef.init(), clock };
}

/** Every event of the method's policies, in the order they were emitted. */
function journal(registry: ResilienceRegistry): string[] {
  const events: string[] = [];
  const retry = registry.retry('inventory');
  const breaker = registry.circuitBreaker('inventory');
  const limiter = registry.rateLimiter('inventory');
  const bulkhead = registry.bulkhead('inventory');
  retry.onRetry((e) => events.push(`retry attempt=${e.attempt} wait=${e.waitMs}`));
  retry.onSuccess((e) => events.push(`retry success attempts=${e.attempts}`));
  retry.onError((e) => events.push(`retry error attempts=${e.attempts}`));
  breaker.onStateTransition((e) => events.push(`breaker ${e.from}->${e.to}`));
  breaker.onCallNotPermitted(() => events.push('breaker not-permitted'));
  breaker.onSuccess((e) => events.push(`breaker success ${e.durationMs}ms`));
  breaker.onError((e) => events.push(`breaker error ${e.durationMs}ms ${(e.error as Error).constructor.name}`));
  limiter.onSuccess(() => events.push('rate-limiter permit'));
  limiter.onFailure(() => events.push('rate-limiter refused'));
  bulkhead.onCallPermitted(() => events.push('bulkhead permitted'));
  bulkhead.onCallFinished((e) => events.push(`bulkhead finished ${e.durationMs}ms`));
  return events;
}

/** Runs a script of calls one after the other and reports what each answered and every event on the way. */
async function run(order?: readonly PolicyKind[]): Promise<{ answers: string[]; events: string[]; calls: number }> {
  const { moduleRef, clock } = await boot(order);
  const inventory = moduleRef.get(Inventory);
  inventory.script = ['ok', 'fail', 'ok', 'hang', 'hang', 'hang', 'fail', 'fail', 'fail', 'ok'];
  const events = journal(moduleRef.get(ResilienceRegistry));
  const answers: string[] = [];
  for (let i = 0; i < 5; i++) {
    const answer = inventory.stock(`sku-${i}`).then(String, (error: Error) => `${error.constructor.name}`);
    await clock.advance(1000);
    answers.push(await answer);
  }
  await moduleRef.close();
  return { answers, events, calls: inventory.calls };
}

/** How many promise turns a call takes to settle when nothing waits on a timer: the fused pipeline takes fewer. */
async function turnsToSettle(order?: readonly PolicyKind[]): Promise<number> {
  const { moduleRef } = await boot(order);
  const inventory = moduleRef.get(Inventory);
  let settled = false;
  const call = inventory.stock('sku').then(() => (settled = true));
  let turns = 0;
  while (!settled && turns < 1000) {
    await Promise.resolve();
    turns++;
  }
  await call;
  await moduleRef.close();
  return turns;
}

describe('pipeline order', () => {
  it('an order equal to DEFAULT_ORDER by value runs the same pipeline as the default', async () => {
    const byDefault = await turnsToSettle();
    const byValue = await turnsToSettle([...DEFAULT_ORDER]);
    expect(byValue).toBe(byDefault);
  });

  it('an order equal to DEFAULT_ORDER by value gives the same answers and events as the default', async () => {
    const byDefault = await run();
    const byValue = await run([...DEFAULT_ORDER]);
    // Answers, a retried failure, a fallback after time-outs open the breaker, a refusal, a failed half-open probe.
    expect(byDefault.answers).toEqual(['sku-0:1', 'sku-1:3', 'sku-2:stale', 'CallNotPermittedError', 'sku-4:stale']);
    expect(byDefault.events).toContain('breaker OPEN->HALF_OPEN');
    expect(byValue).toEqual(byDefault);
  });

  it('a rate limiter moved outside the retry takes one permit per call, not one per attempt', async () => {
    const outside = await boot([
      'idempotent',
      'fallback',
      'rateLimiter',
      'retry',
      'circuitBreaker',
      'timeLimiter',
      'bulkhead',
    ]);
    const inventory = outside.moduleRef.get(Inventory);
    inventory.script = ['fail', 'fail', 'ok'];
    const answer = inventory.stock('sku');
    await outside.clock.advance(100);
    await expect(answer).resolves.toBe('sku:3');
    expect(outside.moduleRef.get(ResilienceRegistry).rateLimiter('inventory').metrics.availablePermissions).toBe(4);
    await outside.moduleRef.close();

    const inside = await boot();
    const again = inside.moduleRef.get(Inventory);
    again.script = ['fail', 'fail', 'ok'];
    const second = again.stock('sku');
    await inside.clock.advance(100);
    await expect(second).resolves.toBe('sku:3');
    expect(inside.moduleRef.get(ResilienceRegistry).rateLimiter('inventory').metrics.availablePermissions).toBe(2);
    await inside.moduleRef.close();
  });

  it('a bulkhead moved outside the time limit hands its permit back when the time limit ends the attempt', async () => {
    const { moduleRef, clock } = await boot([
      'idempotent',
      'fallback',
      'retry',
      'circuitBreaker',
      'rateLimiter',
      'bulkhead',
      'timeLimiter',
    ]);
    const inventory = moduleRef.get(Inventory);
    inventory.script = ['hang', 'hang', 'hang'];
    const events = journal(moduleRef.get(ResilienceRegistry));
    const answer = inventory.stock('sku');
    await clock.advance(1000);
    await expect(answer).resolves.toBe('sku:stale');
    // Inside the bulkhead, the time limit ends each attempt at 100 ms and the permit is handed back then.
    expect(events.filter((e) => e.startsWith('bulkhead finished'))).toEqual([
      'bulkhead finished 100ms',
      'bulkhead finished 100ms',
      'bulkhead finished 100ms',
    ]);
    await moduleRef.close();
  });

  it('a method whose layers keep the fused shape under a reordered order runs the same pipeline as the default', async () => {
    const reordered = [
      'idempotent',
      'fallback',
      'rateLimiter',
      'retry',
      'circuitBreaker',
      'bulkhead',
      'timeLimiter',
    ] as const;
    const turns = async (order?: readonly PolicyKind[]): Promise<number> => {
      const { moduleRef } = await boot(order);
      const prices = moduleRef.get(Prices);
      let settled = false;
      const call = prices.price().then(() => (settled = true));
      let n = 0;
      while (!settled && n < 1000) {
        await Promise.resolve();
        n++;
      }
      await expect(call).resolves.toBe(true);
      expect(prices.calls).toBe(1);
      await moduleRef.close();
      return n;
    };
    expect(await turns(reordered)).toBe(await turns());
  });
});
