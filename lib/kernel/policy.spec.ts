import { lastValueFrom, Observable, Subject, toArray } from 'rxjs';
import { observeAsCalls, Policy } from './policy';

/** A policy with only `call` (as a rate limiter or a custom policy may be): counts the calls it is running. */
class Gauge implements Policy {
  readonly name = 'gauge';
  running = 0;
  calls = 0;

  async call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    this.calls++;
    this.running++;
    try {
      return await next(arg);
    } finally {
      this.running--;
    }
  }
}

describe('observeAsCalls: a layer without an Observable operator of its own', () => {
  it('runs one call per subscription, for as long as the subscription lasts', async () => {
    const gauge = new Gauge();
    const source = new Subject<number>();
    const values: number[] = [];
    const observed = observeAsCalls((next, arg) => gauge.call(next, arg), source);
    observed.subscribe((value) => values.push(value));
    await Promise.resolve();
    expect(gauge).toMatchObject({ calls: 1, running: 1 });
    source.next(1);
    source.next(2);
    source.complete();
    await Promise.resolve();
    await Promise.resolve();
    expect(values).toEqual([1, 2]);
    expect(gauge.running).toBe(0);
  });

  it('ends the call when the subscriber unsubscribes', async () => {
    const gauge = new Gauge();
    const subscription = observeAsCalls(
      (next, arg) => gauge.call(next, arg),
      new Observable<number>(() => undefined),
    ).subscribe();
    await Promise.resolve();
    expect(gauge.running).toBe(1);
    subscription.unsubscribe();
    await Promise.resolve();
    await Promise.resolve();
    expect(gauge.running).toBe(0);
  });

  it('emits the answer of a policy that answers without subscribing (a replay)', async () => {
    const replaying: Policy = { name: 'replay', call: async <R>() => 'stored' as unknown as R };
    const source = new Observable<string>((subscriber) => subscriber.error(new Error('must not be subscribed')));
    await expect(
      lastValueFrom(observeAsCalls((next, arg) => replaying.call(next, arg), source).pipe(toArray())),
    ).resolves.toEqual(['stored']);
  });
});
