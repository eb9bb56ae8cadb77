import { Observable, Subscription, take } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, currentContext, currentSignal, ResilienceContext } from '../../kernel/context';
import { DeadlineExceededError, TimeoutExceededError } from '../../kernel/errors';
import { isRefusal } from '../../kernel/refusal';
import { TimeLimiter } from '../../policies/time-limiter/time-limiter.policy';
import type { TimeLimiterEvent } from '../../policies/time-limiter/time-limiter.events';

/** What a subscriber saw, with the virtual time of the end. */
interface Seen {
  values: unknown[];
  error?: unknown;
  completed: boolean;
  at?: number;
}

/**
 * A cold source on the virtual clock that emits `values` at the given times
 * after subscribing, then completes at `endAt` (never when undefined); notes
 * the scope and signal it was subscribed with and counts teardowns.
 */
class Source {
  subscriptions = 0;
  teardowns = 0;
  scopes: Array<ResilienceContext | undefined> = [];
  signals: Array<AbortSignal | undefined> = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly emitAt: number[],
    private readonly endAt?: number,
    private readonly error?: Error,
  ) {}

  readonly observable = new Observable<number>((subscriber) => {
    this.subscriptions++;
    this.scopes.push(currentContext());
    this.signals.push(currentSignal());
    const timers = this.emitAt.map((at, i) => this.clock.setTimeout(() => subscriber.next(i), at));
    if (this.endAt !== undefined) {
      timers.push(
        this.clock.setTimeout(
          () => (this.error === undefined ? subscriber.complete() : subscriber.error(this.error)),
          this.endAt,
        ),
      );
    }
    return () => {
      this.teardowns++;
      for (const timer of timers) this.clock.clearTimeout(timer);
    };
  });
}

describe('TimeLimiter.observe', () => {
  let clock: VirtualClock;
  let events: TimeLimiterEvent['kind'][];
  beforeEach(() => {
    clock = new VirtualClock();
    events = [];
  });

  const limiter = (timeoutDuration = 100, cancelRunningFuture = true): TimeLimiter => {
    const tl = new TimeLimiter('stream', { timeoutDuration, cancelRunningFuture }, clock);
    tl.onSuccess((e) => events.push(e.kind));
    tl.onError((e) => events.push(e.kind));
    tl.onTimeout((e) => events.push(e.kind));
    return tl;
  };

  function watch(source: Observable<unknown>): { seen: Seen; subscription: Subscription } {
    const seen: Seen = { values: [], completed: false };
    const subscription = source.subscribe({
      next: (value) => seen.values.push(value),
      error: (error: unknown) => Object.assign(seen, { error, at: clock.now() }),
      complete: () => Object.assign(seen, { completed: true, at: clock.now() }),
    });
    return { seen, subscription };
  }

  it('lets a source through whose every value comes within the limit of the one before', async () => {
    const tl = limiter(100);
    const source = new Source(clock, [60, 120, 180, 270], 360);
    const { seen } = watch(tl.observe(source.observable));
    await clock.advance(1000);
    expect(seen).toEqual({ values: [0, 1, 2, 3], completed: true, at: 360 });
    expect(source.teardowns).toBe(1);
    expect(events).toEqual(['successful']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('fails with TimeoutExceededError of the full limit when a gap runs out, aborting and tearing down the source', async () => {
    const tl = limiter(100);
    const source = new Source(clock, [60, 250], 300);
    const { seen } = watch(tl.observe(source.observable));
    await clock.advance(159);
    expect(seen.error).toBeUndefined();
    await clock.advance(1);
    expect(seen.values).toEqual([0]);
    expect(seen.error).toBeInstanceOf(TimeoutExceededError);
    expect(seen.error).toMatchObject({ instance: 'stream', timeoutMs: 100 });
    expect(seen.at).toBe(160);
    expect(source.teardowns).toBe(1);
    expect(source.signals[0]?.aborted).toBe(true);
    expect(source.signals[0]?.reason).toBe(seen.error);
    expect(events).toEqual(['timeout']);
    await clock.advance(1000);
    expect(seen.values).toEqual([0]);
  });

  it('leaves the source signal alone on timeout when cancelRunningFuture is false', async () => {
    const tl = limiter(100, false);
    const source = new Source(clock, [], 500);
    const { seen } = watch(tl.observe(source.observable));
    await clock.advance(100);
    expect(seen.error).toBeInstanceOf(TimeoutExceededError);
    expect(source.signals[0]?.aborted).toBe(false);
    expect(source.teardowns).toBe(1);
  });

  it('subscribes the source in an attempt scope under the caller’s, ending at the limit', () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 10_000, 'x-budget');
    const source = new Source(clock, []);
    const { subscription } = contextStorage.run(request, () => watch(tl.observe(source.observable)));
    const scope = source.scopes[0];
    expect(scope?.parent).toBe(request);
    expect(scope?.deadline).toBe(100);
    expect(scope?.header).toBe('x-budget');
    subscription.unsubscribe();
    request.dispose();
  });

  it('passes an error of the source on as it is, with a failed event', async () => {
    const tl = limiter(100);
    const boom = new Error('boom');
    const source = new Source(clock, [10], 50, boom);
    const { seen } = watch(tl.observe(source.observable));
    await clock.advance(1000);
    expect(seen).toEqual({ values: [0], error: boom, completed: false, at: 50 });
    expect(events).toEqual(['failed']);
  });

  it('on unsubscribe: tears the source down, reports nothing and fires no timeout later', async () => {
    const tl = limiter(100);
    const source = new Source(clock, [50]);
    const { seen, subscription } = watch(tl.observe(source.observable));
    await clock.advance(30);
    subscription.unsubscribe();
    subscription.unsubscribe();
    expect(source.teardowns).toBe(1);
    await clock.advance(1000);
    expect(seen).toEqual({ values: [], completed: false });
    expect(events).toEqual([]);
  });

  it('tears down a synchronous source the subscriber left while it was subscribing', () => {
    const tl = limiter(100);
    let teardowns = 0;
    const source = new Observable<number>((subscriber) => {
      subscriber.next(1);
      subscriber.next(2);
      return () => teardowns++;
    });
    const { seen } = watch(tl.observe(source).pipe(take(1)));
    expect(seen).toEqual({ values: [1], completed: true, at: 0 });
    expect(teardowns).toBe(1);
    // Left after a value came in time (as firstValueFrom leaves): a successful call, as a promise attempt's value is.
    expect(events).toEqual(['successful']);
  });

  it('refuses at once with DeadlineExceededError when the request has no time left, never subscribing', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 50);
    await clock.advance(50);
    const source = new Source(clock, [10], 20);
    const { seen } = contextStorage.run(request, () => watch(tl.observe(source.observable)));
    expect(seen.error).toBeInstanceOf(DeadlineExceededError);
    expect((seen.error as Error).message).toBe(
      "Deadline exceeded at 'stream': no time left within the request deadline",
    );
    expect(isRefusal(seen.error)).toBe(true);
    expect(source.subscriptions).toBe(0);
    expect(events).toEqual(['timeout']);
  });

  it('ends at the request deadline when it comes before the limit, as DeadlineExceededError', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 70);
    const source = new Source(clock, [], 500);
    const { seen } = contextStorage.run(request, () => watch(tl.observe(source.observable)));
    await clock.advance(69);
    expect(seen.error).toBeUndefined();
    await clock.advance(1);
    expect(seen.error).toBeInstanceOf(DeadlineExceededError);
    expect(source.teardowns).toBe(1);
    request.dispose();
  });

  it('shortens a later gap to the request deadline and reports running into it as DeadlineExceededError', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 250);
    const source = new Source(clock, [80, 170], 400);
    const { seen } = contextStorage.run(request, () => watch(tl.observe(source.observable)));
    await clock.advance(249);
    expect(seen.values).toEqual([0, 1]);
    expect(seen.error).toBeUndefined();
    await clock.advance(1);
    expect(seen.error).toBeInstanceOf(DeadlineExceededError);
    expect(seen.at).toBe(250);
    request.dispose();
  });

  it('does not extend a gap with a value that comes after the request was aborted', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 10_000);
    const source = new Source(clock, [50, 90], 1000);
    const { seen } = contextStorage.run(request, () => watch(tl.observe(source.observable)));
    await clock.advance(60);
    request.abort(new Error('client left'));
    await clock.advance(100);
    // The value at 90 came after the abort: the gap from the value at 50 still ends at 150.
    expect(seen.values).toEqual([0, 1]);
    expect(seen.error).toBeInstanceOf(TimeoutExceededError);
    expect(seen.at).toBe(150);
    request.dispose();
  });

  it('times out subscriptions on the shared timer each at its own limit', async () => {
    const tl = limiter(100);
    const seen: Seen[] = [];
    for (let i = 0; i < 3; i++) {
      seen.push(watch(tl.observe(new Source(clock, [], 1000).observable)).seen);
      await clock.advance(30);
    }
    await clock.advance(200);
    expect(seen.map((s) => s.at)).toEqual([100, 130, 160]);
    expect(seen.every((s) => s.error instanceof TimeoutExceededError)).toBe(true);
  });
  it('shares one timer among subscriptions limited by timeoutDuration alone', () => {
    const tl = limiter(100);
    const subscriptions = [0, 1, 2].map(() => watch(tl.observe(new Source(clock, []).observable)).subscription);
    expect(clock.pendingTimers).toBe(1);
    for (const subscription of subscriptions) subscription.unsubscribe();
  });

  it('leaves no timer behind for a subscription cut short by the request deadline that completes in time', async () => {
    const tl = limiter(100);
    const request = new ResilienceContext(clock, 50);
    const quick = new Observable<number>((subscriber) => {
      const timer = clock.setTimeout(() => (subscriber.next(0), subscriber.complete()), 10);
      return () => clock.clearTimeout(timer);
    });
    const { seen } = contextStorage.run(request, () => watch(tl.observe(quick)));
    expect(clock.pendingTimers).toBe(2);
    await clock.advance(10);
    expect(seen).toEqual({ values: [0], completed: true, at: 10 });
    expect(clock.pendingTimers).toBe(0);
  });
  it('with timeoutDuration 0, lets through a source that completes while subscribing', () => {
    const tl = limiter(0);
    const sync = new Observable<number>((subscriber) => {
      subscriber.next(1);
      subscriber.complete();
    });
    expect(watch(tl.observe(sync)).seen).toEqual({ values: [1], completed: true, at: 0 });
  });
});
