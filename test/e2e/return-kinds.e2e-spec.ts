import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { isObservable, lastValueFrom, Observable, of } from 'rxjs';
import { Bulkhead, CircuitBreaker, ResilienceModule, Retry, Timeout, VirtualClock } from '../../lib';
import { DECORATOR_ON_PLAIN_VALUE, DECORATOR_ON_STATIC } from '../../lib/resilience.messages';

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
