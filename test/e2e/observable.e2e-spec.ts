import { Controller, Get, Injectable, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { defer, firstValueFrom, isObservable, lastValueFrom, map, Observable, of, take, toArray } from 'rxjs';
import request from 'supertest';
import {
  Bulkhead,
  BulkheadFullError,
  CallNotPermittedError,
  CircuitBreaker,
  currentSignal,
  deadlineHeaders,
  Fallback,
  Idempotent,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  RateLimitedError,
  RateLimiter,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';
import { ResilienceContext } from '../../lib/kernel/context';
import { contextStorage } from '../../lib/kernel/context';

class Unavailable extends Error {
  readonly status = 503;
}

/**
 * A cold source on the virtual clock: each subscription is one request that
 * answers `value` after `delayMs` (or fails with `error`), and counts its
 * subscriptions and teardowns.
 */
class Downstream {
  subscriptions = 0;
  teardowns = 0;
  signals: Array<AbortSignal | undefined> = [];
  headers: Array<Record<string, string>> = [];
  script: Array<{ delayMs: number; error?: Error; values?: unknown[] }> = [];

  constructor(private readonly clock: VirtualClock) {}

  request(): Observable<unknown> {
    return new Observable((subscriber) => {
      const step = this.script[Math.min(this.subscriptions, this.script.length - 1)];
      this.subscriptions++;
      this.signals.push(currentSignal());
      this.headers.push(deadlineHeaders());
      const timer = this.clock.setTimeout(() => {
        if (step.error !== undefined) subscriber.error(step.error);
        else {
          for (const value of step.values ?? ['ok']) subscriber.next(value);
          subscriber.complete();
        }
      }, step.delayMs);
      return () => {
        this.teardowns++;
        this.clock.clearTimeout(timer);
      };
    });
  }

  /** Emits `values` one after the other, `gapMs` apart. */
  stream(values: unknown[], gapMs: number): Observable<unknown> {
    return new Observable((subscriber) => {
      this.subscriptions++;
      let i = 0;
      let timer: unknown;
      const emit = () => {
        if (i === values.length) return subscriber.complete();
        subscriber.next(values[i++]);
        timer = this.clock.setTimeout(emit, gapMs);
      };
      timer = this.clock.setTimeout(emit, gapMs);
      return () => {
        this.teardowns++;
        this.clock.clearTimeout(timer);
      };
    });
  }
}

@Injectable()
class Client {
  calls = 0;
  constructor(readonly downstream: Downstream) {}

  @Retry('r')
  retried(): Observable<unknown> {
    this.calls++;
    return this.downstream.request();
  }

  @Timeout(100)
  limited(): Observable<unknown> {
    this.calls++;
    return this.downstream.request();
  }

  @Timeout(100)
  streamed(gapMs: number): Observable<unknown> {
    return this.downstream.stream([1, 2, 3], gapMs);
  }

  @CircuitBreaker('cb')
  guarded(): Observable<unknown> {
    this.calls++;
    return this.downstream.request();
  }

  @Bulkhead('bh')
  bounded(): Observable<unknown> {
    return this.downstream.request();
  }

  @CircuitBreaker('timed')
  guardedStream(gapMs: number): Observable<unknown> {
    return this.downstream.stream([1, 2, 3], gapMs);
  }

  @Idempotent({ key: (id: string) => id })
  keyed(_id: string): Observable<unknown> {
    return this.downstream.request();
  }

  @RateLimiter('rl')
  limitedRate(): Observable<unknown> {
    return this.downstream.request();
  }

  @Bulkhead('queued')
  queued(): Observable<unknown> {
    return this.downstream.request();
  }

  @Fallback(Unavailable, 'fallbackValue')
  withValueFallback(): Observable<unknown> {
    return this.downstream.request();
  }

  fallbackValue(): string {
    return 'from value';
  }

  @Fallback(Unavailable, (_error: unknown) => Promise.resolve('from promise'))
  withPromiseFallback(): Observable<unknown> {
    return this.downstream.request();
  }

  @Fallback(Unavailable, () => of('a', 'b'))
  withObservableFallback(): Observable<unknown> {
    return this.downstream.request();
  }

  @Retry('r')
  @Timeout(100)
  attempts(): Observable<unknown> {
    return defer(() => this.downstream.request());
  }

  // No type annotation: TypeScript records no return type, so the Observable is recognised by what the method returns.
  @Retry('r')
  untyped() {
    return this.downstream.request();
  }
}

@Controller('obs')
class ObservableController {
  constructor(private readonly downstream: Downstream) {}

  @Get('slow')
  @Timeout(100)
  slow(): Observable<unknown> {
    return this.downstream.request();
  }

  @Post('orders')
  @Idempotent()
  @Retry('r')
  order(): Observable<unknown> {
    return this.downstream.request().pipe(map((value) => ({ order: value, attempt: this.downstream.subscriptions })));
  }
}

const OPTIONS: ResilienceModuleOptions = {
  retry: { instances: { r: { maxAttempts: 3, waitDuration: 100, jitter: 'none' } } },
  circuitBreaker: {
    instances: {
      timed: { slowCallDurationThreshold: 50 },
      cb: { slidingWindowSize: 4, minimumNumberOfCalls: 4, failureRateThreshold: 50, waitDurationInOpenState: 1000 },
    },
  },
  rateLimiter: { instances: { rl: { limitForPeriod: 1, limitRefreshPeriod: 1000, timeoutDuration: 0 } } },
  bulkhead: {
    instances: {
      bh: { maxConcurrentCalls: 1, maxWaitDuration: 0 },
      queued: { maxConcurrentCalls: 1, maxWaitDuration: 50, queueCapacity: 1 },
    },
  },
};

async function boot(options: ResilienceModuleOptions = {}) {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    imports: [
      ResilienceModule.forRoot({
        ...OPTIONS,
        ...options,
        clock,
        random: () => 0,
        idempotency: { principal: () => 'tests' },
      }),
    ],
    controllers: [ObservableController],
    providers: [
      { provide: VirtualClock, useValue: clock },
      { provide: Downstream, useFactory: () => new Downstream(clock) },
      Client,
    ],
  }).compile();
  moduleRef.useLogger(false);
  const app = moduleRef.createNestApplication({ logger: false });
  app.useGlobalFilters(new ResilienceExceptionFilter());
  await app.init();
  return {
    app,
    clock,
    client: app.get(Client),
    downstream: app.get(Downstream),
    registry: app.get(ResilienceRegistry),
  };
}

/** Subscribes and records what arrives; never throws. */
function watch(source: Observable<unknown>) {
  const seen: { values: unknown[]; error?: unknown; completed: boolean } = { values: [], completed: false };
  const subscription = source.subscribe({
    next: (value) => seen.values.push(value),
    error: (error: unknown) => (seen.error = error),
    complete: () => (seen.completed = true),
  });
  return { seen, subscription };
}

/**
 * Mirrors Resilience4j's Reactor operators (resilience4j-reactor,
 * io.github.resilience4j.reactor): CircuitBreakerSubscriber (refusal on
 * subscribe; a cancel after a value is a success, before one releases the
 * permission), TimeLimiterOperator (a timeout per item), BulkheadSubscriber
 * (permit until the end or the cancel) and RetryOperator (re-subscription).
 */
describe('decorated methods that return an Observable', () => {
  let ctx: Awaited<ReturnType<typeof boot>>;

  beforeEach(async () => {
    ctx = await boot();
  });

  afterEach(async () => {
    await ctx.app.close();
  });

  it('stay Observable-returning and lazy: nothing is subscribed until the caller subscribes', async () => {
    const { client, downstream, clock } = ctx;
    downstream.script = [{ delayMs: 10, values: ['x'] }];
    const result = client.retried();
    expect(isObservable(result)).toBe(true);
    expect(downstream.subscriptions).toBe(0);
    const piped = result.pipe(toArray());
    const answer = lastValueFrom(piped);
    await clock.advance(10);
    await expect(answer).resolves.toEqual(['x']);
    expect(downstream.subscriptions).toBe(1);
  });

  it('@Retry re-subscribes the source with the configured backoff until it answers', async () => {
    const { client, downstream, clock, registry } = ctx;
    downstream.script = [
      { delayMs: 10, error: new Unavailable('busy') },
      { delayMs: 10, error: new Unavailable('busy') },
      { delayMs: 10, values: ['ok'] },
    ];
    const { seen } = watch(client.retried());
    await clock.advance(10);
    expect(downstream.subscriptions).toBe(1);
    await clock.advance(99);
    expect(downstream.subscriptions).toBe(1);
    await clock.advance(1);
    expect(downstream.subscriptions).toBe(2);
    await clock.advance(120);
    expect(seen).toEqual({ values: ['ok'], completed: true });
    expect(downstream.subscriptions).toBe(3);
    expect(client.calls).toBe(1);
    expect(registry.retry('r').metrics).toMatchObject({ successfulCallsWithRetry: 1, failedCallsWithRetry: 0 });
  });

  it('@Retry never waits past the deadline of the scope it was subscribed in', async () => {
    const { client, downstream, clock, registry } = ctx;
    downstream.script = [{ delayMs: 100, error: new Unavailable('busy') }];
    const stops: string[] = [];
    registry.retry('r').onRetryStopped(({ reason }) => stops.push(reason));
    const request = new ResilienceContext(clock, clock.now() + 150);
    const { seen } = contextStorage.run(request, () => watch(client.retried()));
    await clock.advance(100);
    expect(seen.error).toBeInstanceOf(Unavailable);
    expect(stops).toEqual(['deadline']);
    await clock.advance(1000);
    expect(downstream.subscriptions).toBe(1);
  });

  it('@Retry gives up after maxAttempts with the last error, counted as failed with retry', async () => {
    const { client, downstream, clock, registry } = ctx;
    const last = new Unavailable('still busy');
    downstream.script = [
      { delayMs: 0, error: new Unavailable('busy') },
      { delayMs: 0, error: new Unavailable('busy') },
      { delayMs: 0, error: last },
    ];
    const { seen } = watch(client.retried());
    await clock.advance(1000);
    expect(seen.error).toBe(last);
    expect(downstream.subscriptions).toBe(3);
    expect(registry.retry('r').metrics.failedCallsWithRetry).toBe(1);
  });

  it('@Timeout(100) fails a subscription whose value takes 500 ms, and unsubscribes the source', async () => {
    const { client, downstream, clock } = ctx;
    downstream.script = [{ delayMs: 500, values: ['late'] }];
    const { seen } = watch(client.limited());
    await clock.advance(100);
    expect(seen.error).toBeInstanceOf(TimeoutExceededError);
    expect(seen.values).toEqual([]);
    expect(downstream.teardowns).toBe(1);
    expect(downstream.signals[0]?.aborted).toBe(true);
    expect(downstream.headers[0]).toEqual({ 'x-request-deadline-ms': '100' });
  });

  it('@Timeout applies to each value: the first, then the gap to the next', async () => {
    const { client, clock } = ctx;
    const fast = watch(client.streamed(90));
    await clock.advance(400);
    expect(fast.seen).toEqual({ values: [1, 2, 3], completed: true });
    const slow = watch(client.streamed(150));
    await clock.advance(100);
    expect(slow.seen.values).toEqual([]);
    expect(slow.seen.error).toBeInstanceOf(TimeoutExceededError);
  });

  it('a controller route returning a slow Observable under @Timeout(100) answers 504', async () => {
    const { app, downstream, clock } = ctx;
    downstream.script = [{ delayMs: 500, values: [{ late: true }] }];
    const pending = request(app.getHttpServer())
      .get('/obs/slow')
      .then((r) => r);
    for (let i = 0; i < 50 && downstream.subscriptions === 0; i++) await VirtualClock.settle();
    await clock.advance(100);
    const response = await pending;
    expect(response.status).toBe(504);
    expect(downstream.teardowns).toBe(1);
  });

  it('@CircuitBreaker records each subscription: failing subscriptions open it and the next is refused on subscribe', async () => {
    const { client, downstream, clock, registry } = ctx;
    downstream.script = [{ delayMs: 10, error: new Unavailable('down') }];
    for (let i = 0; i < 4; i++) {
      const { seen } = watch(client.guarded());
      await clock.advance(10);
      expect(seen.error).toBeInstanceOf(Unavailable);
    }
    const breaker = registry.circuitBreaker('cb');
    expect(breaker.state).toBe('OPEN');
    expect(breaker.metrics).toMatchObject({ numberOfFailedCalls: 4, numberOfSuccessfulCalls: 0 });
    let refused: Observable<unknown> | undefined;
    expect(() => (refused = client.guarded())).not.toThrow();
    const { seen } = watch(refused!);
    expect(seen.error).toBeInstanceOf(CallNotPermittedError);
    expect(downstream.subscriptions).toBe(4);
    expect(breaker.metrics.numberOfNotPermittedCalls).toBe(1);
  });

  it('@CircuitBreaker: an unsubscribe before any value records no outcome; firstValueFrom counts a success', async () => {
    const { client, downstream, clock, registry } = ctx;
    downstream.script = [{ delayMs: 10, values: ['v'] }];
    const { subscription } = watch(client.guarded());
    subscription.unsubscribe();
    expect(downstream.teardowns).toBe(1);
    expect(registry.circuitBreaker('cb').metrics.numberOfBufferedCalls).toBe(0);
    const answer = firstValueFrom(client.guarded());
    await clock.advance(10);
    await expect(answer).resolves.toBe('v');
    expect(registry.circuitBreaker('cb').metrics).toMatchObject({
      numberOfBufferedCalls: 1,
      numberOfSuccessfulCalls: 1,
    });
  });

  it('@CircuitBreaker times a subscription from subscribe to its first value, so a long stream is not a slow call', async () => {
    const { client, clock, registry } = ctx;
    const quick = watch(client.guardedStream(40));
    await clock.advance(200);
    expect(quick.seen).toEqual({ values: [1, 2, 3], completed: true });
    expect(registry.circuitBreaker('timed').metrics).toMatchObject({
      numberOfSuccessfulCalls: 1,
      numberOfSlowCalls: 0,
    });
    const late = watch(client.guardedStream(60));
    await clock.advance(300);
    expect(late.seen.completed).toBe(true);
    expect(registry.circuitBreaker('timed').metrics).toMatchObject({
      numberOfSuccessfulCalls: 2,
      numberOfSlowCalls: 1,
    });
  });

  it('@RateLimiter takes a permit per subscription and refuses on subscribe when none is left', async () => {
    const { client, downstream, clock } = ctx;
    downstream.script = [{ delayMs: 0, values: ['v'] }];
    const limited = client.limitedRate();
    const first = lastValueFrom(limited);
    await clock.advance(0);
    await expect(first).resolves.toBe('v');
    await expect(lastValueFrom(limited)).rejects.toBeInstanceOf(RateLimitedError);
    expect(downstream.subscriptions).toBe(1);
  });

  it('@Bulkhead holds its permit from subscribe to completion, releases it on unsubscribe, and refuses on subscribe', async () => {
    const { client, downstream, clock, registry } = ctx;
    downstream.script = [{ delayMs: 10, values: ['v'] }];
    const bulkhead = registry.bulkhead('bh');
    const first = client.bounded();
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
    const one = watch(first);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(0);
    const two = watch(client.bounded());
    expect(two.seen.error).toBeInstanceOf(BulkheadFullError);
    await clock.advance(10);
    expect(one.seen.completed).toBe(true);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
    const three = watch(client.bounded());
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(0);
    three.subscription.unsubscribe();
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
  });

  it('@Bulkhead: a subscription waits in the queue for a permit, and leaves it when unsubscribed', async () => {
    const { client, downstream, clock, registry } = ctx;
    downstream.script = [{ delayMs: 10, values: ['v'] }];
    const bulkhead = registry.bulkhead('queued');
    const running = watch(client.queued());
    const waiting = watch(client.queued());
    expect(bulkhead.metrics).toMatchObject({ availableConcurrentCalls: 0, queueDepth: 1 });
    expect(downstream.subscriptions).toBe(1);
    const refused = watch(client.queued());
    expect(refused.seen.error).toBeInstanceOf(BulkheadFullError);
    await clock.advance(10);
    expect(running.seen.completed).toBe(true);
    expect(downstream.subscriptions).toBe(2);
    await clock.advance(10);
    expect(waiting.seen).toEqual({ values: ['v'], completed: true });
    const holder = watch(client.queued());
    const leaving = watch(client.queued());
    expect(bulkhead.metrics.queueDepth).toBe(1);
    leaving.subscription.unsubscribe();
    expect(bulkhead.metrics.queueDepth).toBe(0);
    await clock.advance(100);
    expect(holder.seen.completed).toBe(true);
    expect(leaving.seen).toEqual({ values: [], completed: false });
    expect(bulkhead.metrics).toMatchObject({ availableConcurrentCalls: 1, queueDepth: 0 });
  });

  it.each([
    ['a value', 'withValueFallback', ['from value']],
    ['a Promise', 'withPromiseFallback', ['from promise']],
    ['an Observable', 'withObservableFallback', ['a', 'b']],
  ] as const)('@Fallback may answer with %s', async (_label, method, expected) => {
    const { client, downstream, clock } = ctx;
    downstream.script = [{ delayMs: 0, error: new Unavailable('down') }];
    const answer = lastValueFrom(client[method]().pipe(toArray()));
    await clock.advance(0);
    await expect(answer).resolves.toEqual(expected);
  });

  it('each retried attempt gets its own time limit and signal', async () => {
    const { client, downstream, clock } = ctx;
    downstream.script = [{ delayMs: 500 }, { delayMs: 10, values: ['second'] }];
    const { seen } = watch(client.attempts());
    await clock.advance(100);
    expect(downstream.signals[0]?.aborted).toBe(true);
    await clock.advance(110);
    expect(seen).toEqual({ values: ['second'], completed: true });
    expect(downstream.signals[1]?.aborted).toBe(false);
  });

  it('recognises an Observable without type metadata by what the method returns', async () => {
    const { client, downstream, clock } = ctx;
    downstream.script = [
      { delayMs: 0, error: new Unavailable('busy') },
      { delayMs: 0, values: ['ok'] },
    ];
    const result = client.untyped();
    expect(isObservable(result)).toBe(true);
    const answer = lastValueFrom(result.pipe(take(1)));
    await clock.advance(100);
    await expect(answer).resolves.toBe('ok');
    expect(downstream.subscriptions).toBe(2);
  });

  it('@Idempotent with a key on an Observable method: the last value is stored and replayed without subscribing', async () => {
    const { client, downstream, clock } = ctx;
    downstream.script = [{ delayMs: 0, values: ['first', 'last'] }];
    const answer = lastValueFrom(client.keyed('op-1').pipe(toArray()));
    await clock.advance(0);
    await expect(answer).resolves.toEqual(['last']);
    await expect(lastValueFrom(client.keyed('op-1').pipe(toArray()))).resolves.toEqual(['last']);
    expect(downstream.subscriptions).toBe(1);
  });

  it('@Idempotent on a route returning an Observable: runs once, replays the answer to the same key', async () => {
    const { app, downstream, clock } = ctx;
    downstream.script = [
      { delayMs: 0, error: new Unavailable('busy') },
      { delayMs: 0, values: ['placed'] },
    ];
    const send = () => request(app.getHttpServer()).post('/obs/orders').set('idempotency-key', 'k-1').send({ item: 1 });
    const first = send().then((r) => r);
    for (let i = 0; i < 50 && downstream.subscriptions < 1; i++) await VirtualClock.settle();
    await clock.advance(100);
    const answered = await first;
    expect(answered.status).toBe(201);
    expect(answered.body).toEqual({ order: 'placed', attempt: 2 });
    const replay = await send();
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual({ order: 'placed', attempt: 2 });
    expect(downstream.subscriptions).toBe(2);
  });
});

describe('Observable methods under a custom layer order', () => {
  it('puts the time limit outside the retry when the order says so: one limit for all attempts', async () => {
    const ctx = await boot({
      order: ['idempotent', 'fallback', 'timeLimiter', 'retry', 'circuitBreaker', 'rateLimiter', 'bulkhead'],
    });
    try {
      const { client, downstream, clock } = ctx;
      downstream.script = [{ delayMs: 500 }];
      const { seen } = watch(client.attempts());
      await clock.advance(100);
      expect(seen.error).toBeInstanceOf(TimeoutExceededError);
      await clock.advance(1000);
      // The limit ended the whole retried subscription: no second attempt.
      expect(downstream.subscriptions).toBe(1);
      expect(downstream.teardowns).toBe(1);
    } finally {
      await ctx.app.close();
    }
  });
});
