import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { defer, isObservable, Observable, Subscription } from 'rxjs';
import {
  Bulkhead,
  BulkheadFullError,
  CallNotPermittedError,
  CircuitBreaker,
  Fallback,
  Hedge,
  RateLimiter,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';

class Broken extends Error {}

/** One subscription's script: its values (or its error), each `gapMs` after the one before. */
interface Step {
  readonly gapMs: number;
  readonly values?: readonly unknown[];
  readonly error?: Error;
}

/**
 * A cold source on the virtual clock, made with `defer`: nothing runs until
 * a subscription, and each subscription plays the next step of `script`
 * (the last one again once the script runs out).
 */
class Source {
  subscriptions = 0;
  teardowns = 0;
  script: Step[] = [{ gapMs: 10, values: ['ok'] }];

  constructor(private readonly clock: VirtualClock) {}

  request(): Observable<unknown> {
    return defer(() => {
      const step = this.script[Math.min(this.subscriptions, this.script.length - 1)];
      this.subscriptions++;
      return new Observable<unknown>((subscriber) => {
        const values = step.values ?? [];
        let i = 0;
        let timer: unknown;
        const emit = (): void => {
          if (i < values.length) {
            subscriber.next(values[i++]);
            timer = this.clock.setTimeout(emit, step.gapMs);
          } else if (step.error !== undefined) subscriber.error(step.error);
          else subscriber.complete();
        };
        timer = this.clock.setTimeout(emit, step.gapMs);
        return () => {
          this.teardowns++;
          this.clock.clearTimeout(timer);
        };
      });
    });
  }
}

/**
 * Each policy on two methods alike but for their declaration: `u…` has no
 * declared return type (TypeScript records none for a method without an
 * annotation, as a build without decorator metadata records none at all),
 * `d…` is declared `Observable`. Each has its own instance (`u`, `d`),
 * configured alike, so the two can be compared number for number.
 */
@Injectable()
class Client {
  calls = 0;

  constructor(readonly source: Source) {}

  @Retry('u')
  uRetried() {
    this.calls++;
    return this.source.request();
  }

  @Retry('d')
  dRetried(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }

  @CircuitBreaker('u')
  uGuarded() {
    this.calls++;
    return this.source.request();
  }

  @CircuitBreaker('d')
  dGuarded(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }

  @Bulkhead('u')
  uBounded() {
    this.calls++;
    return this.source.request();
  }

  @Bulkhead('d')
  dBounded(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }

  @Fallback(Broken, () => 'fallen back')
  uRecovered() {
    this.calls++;
    return this.source.request();
  }

  @Fallback(Broken, () => 'fallen back')
  dRecovered(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }

  @Timeout('u')
  uLimited() {
    this.calls++;
    return this.source.request();
  }

  @Timeout('d')
  dLimited(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }

  @RateLimiter('u')
  uRated() {
    this.calls++;
    return this.source.request();
  }

  @RateLimiter('d')
  dRated(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }

  @Fallback(Broken, () => 'fallen back')
  @Retry('u')
  @CircuitBreaker('u')
  @RateLimiter('u')
  @Timeout('u')
  @Bulkhead('u')
  uAll() {
    this.calls++;
    return this.source.request();
  }

  @Fallback(Broken, () => 'fallen back')
  @Retry('d')
  @CircuitBreaker('d')
  @RateLimiter('d')
  @Timeout('d')
  @Bulkhead('d')
  dAll(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }

  @Retry('u')
  @Hedge('u')
  uHedged() {
    this.calls++;
    return this.source.request();
  }

  @Retry('d')
  @Hedge('d')
  dHedged(): Observable<unknown> {
    this.calls++;
    return this.source.request();
  }
}

/** Each instance's settings, given once for `u` and once for `d`. */
function alike<T>(settings: T): { instances: { u: T; d: T } } {
  return { instances: { u: settings, d: settings } };
}

const OPTIONS: ResilienceModuleOptions = {
  retry: alike({ maxAttempts: 3, waitDuration: 100, jitter: 'none' as const, retryExceptions: [Broken] }),
  circuitBreaker: alike({ slidingWindowSize: 4, minimumNumberOfCalls: 2, failureRateThreshold: 50 }),
  bulkhead: alike({ maxConcurrentCalls: 2, maxWaitDuration: 0 }),
  timeLimiter: alike({ timeoutDuration: 100 }),
  rateLimiter: alike({ limitForPeriod: 3, limitRefreshPeriod: 1000, timeoutDuration: 0 }),
  hedging: alike({ delay: '50ms', maxHedgedAttempts: 1, safe: true }),
};

async function boot() {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ ...OPTIONS, clock, random: () => 0, metrics: false })],
    providers: [{ provide: Source, useFactory: () => new Source(clock) }, Client],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return {
    moduleRef,
    clock,
    client: moduleRef.get(Client),
    source: moduleRef.get(Source),
    registry: moduleRef.get(ResilienceRegistry),
  };
}

type Booted = Awaited<ReturnType<typeof boot>>;

/** What one subscriber saw. */
interface Seen {
  values: unknown[];
  error?: unknown;
  completed: boolean;
  subscription: Subscription;
}

/** Subscribes and records what arrives; never throws. */
function watch(source: Observable<unknown>): Seen {
  const seen = { values: [] as unknown[], completed: false } as Seen;
  seen.subscription = source.subscribe({
    next: (value) => seen.values.push(value),
    error: (error: unknown) => (seen.error = error),
    complete: () => (seen.completed = true),
  });
  return seen;
}

/** The undeclared method and its declared twin, each run in a module of its own. */
const PAIRS = [
  ['uRetried', 'dRetried'],
  ['uGuarded', 'dGuarded'],
  ['uBounded', 'dBounded'],
  ['uRecovered', 'dRecovered'],
  ['uLimited', 'dLimited'],
  ['uRated', 'dRated'],
  ['uAll', 'dAll'],
] as const;

type Method = (typeof PAIRS)[number][number] | 'uHedged' | 'dHedged';

/**
 * Runs `scenario` on the first call of the undeclared method and on the
 * first call of its declared twin, each in a fresh module, and answers both
 * reports (with the instance name, `u` or `d`, the scenario reads metrics of,
 * and the method's name).
 */
async function onBoth<R>(
  pair: readonly [Method, Method],
  scenario: (booted: Booted, call: () => Observable<unknown>, name: 'u' | 'd', method: Method) => Promise<R>,
): Promise<[R, R]> {
  const reports: R[] = [];
  for (const method of pair) {
    const booted = await boot();
    const name = method.startsWith('u') ? 'u' : 'd';
    reports.push(await scenario(booted, () => booted.client[method](), name, method));
    await booted.moduleRef.close();
  }
  return reports as [R, R];
}

describe('the first call of a method with no declared return type that returns an Observable', () => {
  it.each(PAIRS)('%s subscribes nothing until its caller subscribes, as %s', async (...pair) => {
    const [undeclared, declared] = await onBoth(pair, async ({ clock, client, source }, call) => {
      const answer = call();
      const observable = isObservable(answer);
      await clock.advance(1000);
      const before = { calls: client.calls, subscriptions: source.subscriptions };
      const seen = watch(answer);
      await clock.advance(1000);
      return { observable, before, subscriptions: source.subscriptions, values: seen.values, done: seen.completed };
    });
    expect(undeclared).toEqual({
      observable: true,
      before: { calls: 1, subscriptions: 0 },
      subscriptions: 1,
      values: ['ok'],
      done: true,
    });
    expect(undeclared).toEqual(declared);
  });

  it('@Retry: each subscription is one retried run, re-subscribing after each wait', async () => {
    const reports = await onBoth(['uRetried', 'dRetried'], async ({ clock, source, registry }, call, name) => {
      source.script = [
        { gapMs: 10, error: new Broken('1') },
        { gapMs: 10, error: new Broken('2') },
        { gapMs: 10, values: ['ok'] },
      ];
      const answer = call();
      await clock.advance(500);
      const before = source.subscriptions;
      const first = watch(answer);
      const timeline: number[] = [];
      for (let i = 0; i < 3; i++) {
        await clock.advance(10);
        timeline.push(source.subscriptions);
        await clock.advance(100);
      }
      const again = watch(answer);
      await clock.advance(20);
      return {
        before,
        timeline,
        first: first.values,
        again: again.values,
        subscriptions: source.subscriptions,
        metrics: registry.retry(name).metrics,
      };
    });
    expect(reports[0]).toEqual({
      before: 0,
      timeline: [1, 2, 3],
      first: ['ok'],
      again: ['ok'],
      subscriptions: 4,
      metrics: {
        successfulCallsWithoutRetry: 1,
        successfulCallsWithRetry: 1,
        failedCallsWithoutRetry: 0,
        failedCallsWithRetry: 0,
        budgetDenied: 0,
      },
    });
    expect(reports[0]).toEqual(reports[1]);
  });

  it('@CircuitBreaker: records one call per subscription, none for the call itself, and publishes one event each', async () => {
    const reports = await onBoth(['uGuarded', 'dGuarded'], async ({ clock, source, registry }, call, name) => {
      source.script = [
        { gapMs: 10, error: new Broken('down') },
        { gapMs: 10, values: ['ok'] },
      ];
      const breaker = registry.circuitBreaker(name);
      const events: string[] = [];
      breaker.onSuccess(() => events.push('success'));
      breaker.onError(() => events.push('error'));
      const answer = call();
      await clock.advance(500);
      const before = { buffered: breaker.metrics.numberOfBufferedCalls, events: events.length };
      const first = watch(answer);
      await clock.advance(10);
      const second = watch(answer);
      await clock.advance(20);
      return {
        before,
        buffered: breaker.metrics.numberOfBufferedCalls,
        failed: breaker.metrics.numberOfFailedCalls,
        events,
        first: first.error instanceof Broken,
        second: second.values,
        subscriptions: source.subscriptions,
      };
    });
    expect(reports[0]).toEqual({
      before: { buffered: 0, events: 0 },
      buffered: 2,
      failed: 1,
      events: ['error', 'success'],
      first: true,
      second: ['ok'],
      subscriptions: 2,
    });
    expect(reports[0]).toEqual(reports[1]);
  });

  it('@Bulkhead: holds a permit only while a subscription runs', async () => {
    const reports = await onBoth(['uBounded', 'dBounded'], async ({ clock, source, registry }, call, name) => {
      source.script = [{ gapMs: 100, values: ['ok'] }];
      const bulkhead = registry.bulkhead(name);
      const answer = call();
      await clock.advance(50);
      const available = [bulkhead.metrics.availableConcurrentCalls];
      const first = watch(answer);
      await clock.advance(0);
      available.push(bulkhead.metrics.availableConcurrentCalls);
      const second = watch(answer);
      await clock.advance(0);
      available.push(bulkhead.metrics.availableConcurrentCalls);
      const third = watch(answer);
      await clock.advance(200);
      available.push(bulkhead.metrics.availableConcurrentCalls);
      return {
        available,
        values: [first.values, second.values],
        third: third.error instanceof BulkheadFullError,
        subscriptions: source.subscriptions,
      };
    });
    expect(reports[0]).toEqual({ available: [2, 1, 0, 2], values: [['ok'], ['ok']], third: true, subscriptions: 2 });
    expect(reports[0]).toEqual(reports[1]);
  });

  it('@Fallback: falls back once per failed subscription, and never for the call itself', async () => {
    const reports = await onBoth(
      ['uRecovered', 'dRecovered'],
      async ({ clock, source, registry }, call, _name, method) => {
        source.script = [{ gapMs: 10, error: new Broken('down') }];
        const answer = call();
        const fallback = registry.fallbacks.find((policy) => policy.name === `Client.${method}`);
        const fellBack: string[] = [];
        fallback?.onFallback((event) => fellBack.push(event.errorClass.name));
        await clock.advance(500);
        const before = { subscriptions: source.subscriptions, fellBack: fellBack.length };
        const first = watch(answer);
        await clock.advance(10);
        const second = watch(answer);
        await clock.advance(10);
        return { before, values: [first.values, second.values], fellBack, subscriptions: source.subscriptions };
      },
    );
    expect(reports[0]).toEqual({
      before: { subscriptions: 0, fellBack: 0 },
      values: [['fallen back'], ['fallen back']],
      fellBack: ['Broken', 'Broken'],
      subscriptions: 2,
    });
    expect(reports[0]).toEqual(reports[1]);
  });

  it('@Timeout: limits each value from the subscription, not from the call, and the stream as a whole not at all', async () => {
    const reports = await onBoth(['uLimited', 'dLimited'], async ({ clock, source, registry }, call, name) => {
      source.script = [
        { gapMs: 60, values: [1, 2, 3] },
        { gapMs: 150, values: [1] },
      ];
      const limiter = registry.timeLimiter(name);
      const timeouts: number[] = [];
      const events: string[] = [];
      limiter.onTimeout(() => timeouts.push(clock.now()));
      limiter.onSuccess(() => events.push('success'));
      limiter.onError(() => events.push('error'));
      const answer = call();
      await clock.advance(500);
      const paced = watch(answer);
      await clock.advance(240);
      const slow = watch(answer);
      await clock.advance(200);
      return {
        paced: { values: paced.values, completed: paced.completed },
        slow: slow.error instanceof TimeoutExceededError,
        timeouts,
        events,
        teardowns: source.teardowns,
      };
    });
    expect(reports[0]).toEqual({
      paced: { values: [1, 2, 3], completed: true },
      slow: true,
      timeouts: [840],
      events: ['success'],
      teardowns: 2,
    });
    expect(reports[0]).toEqual(reports[1]);
  });

  it('@RateLimiter: takes one permit per subscription', async () => {
    const reports = await onBoth(['uRated', 'dRated'], async ({ clock, source, registry }, call, name) => {
      const limiter = registry.rateLimiter(name);
      const answer = call();
      await clock.advance(500);
      const before = { subscriptions: source.subscriptions, permits: limiter.metrics.availablePermissions };
      const first = watch(answer);
      const second = watch(answer);
      await clock.advance(20);
      return {
        before: before.subscriptions,
        taken: before.permits - limiter.metrics.availablePermissions,
        values: [first.values, second.values],
        subscriptions: source.subscriptions,
      };
    });
    expect(reports[0]).toEqual({ before: 0, taken: 2, values: [['ok'], ['ok']], subscriptions: 2 });
    expect(reports[0]).toEqual(reports[1]);
  });

  it('every policy at once: one run through all of them per subscription, and nothing for the call', async () => {
    const reports = await onBoth(['uAll', 'dAll'], async ({ clock, source, registry }, call, name) => {
      source.script = [
        { gapMs: 10, error: new Broken('once') },
        { gapMs: 10, values: ['ok'] },
      ];
      const breaker = registry.circuitBreaker(name);
      const bulkhead = registry.bulkhead(name);
      const answer = call();
      await clock.advance(500);
      const before = {
        subscriptions: source.subscriptions,
        buffered: breaker.metrics.numberOfBufferedCalls,
        available: bulkhead.metrics.availableConcurrentCalls,
      };
      const permits = registry.rateLimiter(name).metrics.availablePermissions;
      const seen = watch(answer);
      await clock.advance(5);
      const whileRunning = bulkhead.metrics.availableConcurrentCalls;
      await clock.advance(200);
      return {
        before,
        whileRunning,
        values: seen.values,
        subscriptions: source.subscriptions,
        buffered: breaker.metrics.numberOfBufferedCalls,
        failed: breaker.metrics.numberOfFailedCalls,
        retried: registry.retry(name).metrics.successfulCallsWithRetry,
        available: bulkhead.metrics.availableConcurrentCalls,
        permitsTaken: permits - registry.rateLimiter(name).metrics.availablePermissions,
      };
    });
    expect(reports[0]).toEqual({
      before: { subscriptions: 0, buffered: 0, available: 2 },
      whileRunning: 1,
      values: ['ok'],
      subscriptions: 2,
      buffered: 2,
      failed: 1,
      retried: 1,
      available: 2,
      permitsTaken: 2,
    });
    expect(reports[0]).toEqual(reports[1]);
  });

  it('@Hedge: each subscription is one hedged run, none for the call itself', async () => {
    const reports = await onBoth(['uHedged', 'dHedged'], async ({ clock, client, source }, call) => {
      source.script = [
        { gapMs: 80, values: ['slow'] },
        { gapMs: 10, values: ['fast'] },
      ];
      const answer = call();
      await clock.advance(500);
      const before = { calls: client.calls, subscriptions: source.subscriptions };
      const seen = watch(answer);
      await clock.advance(100);
      return { before, values: seen.values, subscriptions: source.subscriptions, teardowns: source.teardowns };
    });
    expect(reports[0]).toEqual({
      before: { calls: 1, subscriptions: 0 },
      values: ['fast'],
      subscriptions: 2,
      teardowns: 2,
    });
    expect(reports[0]).toEqual(reports[1]);
  });
});

describe('awaiting the first call of a method with no declared return type that returns an Observable', () => {
  it('runs one subscription through the policies, however often it is awaited, and answers its last value', async () => {
    const { moduleRef, clock, client, source, registry } = await boot();
    source.script = [
      { gapMs: 10, error: new Broken('once') },
      { gapMs: 10, values: ['a', 'b'] },
    ];
    const answer = client.uRetried() as unknown as Promise<unknown>;
    await clock.advance(500);
    expect(source.subscriptions).toBe(0);
    const first = answer.then((value) => value);
    const second = answer.then((value) => value);
    await clock.advance(200);
    await expect(first).resolves.toBe('b');
    await expect(second).resolves.toBe('b');
    expect(source.subscriptions).toBe(2);
    expect(registry.retry('u').metrics.successfulCallsWithRetry).toBe(1);
    await moduleRef.close();
  });

  it('subscribes nothing when its caller unsubscribes before the call is through the policies', async () => {
    const { moduleRef, clock, client, source, registry } = await boot();
    const seen = watch(client.uAll());
    seen.subscription.unsubscribe();
    await clock.advance(500);
    expect(source.subscriptions).toBe(0);
    expect(registry.bulkhead('u').metrics.availableConcurrentCalls).toBe(2);
    expect(registry.circuitBreaker('u').metrics.numberOfBufferedCalls).toBe(0);
    expect(seen.values).toEqual([]);
    await moduleRef.close();
  });
});

describe('a first call refused before the method is called', () => {
  it('reaches a subscriber as an error notification and an awaiting caller as a rejection; the method is not called', async () => {
    const { moduleRef, clock, client, source, registry } = await boot();
    registry.circuitBreaker('u').transitionToOpenState();
    const answer = client.uGuarded();
    const seen = watch(answer);
    const awaited = (answer as unknown as Promise<unknown>).then(
      () => 'answered',
      (error: unknown) => error,
    );
    await clock.advance(0);
    expect(seen.error).toBeInstanceOf(CallNotPermittedError);
    expect(await awaited).toBeInstanceOf(CallNotPermittedError);
    expect(client.calls).toBe(0);
    expect(source.subscriptions).toBe(0);
    await moduleRef.close();
  });

  it('by a full bulkhead: the same, to each subscriber, and the permits held stay as they were', async () => {
    const { moduleRef, clock, client, source, registry } = await boot();
    const bulkhead = registry.bulkhead('u');
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const holders = [bulkhead.execute(() => gate), bulkhead.execute(() => gate)];
    await clock.advance(0);
    const answer = client.uBounded();
    const refused = [watch(answer), watch(answer)];
    const awaited = (answer as unknown as Promise<unknown>).then(
      () => 'answered',
      (error: unknown) => error,
    );
    await clock.advance(0);
    expect(refused.map((seen) => seen.error instanceof BulkheadFullError)).toEqual([true, true]);
    expect(await awaited).toBeInstanceOf(BulkheadFullError);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(0);
    expect(client.calls).toBe(0);
    release();
    await Promise.all(holders);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(2);
    expect(source.subscriptions).toBe(0);
    await moduleRef.close();
  });
});
