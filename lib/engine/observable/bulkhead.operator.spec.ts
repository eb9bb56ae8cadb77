import { Observable, Subscription, take } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { ResilienceContext, contextStorage, currentContext } from '../../kernel/context';
import { BulkheadFullError, DeadlineExceededError } from '../../kernel/errors';
import { isRefusal } from '../../kernel/refusal';
import { BulkheadPolicy } from '../../policies/bulkhead/bulkhead.policy';
import type { BulkheadCallFinishedEvent, BulkheadCallRejectedEvent } from '../../policies/bulkhead/bulkhead.events';
import { BulkheadConfig } from '../../policies/bulkhead/bulkhead.config';

/** What a subscriber saw. */
interface Seen {
  values: unknown[];
  error?: unknown;
  completed: boolean;
}

/**
 * A cold source on the virtual clock: each subscription answers `values`
 * after `delayMs` (or fails with `error`), noting the scope it was subscribed
 * in and counting subscriptions and teardowns.
 */
class Source {
  subscriptions = 0;
  teardowns = 0;
  scopes: Array<ResilienceContext | undefined> = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly delayMs: number,
    private readonly values: unknown[] = ['v'],
    private readonly error?: Error,
  ) {}

  readonly observable = new Observable<unknown>((subscriber) => {
    this.subscriptions++;
    this.scopes.push(currentContext());
    const timer = this.clock.setTimeout(() => {
      if (this.error !== undefined) return subscriber.error(this.error);
      for (const value of this.values) subscriber.next(value);
      subscriber.complete();
    }, this.delayMs);
    return () => {
      this.teardowns++;
      this.clock.clearTimeout(timer);
    };
  });
}

function watch(source: Observable<unknown>): { seen: Seen; subscription: Subscription } {
  const seen: Seen = { values: [], completed: false };
  const subscription = source.subscribe({
    next: (value) => seen.values.push(value),
    error: (error: unknown) => (seen.error = error),
    complete: () => (seen.completed = true),
  });
  return { seen, subscription };
}

describe('BulkheadPolicy.observe', () => {
  let clock: VirtualClock;
  const bulkhead = (config: Partial<BulkheadConfig>): BulkheadPolicy =>
    new BulkheadPolicy('feeds', { maxConcurrentCalls: 1, maxWaitDuration: 0, ...config }, clock);

  beforeEach(() => {
    clock = new VirtualClock();
  });

  it('holds a permit from subscribe to completion and reports how long it was held', async () => {
    const b = bulkhead({ maxConcurrentCalls: 2 });
    const finished: BulkheadCallFinishedEvent[] = [];
    const permitted: string[] = [];
    b.onCallFinished((e) => finished.push(e));
    b.onCallPermitted((e) => permitted.push(e.name));
    const source = new Source(clock, 30, ['a', 'b']);
    const bounded = b.observe(source.observable);
    expect(source.subscriptions).toBe(0);

    const { seen } = watch(bounded);
    expect(source.subscriptions).toBe(1);
    expect(permitted).toEqual(['feeds']);
    expect(b.metrics.availableConcurrentCalls).toBe(1);
    await clock.advance(30);
    expect(seen).toEqual({ values: ['a', 'b'], completed: true });
    expect(b.metrics.availableConcurrentCalls).toBe(2);
    expect(finished).toEqual([{ name: 'feeds', durationMs: 30 }]);
  });

  it('releases the permit once when the source fails, passing its error on', async () => {
    const b = bulkhead({});
    const finished: number[] = [];
    b.onCallFinished((e) => finished.push(e.durationMs));
    const boom = new Error('boom');
    const { seen } = watch(b.observe(new Source(clock, 20, [], boom).observable));
    await clock.advance(20);
    expect(seen).toEqual({ values: [], error: boom, completed: false });
    expect(b.metrics.availableConcurrentCalls).toBe(1);
    expect(finished).toEqual([20]);
  });

  it('releases the permit and tears the source down when the subscriber unsubscribes', async () => {
    const b = bulkhead({});
    const finished: number[] = [];
    b.onCallFinished((e) => finished.push(e.durationMs));
    const source = new Source(clock, 100);
    const { seen, subscription } = watch(b.observe(source.observable));
    await clock.advance(40);
    subscription.unsubscribe();
    expect(source.teardowns).toBe(1);
    expect(b.metrics.availableConcurrentCalls).toBe(1);
    expect(finished).toEqual([40]);
    subscription.unsubscribe();
    await clock.advance(100);
    expect(seen).toEqual({ values: [], completed: false });
    expect(b.metrics.availableConcurrentCalls).toBe(1);
    expect(finished).toEqual([40]);
  });

  it('releases the permit of a synchronous source the subscriber leaves after its first value', () => {
    const b = bulkhead({});
    let teardowns = 0;
    const sync = new Observable<number>((subscriber) => {
      for (let i = 0; i < 3; i++) subscriber.next(i);
      subscriber.complete();
      return () => teardowns++;
    });
    const { seen } = watch(b.observe(sync).pipe(take(1)));
    expect(seen).toEqual({ values: [0], completed: true });
    expect(teardowns).toBe(1);
    expect(b.metrics.availableConcurrentCalls).toBe(1);
  });

  it('tears down a synchronous source the subscriber left after its first value, once served from the queue', async () => {
    const b = bulkhead({ maxWaitDuration: 1000 });
    let teardowns = 0;
    // The source never completes: only the bulkhead can tear it down.
    const sync = new Observable<number>((subscriber) => {
      for (let i = 0; i < 3; i++) subscriber.next(i);
      return () => teardowns++;
    });
    watch(b.observe(new Source(clock, 10).observable));
    const { seen } = watch(b.observe(sync).pipe(take(1)));
    expect(b.metrics.queueDepth).toBe(1);
    await clock.advance(10);
    expect(seen).toEqual({ values: [0], completed: true });
    expect(teardowns).toBe(1);
    expect(b.metrics).toEqual({ availableConcurrentCalls: 1, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
  });

  it('refuses on subscribe with a BulkheadFullError (a refusal) when the queue is full, without subscribing the source', () => {
    const b = bulkhead({});
    const rejected: BulkheadCallRejectedEvent[] = [];
    b.onCallRejected((e) => rejected.push(e));
    const source = new Source(clock, 100);
    watch(b.observe(source.observable));
    const { seen, subscription } = watch(b.observe(source.observable));
    expect(seen.error).toBeInstanceOf(BulkheadFullError);
    expect(seen.error).toMatchObject({ reason: 'queue-full', instance: 'feeds' });
    expect(isRefusal(seen.error)).toBe(true);
    expect(rejected.map((e) => e.reason)).toEqual(['queue-full']);
    expect(source.subscriptions).toBe(1);
    subscription.unsubscribe();
    expect(b.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
  });

  it('waits in the queue and subscribes the source, in the subscriber’s scope, once a permit is handed over', async () => {
    const b = bulkhead({ maxWaitDuration: 1000 });
    const permitted: string[] = [];
    const finished: number[] = [];
    b.onCallPermitted((e) => permitted.push(e.name));
    b.onCallFinished((e) => finished.push(e.durationMs));
    const source = new Source(clock, 10);
    watch(b.observe(source.observable));
    const scope = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
    const { seen } = contextStorage.run(scope, () => watch(b.observe(source.observable)));
    expect(b.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 1, queueDepth: 1 });
    expect(source.subscriptions).toBe(1);
    expect(permitted).toEqual(['feeds']);

    await clock.advance(10);
    expect(source.subscriptions).toBe(2);
    expect(source.scopes[1]).toBe(scope);
    expect(permitted).toEqual(['feeds', 'feeds']);
    expect(b.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 1, queueDepth: 0 });

    await clock.advance(10);
    expect(seen).toEqual({ values: ['v'], completed: true });
    expect(finished).toEqual([10, 10]);
    expect(b.metrics.availableConcurrentCalls).toBe(1);
  });

  it('starts a waiter it hands the permit to once the subscriber of the call that gave it back has the outcome', async () => {
    const b = bulkhead({ maxWaitDuration: 1000 });
    const first = new Source(clock, 10);
    const second = new Source(clock, 10);
    const atOutcome: object[] = [];
    b.observe(first.observable).subscribe({
      complete: () => atOutcome.push({ subscriptions: second.subscriptions, ...b.metrics }),
    });
    const { seen } = watch(b.observe(second.observable));
    await clock.advance(10);
    // The permit was already the waiter's (none free, none queued), but its source had not started.
    expect(atOutcome).toEqual([
      { subscriptions: 0, availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 1, queueDepth: 0 },
    ]);
    expect(second.subscriptions).toBe(1);
    await clock.advance(10);
    expect(seen).toEqual({ values: ['v'], completed: true });
  });

  it('gives back unused, with no event, a permit handed to a subscription left before it started', async () => {
    const b = bulkhead({ maxWaitDuration: 1000 });
    const permitted: string[] = [];
    const finished: number[] = [];
    b.onCallPermitted((e) => permitted.push(e.name));
    b.onCallFinished((e) => finished.push(e.durationMs));
    const source = new Source(clock, 10);
    const waiter: { subscription?: Subscription } = {};
    b.observe(source.observable).subscribe({ complete: () => waiter.subscription?.unsubscribe() });
    waiter.subscription = watch(b.observe(source.observable)).subscription;
    await clock.advance(10);
    expect(source.subscriptions).toBe(1);
    expect(permitted).toEqual(['feeds']);
    expect(finished).toEqual([10]);
    expect(b.metrics).toEqual({ availableConcurrentCalls: 1, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
  });

  it('has the permit of a failed subscription back when its subscriber hears the error, for a retry at once', async () => {
    const b = bulkhead({});
    const source = new Source(clock, 10, [], new Error('boom'));
    const bounded = b.observe(source.observable);
    let retried: Seen | undefined;
    bounded.subscribe({ error: () => (retried = watch(bounded).seen) });
    await clock.advance(10);
    expect(retried?.error).toBeUndefined();
    expect(source.subscriptions).toBe(2);
    expect(b.metrics.availableConcurrentCalls).toBe(0);
  });

  it('leaves the queue quietly when unsubscribed while waiting: no event, no subscription, the permit goes back', async () => {
    const b = bulkhead({ maxWaitDuration: 1000 });
    const rejected: string[] = [];
    b.onCallRejected((e) => rejected.push(e.reason));
    const source = new Source(clock, 10);
    watch(b.observe(source.observable));
    const { seen, subscription } = watch(b.observe(source.observable));
    expect(b.metrics.queueDepth).toBe(1);
    subscription.unsubscribe();
    expect(b.metrics.queueDepth).toBe(0);
    subscription.unsubscribe();

    await clock.advance(1000);
    expect(source.subscriptions).toBe(1);
    expect(source.teardowns).toBe(1);
    expect(rejected).toEqual([]);
    expect(seen).toEqual({ values: [], completed: false });
    expect(b.metrics).toEqual({ availableConcurrentCalls: 1, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
  });

  it('fails a waiting subscription with wait-timeout after maxWaitDuration, never subscribing the source', async () => {
    const b = bulkhead({ maxWaitDuration: 50 });
    const source = new Source(clock, 200);
    watch(b.observe(source.observable));
    const { seen, subscription } = watch(b.observe(source.observable));
    await clock.advance(49);
    expect(seen.error).toBeUndefined();
    await clock.advance(1);
    expect(seen.error).toBeInstanceOf(BulkheadFullError);
    expect(seen.error).toMatchObject({ reason: 'wait-timeout', retryAfterMs: 50 });
    expect(b.metrics.queueDepth).toBe(0);
    subscription.unsubscribe();

    await clock.advance(150);
    expect(source.subscriptions).toBe(1);
    expect(b.metrics).toEqual({ availableConcurrentCalls: 1, maxAllowedConcurrentCalls: 1, queueDepth: 0 });
  });

  it('fails a waiting subscription with DeadlineExceededError when its request deadline passes', async () => {
    const b = bulkhead({ maxWaitDuration: 1000 });
    const source = new Source(clock, 200);
    watch(b.observe(source.observable));
    const request = new ResilienceContext(clock, 30);
    const { seen } = contextStorage.run(request, () => watch(b.observe(source.observable)));
    await clock.advance(30);
    expect(seen.error).toBeInstanceOf(DeadlineExceededError);
    expect(b.metrics.queueDepth).toBe(0);
    await clock.advance(170);
    expect(source.subscriptions).toBe(1);
    request.dispose();
  });
});
