import { Controller, Get, Inject, Injectable } from '@nestjs/common';
import request from 'supertest';
import { Test } from '@nestjs/testing';
import { isObservable, lastValueFrom, Observable, of, tap } from 'rxjs';
import {
  Bulkhead,
  CircuitBreaker,
  currentSignal,
  remainingTime,
  ResilienceModule,
  ResilienceRegistry,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';
import { DECORATOR_ON_PLAIN_VALUE, DECORATOR_ON_STATIC } from '../../lib/kernel/resilience.messages';

class Broken extends Error {}

@Injectable()
class Accepted {
  @Retry('r')
  async promised(): Promise<number> {
    return 1;
  }

  @Retry('r')
  observed(): Observable<number> {
    return of(1);
  }

  @Retry('r')
  loose(): Promise<number> | Observable<number> {
    return Promise.resolve(1);
  }

  @Retry('r')
  nothing(): void {}

  @Retry('r')
  throwsInPromiseMethod(): Promise<number> {
    throw new Broken('sync');
  }

  @Timeout(100)
  throwsInObservableMethod(): Observable<number> {
    throw new Broken('sync');
  }
}

describe('what a decorated method may return', () => {
  it('refuses a method declared to return a number, a string or a boolean, naming it, when the class is defined', () => {
    const numeric = () => {
      class Counter {
        @Bulkhead('bh')
        next(): number {
          return 1;
        }
      }
      return Counter;
    };
    const text = () => {
      class Greeter {
        @CircuitBreaker('cb')
        greet(): string {
          return 'hello';
        }
      }
      return Greeter;
    };
    const flag = () => {
      class Probe {
        @Timeout(100)
        healthy(): boolean {
          return true;
        }
      }
      return Probe;
    };
    expect(numeric).toThrow(DECORATOR_ON_PLAIN_VALUE('Bulkhead', 'Counter.next', 'Number'));
    expect(text).toThrow(DECORATOR_ON_PLAIN_VALUE('CircuitBreaker', 'Greeter.greet', 'String'));
    expect(flag).toThrow(DECORATOR_ON_PLAIN_VALUE('Timeout', 'Probe.healthy', 'Boolean'));
  });

  it('refuses a decorator on a static method when the class is defined', () => {
    const define = () => {
      class Tools {
        @Retry('r')
        static async fetchAll(): Promise<number> {
          return 1;
        }
      }
      return Tools;
    };
    expect(define).toThrow(DECORATOR_ON_STATIC('Retry', 'Tools.fetchAll'));
  });

  it('accepts Promise, Observable, Object and void return types', async () => {
    const clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock, retry: { instances: { r: { maxAttempts: 1 } } } })],
      providers: [Accepted],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    const accepted = moduleRef.get(Accepted);
    await expect(accepted.promised()).resolves.toBe(1);
    expect(isObservable(accepted.observed())).toBe(true);
    await expect(accepted.loose()).resolves.toBe(1);
    await expect(accepted.nothing()).resolves.toBeUndefined();
    await moduleRef.close();
  });

  it('a synchronous throw reaches the caller as the method answers: a rejected Promise, or an error notification', async () => {
    const clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock, retry: { instances: { r: { maxAttempts: 1 } } } })],
      providers: [Accepted],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    const accepted = moduleRef.get(Accepted);
    let promised: Promise<number> | undefined;
    expect(() => (promised = accepted.throwsInPromiseMethod())).not.toThrow();
    await expect(promised).rejects.toBeInstanceOf(Broken);
    let observed: Observable<number> | undefined;
    expect(() => (observed = accepted.throwsInObservableMethod())).not.toThrow();
    expect(isObservable(observed)).toBe(true);
    await expect(lastValueFrom(observed!)).rejects.toBeInstanceOf(Broken);
    await moduleRef.close();
  });
});

/** What a call saw while it ran: its signal, the bulkhead's free permits and the time it had left. */
interface Sight {
  readonly signal: AbortSignal | undefined;
  readonly available: number;
  readonly remaining: number;
}

/** Methods with no declared return type, as TypeScript compiles a non-`async` method without an annotation. */
@Injectable()
class Undeclared {
  readonly sights: Sight[] = [];
  calls = 0;
  subscriptions = 0;
  failuresLeft = 0;

  constructor(private readonly registry: ResilienceRegistry) {}

  sight(): void {
    this.sights.push({
      signal: currentSignal(),
      available: this.registry.bulkhead('b').metrics.availableConcurrentCalls,
      remaining: remainingTime(),
    });
  }

  @Retry('r')
  @Bulkhead('b')
  @Timeout(1000)
  load() {
    this.calls++;
    this.sight();
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      return Promise.reject(new Broken('try again'));
    }
    return Promise.resolve(this.calls);
  }

  @Retry('r')
  @Bulkhead('b')
  @Timeout(1000)
  stream() {
    this.calls++;
    return new Observable<number>((subscriber) => {
      this.subscriptions++;
      this.sight();
      subscriber.next(1);
      subscriber.next(2);
      subscriber.complete();
    });
  }

  teardowns = 0;

  @Timeout(1000)
  silent() {
    this.calls++;
    return new Observable<number>(() => () => this.teardowns++);
  }
}

@Controller('undeclared')
class UndeclaredRoutes {
  @Retry('r')
  @Get('stock')
  stock() {
    return of(7, 8);
  }

  @Retry('r')
  @Get('price')
  price() {
    return Promise.resolve({ price: 3 });
  }
}

/** The same methods as a compiler that writes no decorator metadata (esbuild, Vite, SWC without it) leaves them. */
class Bare {
  readonly sights: Sight[] = [];
  calls = 0;

  constructor(private readonly registry: ResilienceRegistry) {}

  load(): Promise<number> {
    this.calls++;
    this.sights.push({
      signal: currentSignal(),
      available: this.registry.bulkhead('b').metrics.availableConcurrentCalls,
      remaining: remainingTime(),
    });
    return Promise.resolve(this.calls);
  }
}
const bareLoad = Object.getOwnPropertyDescriptor(Bare.prototype, 'load')!;
Object.defineProperty(
  Bare.prototype,
  'load',
  Reflect.decorate([Bulkhead('b'), Timeout(1000)], Bare.prototype, 'load', bareLoad),
);
Inject(ResilienceRegistry)(Bare, undefined, 0);
Injectable()(Bare);

describe('a method with no declared return type', () => {
  async function boot() {
    const clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          deadline: { attemptContext: 'always' },
          retry: { instances: { r: { maxAttempts: 3, waitDuration: 0, retryExceptions: [Broken] } } },
          bulkhead: { instances: { b: { maxConcurrentCalls: 4 } } },
        }),
      ],
      providers: [Undeclared, Bare],
      controllers: [UndeclaredRoutes],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    return Object.assign(moduleRef, { clock });
  }

  /** A call that ran inside the bulkhead and the time limiter: with the attempt's signal, one permit taken and 1 s left. */
  const inside = (sight: Sight) => {
    expect(sight.signal).toBeInstanceOf(AbortSignal);
    expect(sight.available).toBe(3);
    expect(sight.remaining).toBeLessThanOrEqual(1000);
  };

  it('runs its first call of a Promise-returning method inside the policies (signal, permit, deadline), as every later one', async () => {
    const moduleRef = await boot();
    const undeclared = moduleRef.get(Undeclared);
    expect(Reflect.getMetadata('design:returntype', Undeclared.prototype, 'load')).toBeUndefined();
    await expect(undeclared.load()).resolves.toBe(1);
    await expect(undeclared.load()).resolves.toBe(2);
    expect(undeclared.sights).toHaveLength(2);
    undeclared.sights.forEach(inside);
    await moduleRef.close();
  });

  it('retries its first call by calling the method again per attempt, each inside the policies', async () => {
    const moduleRef = await boot();
    const undeclared = moduleRef.get(Undeclared);
    undeclared.failuresLeft = 2;
    await expect(undeclared.load()).resolves.toBe(3);
    expect(undeclared.calls).toBe(3);
    undeclared.sights.forEach(inside);
    await moduleRef.close();
  });

  it('calls an Observable-returning method once on its first call, and runs each subscription, from the first, lazily inside the policies', async () => {
    const moduleRef = await boot();
    const undeclared = moduleRef.get(Undeclared);
    const first = undeclared.stream() as unknown as Observable<number> & PromiseLike<number>;
    expect(isObservable(first)).toBe(true);
    await moduleRef.clock.advance(0);
    expect(undeclared.calls).toBe(1);
    expect(undeclared.subscriptions).toBe(0);
    await expect(lastValueFrom(first)).resolves.toBe(2);
    expect(undeclared.subscriptions).toBe(1);
    await expect(first).resolves.toBe(2);
    expect(undeclared.subscriptions).toBe(2);
    expect(undeclared.calls).toBe(1);
    expect(undeclared.sights).toHaveLength(2);
    undeclared.sights.forEach(inside);

    const second = undeclared.stream();
    expect(isObservable(second)).toBe(true);
    expect(undeclared.subscriptions).toBe(2);
    const values: number[] = [];
    await lastValueFrom(second.pipe(tap((value) => values.push(value))));
    expect(values).toEqual([1, 2]);
    expect(undeclared.subscriptions).toBe(3);
    expect(undeclared.calls).toBe(2);
    expect(undeclared.sights).toHaveLength(3);
    undeclared.sights.forEach(inside);
    await moduleRef.close();
  });

  it('runs the first call inside the policies when the class was compiled without decorator metadata', async () => {
    const moduleRef = await boot();
    const bare = moduleRef.get(Bare);
    expect(Reflect.hasMetadata('design:returntype', Bare.prototype, 'load')).toBe(false);
    await expect(bare.load()).resolves.toBe(1);
    await expect(bare.load()).resolves.toBe(2);
    expect(bare.sights).toHaveLength(2);
    bare.sights.forEach(inside);
    await moduleRef.close();
  });

  it("ends the first call's subscription at its time limit, as the Observable path does", async () => {
    const moduleRef = await boot();
    const undeclared = moduleRef.get(Undeclared);
    const first = undeclared.silent() as unknown as Promise<number>;
    const outcome = first.then(
      () => 'answered',
      (error: unknown) => error,
    );
    await moduleRef.clock.advance(1000);
    expect(await outcome).toBeInstanceOf(TimeoutExceededError);
    expect(undeclared.teardowns).toBe(1);
    await moduleRef.close();
  });

  it('answers the first and later requests of routes of either kind', async () => {
    const moduleRef = await boot();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    for (let i = 0; i < 2; i++) {
      await request(app.getHttpServer()).get('/undeclared/stock').expect(200).expect('8');
      await request(app.getHttpServer()).get('/undeclared/price').expect(200, { price: 3 });
    }
    await app.close();
  });
});
