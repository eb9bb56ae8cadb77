import { defer, firstValueFrom, lastValueFrom, Observable, of, Subscriber, Subscription } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, currentContext, ResilienceContext } from '../../kernel/context';
import { BulkheadFullError, MaxRetriesExceededError } from '../../kernel/errors';
import { refusal } from '../../kernel/refusal';
import { RetryPolicy } from '../../policies/retry/retry.policy';
import type { RetryEvent, RetryStoppedEvent } from '../../policies/retry/retry.events';
import { RETRY_SCHEMA, RetryConfig } from '../../policies/retry/retry.config';

const config = (overrides: Partial<RetryConfig> = {}): RetryConfig => ({
  ...RETRY_SCHEMA.defaults,
  jitter: 'none',
  ...overrides,
});
const retryOnResult = (r: unknown) => (r as { status: string }).status === 'PENDING';

// Resilience4j RetryImpl: a result still retryable when attempts run out is a failed call with retry (ERROR), not a success.
describe('RetryPolicy.observe with retryOnResult', () => {
  it('re-subscribes while the value asks for a retry, then lets the last value out counted as failed with retry', async () => {
    const clock = new VirtualClock();
    const policy = new RetryPolicy('poll', config({ maxAttempts: 3, waitDuration: 5, retryOnResult }), clock);
    let subscriptions = 0;
    const outcomes: string[] = [];
    policy.onSuccess(() => outcomes.push('SUCCESS'));
    policy.onError(() => outcomes.push('ERROR'));
    const result = lastValueFrom(policy.observe(defer(() => (subscriptions++, of({ status: 'PENDING' })))));
    await clock.advance(10);
    await expect(result).resolves.toEqual({ status: 'PENDING' });
    expect(subscriptions).toBe(3);
    expect(policy.metrics).toMatchObject({
      failedCallsWithRetry: 1,
      successfulCallsWithRetry: 0,
      successfulCallsWithoutRetry: 0,
    });
    expect(outcomes).toEqual(['ERROR']);
  });

  it('errors with MaxRetriesExceededError when failAfterMaxAttempts, counted once', async () => {
    const clock = new VirtualClock();
    const policy = new RetryPolicy(
      'poll',
      config({ maxAttempts: 2, waitDuration: 5, retryOnResult, failAfterMaxAttempts: true }),
      clock,
    );
    const result = lastValueFrom(policy.observe(of({ status: 'PENDING' })));
    const settled = expect(result).rejects.toBeInstanceOf(MaxRetriesExceededError);
    await clock.advance(5);
    await settled;
    expect(policy.metrics).toMatchObject({ failedCallsWithRetry: 1, successfulCallsWithRetry: 0 });
  });
});

class Unavailable extends Error {
  readonly status = 503;
}

/** What a subscriber saw. */
interface Seen {
  values: unknown[];
  error?: unknown;
  completed: boolean;
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

/**
 * A cold source on the virtual clock: subscription n plays `script[n]` (the
 * last one again after the end) after its delay, noting the scope it was
 * subscribed in and counting subscriptions and teardowns.
 */
class Source {
  subscriptions = 0;
  teardowns = 0;
  scopes: Array<ResilienceContext | undefined> = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly script: Array<{ delayMs: number; error?: unknown; values?: unknown[] }>,
  ) {}

  readonly observable = new Observable<unknown>((subscriber) => {
    const step = this.script[Math.min(this.subscriptions, this.script.length - 1)];
    this.subscriptions++;
    this.scopes.push(currentContext());
    const timer = this.clock.setTimeout(() => {
      if (step.error !== undefined) return subscriber.error(step.error);
      for (const value of step.values ?? ['ok']) subscriber.next(value);
      subscriber.complete();
    }, step.delayMs);
    return () => {
      this.teardowns++;
      this.clock.clearTimeout(timer);
    };
  });
}

describe('RetryPolicy.observe', () => {
  let clock: VirtualClock;
  beforeEach(() => (clock = new VirtualClock()));

  it('re-subscribes after a retryable error with the backoff wait, and counts a success with retry', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 3, waitDuration: 100 }), clock);
    const retries: RetryEvent[] = [];
    policy.onRetry((e) => retries.push(e));
    const failure = new Unavailable('busy');
    const source = new Source(clock, [
      { delayMs: 10, error: failure },
      { delayMs: 10, values: ['a', 'b'] },
    ]);
    const { seen } = watch(policy.observe(source.observable));
    await clock.advance(10);
    expect(source.subscriptions).toBe(1);
    expect(retries).toEqual([{ name: 'feed', attempt: 1, waitMs: 100, error: failure }]);
    await clock.advance(99);
    expect(source.subscriptions).toBe(1);
    await clock.advance(1);
    expect(source.subscriptions).toBe(2);
    await clock.advance(10);
    expect(seen).toEqual({ values: ['a', 'b'], completed: true });
    expect(policy.metrics).toEqual({
      successfulCallsWithoutRetry: 0,
      successfulCallsWithRetry: 1,
      failedCallsWithoutRetry: 0,
      failedCallsWithRetry: 0,
      budgetDenied: 0,
    });
  });

  it('counts a first-attempt completion as a success without retry', async () => {
    const policy = new RetryPolicy('feed', config(), clock);
    const outcomes: number[] = [];
    policy.onSuccess((e) => outcomes.push(e.attempts));
    const { seen } = watch(policy.observe(new Source(clock, [{ delayMs: 5 }]).observable));
    await clock.advance(5);
    expect(seen).toEqual({ values: ['ok'], completed: true });
    expect(policy.metrics).toMatchObject({ successfulCallsWithoutRetry: 1, successfulCallsWithRetry: 0 });
    expect(outcomes).toEqual([1]);
  });

  it('gives up after maxAttempts with the last error, counted once as failed with retry', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 2, waitDuration: 10 }), clock);
    const stopped: RetryStoppedEvent[] = [];
    policy.onRetryStopped((e) => stopped.push(e));
    const last = new Unavailable('still busy');
    const source = new Source(clock, [
      { delayMs: 0, error: new Unavailable('busy') },
      { delayMs: 0, error: last },
    ]);
    const { seen } = watch(policy.observe(source.observable));
    await clock.advance(100);
    expect(seen).toEqual({ values: [], error: last, completed: false });
    expect(source.subscriptions).toBe(2);
    expect(stopped).toEqual([{ name: 'feed', attempt: 2, reason: 'max-attempts', error: last }]);
    expect(policy.metrics).toMatchObject({ failedCallsWithRetry: 1, failedCallsWithoutRetry: 0 });
  });

  it('does not retry an error outside the retryable set: failed without retry', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 3, waitDuration: 10 }), clock);
    const bug = new TypeError('bug');
    const source = new Source(clock, [{ delayMs: 0, error: bug }]);
    const { seen } = watch(policy.observe(source.observable));
    await clock.advance(100);
    expect(seen.error).toBe(bug);
    expect(source.subscriptions).toBe(1);
    expect(policy.metrics).toMatchObject({ failedCallsWithoutRetry: 1, failedCallsWithRetry: 0 });
  });

  it('grows decorrelated jitter from the previous wait, starting from waitDuration', async () => {
    const policy = new RetryPolicy(
      'feed',
      config({ maxAttempts: 3, waitDuration: 100, jitter: 'decorrelated' }),
      clock,
      () => 0.5,
    );
    const waits: number[] = [];
    policy.onRetry((e) => waits.push(e.waitMs));
    const source = new Source(clock, [{ delayMs: 0, error: new Unavailable('busy') }]);
    watch(policy.observe(source.observable));
    await clock.advance(10_000);
    // upper = max(base, 3 × previous): 100 + 0.5 × (300 − 100 + 1), then 100 + 0.5 × (600 − 100 + 1)
    expect(waits).toEqual([200, 350]);
    expect(source.subscriptions).toBe(3);
  });

  it('re-subscribes at once and synchronously when the wait is 0', () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 3, waitDuration: 0 }), clock);
    let subscriptions = 0;
    const source = new Observable<string>((subscriber) => {
      if (subscriptions++ === 0) subscriber.error(new Unavailable('busy'));
      else {
        subscriber.next('second');
        subscriber.complete();
      }
    });
    const { seen } = watch(policy.observe(source));
    expect(seen).toEqual({ values: ['second'], completed: true });
    expect(subscriptions).toBe(2);
    expect(clock.pendingTimers).toBe(0);
  });

  it('hears only the current attempt of a synchronous source that goes on after failing', () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 2, waitDuration: 0 }), clock);
    let subscriptions = 0;
    const source = new Observable<string>((subscriber) => {
      const n = ++subscriptions;
      if (n === 1) {
        // A misbehaving source: it keeps notifying after its error.
        subscriber.error(new Unavailable('busy'));
        subscriber.next('stale');
        subscriber.complete();
        return;
      }
      subscriber.next(`attempt ${n}`);
      subscriber.complete();
    });
    const { seen } = watch(policy.observe(source));
    expect(seen).toEqual({ values: ['attempt 2'], completed: true });
    expect(policy.metrics).toMatchObject({ successfulCallsWithRetry: 1, successfulCallsWithoutRetry: 0 });
  });

  it('tears down an attempt that a retry replaced while it was still subscribing', () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 2, waitDuration: 0 }), clock);
    let subscriptions = 0;
    let teardowns = 0;
    const source = new Observable<string>((subscriber) => {
      subscriptions++;
      if (subscriptions === 1) subscriber.error(new Unavailable('busy'));
      else subscriber.next('live');
      return () => teardowns++;
    });
    const { seen, subscription } = watch(policy.observe(source));
    expect(seen.values).toEqual(['live']);
    expect(teardowns).toBe(1);
    subscription.unsubscribe();
    expect(teardowns).toBe(2);
  });

  it('on unsubscribe during the wait: cancels the retry timer, never re-subscribes, counts nothing', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 3, waitDuration: 100 }), clock);
    const source = new Source(clock, [{ delayMs: 10, error: new Unavailable('busy') }]);
    const { seen, subscription } = watch(policy.observe(source.observable));
    await clock.advance(10);
    expect(clock.pendingTimers).toBe(1);
    subscription.unsubscribe();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(1000);
    expect(source.subscriptions).toBe(1);
    expect(seen).toEqual({ values: [], completed: false });
    expect(policy.metrics).toEqual({
      successfulCallsWithoutRetry: 0,
      successfulCallsWithRetry: 0,
      failedCallsWithoutRetry: 0,
      failedCallsWithRetry: 0,
      budgetDenied: 0,
    });
  });

  it('on unsubscribe after a value (as firstValueFrom does): tears the source down and counts a success', async () => {
    const policy = new RetryPolicy('feed', config(), clock);
    let teardowns = 0;
    const source = new Observable<string>((subscriber) => {
      subscriber.next('first');
      return () => teardowns++;
    });
    const { seen, subscription } = watch(policy.observe(source));
    expect(seen.values).toEqual(['first']);
    subscription.unsubscribe();
    subscription.unsubscribe();
    expect(teardowns).toBe(1);
    expect(policy.metrics).toMatchObject({ successfulCallsWithoutRetry: 1, successfulCallsWithRetry: 0 });
    await expect(firstValueFrom(policy.observe(source))).resolves.toBe('first');
    expect(policy.metrics).toMatchObject({ successfulCallsWithoutRetry: 2 });
  });

  it('on unsubscribe before any value: tears the source down and counts nothing', async () => {
    const policy = new RetryPolicy('feed', config(), clock);
    const source = new Source(clock, [{ delayMs: 100 }]);
    const { subscription } = watch(policy.observe(source.observable));
    subscription.unsubscribe();
    expect(source.teardowns).toBe(1);
    await clock.advance(100);
    expect(policy.metrics).toMatchObject({ successfulCallsWithoutRetry: 0, failedCallsWithoutRetry: 0 });
  });

  it('decides and re-subscribes in the scope it was subscribed in: no wait past its deadline', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 5, waitDuration: 100 }), clock);
    const stopped: string[] = [];
    policy.onRetryStopped((e) => stopped.push(e.reason));
    const failure = new Unavailable('busy');
    const source = new Source(clock, [{ delayMs: 10, error: failure }]);
    const request = new ResilienceContext(clock, 200);
    const { seen } = contextStorage.run(request, () => watch(policy.observe(source.observable)));
    await clock.advance(1000);
    // Attempts at 0 and 110 fail at 10 and 120; a wait of 100 from 120 would pass the deadline at 200.
    expect(source.subscriptions).toBe(2);
    expect(source.scopes).toEqual([request, request]);
    expect(stopped).toEqual(['deadline']);
    expect(seen.error).toBe(failure);
    request.dispose();
  });

  it('re-subscribes at once in the scope it was subscribed in, whatever context the failure came from', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 2, waitDuration: 0 }), clock);
    // The failure is told from a timer the virtual clock fires outside the request's scope.
    const source = new Source(clock, [{ delayMs: 10, error: new Unavailable('busy') }, { delayMs: 10 }]);
    const request = new ResilienceContext(clock, 200);
    const { seen } = contextStorage.run(request, () => watch(policy.observe(source.observable)));
    await clock.advance(20);
    expect(source.scopes).toEqual([request, request]);
    expect(seen).toEqual({ values: ['ok'], completed: true });
    request.dispose();
  });

  it('ends with the error of the last attempt that reached the source when a later attempt is refused', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 3, waitDuration: 10 }), clock);
    const reached = new Unavailable('busy');
    const refused = refusal(new BulkheadFullError('pool'));
    const source = new Source(clock, [
      { delayMs: 0, error: reached },
      { delayMs: 0, error: refused },
    ]);
    const { seen } = watch(policy.observe(source.observable));
    await clock.advance(100);
    expect(source.subscriptions).toBe(2);
    expect(seen.error).toBe(reached);
    expect((seen.error as Error).cause).toBe(refused);
    expect(policy.metrics).toMatchObject({ failedCallsWithRetry: 1 });
  });

  it('ends with the refusal itself when no attempt reached the source', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 3, waitDuration: 10 }), clock);
    const refused = refusal(new BulkheadFullError('pool'));
    const source = new Source(clock, [{ delayMs: 0, error: refused }]);
    const { seen } = watch(policy.observe(source.observable));
    await clock.advance(100);
    expect(seen.error).toBe(refused);
    expect(refused.cause).toBeUndefined();
    expect(policy.metrics).toMatchObject({ failedCallsWithoutRetry: 1 });
  });

  it('keeps the latest reached error when a retried refusal is followed by another refusal', async () => {
    const policy = new RetryPolicy(
      'feed',
      config({ maxAttempts: 3, waitDuration: 10, retryExceptions: [BulkheadFullError] }),
      clock,
    );
    const reached = new Unavailable('busy');
    const first = refusal(new BulkheadFullError('pool'));
    const second = refusal(new BulkheadFullError('pool'));
    const source = new Source(clock, [
      { delayMs: 0, error: reached },
      { delayMs: 0, error: first },
      { delayMs: 0, error: second },
    ]);
    const { seen } = watch(policy.observe(source.observable));
    await clock.advance(100);
    expect(source.subscriptions).toBe(3);
    expect(seen.error).toBe(reached);
    expect((seen.error as Error).cause).toBe(second);
  });

  it('retries a value retryOnResult rejects and lets the accepted one out, counted as a success with retry', async () => {
    const policy = new RetryPolicy('poll', config({ maxAttempts: 3, waitDuration: 5, retryOnResult }), clock);
    const source = new Source(clock, [
      { delayMs: 0, values: [{ status: 'PENDING' }] },
      { delayMs: 0, values: [{ status: 'DONE' }] },
    ]);
    const { seen } = watch(policy.observe(source.observable));
    await clock.advance(0);
    expect(source.teardowns).toBe(1);
    await clock.advance(5);
    expect(seen).toEqual({ values: [{ status: 'DONE' }], completed: true });
    expect(policy.metrics).toMatchObject({ successfulCallsWithRetry: 1, failedCallsWithRetry: 0 });
  });

  it('checks only the first value against retryOnResult once retries ran out', async () => {
    const predicate = jest.fn(retryOnResult);
    const policy = new RetryPolicy('poll', config({ maxAttempts: 1, retryOnResult: predicate }), clock);
    const { seen } = watch(policy.observe(of({ status: 'PENDING' }, { status: 'PENDING' })));
    expect(seen.values).toHaveLength(2);
    expect(seen.completed).toBe(true);
    expect(predicate).toHaveBeenCalledTimes(1);
    expect(policy.metrics).toMatchObject({ failedCallsWithoutRetry: 1, successfulCallsWithoutRetry: 0 });
  });

  it('counts nothing more when the subscriber leaves after a value that ran out of retries', () => {
    const policy = new RetryPolicy('poll', config({ maxAttempts: 1, retryOnResult }), clock);
    const source = new Observable<unknown>((subscriber) => subscriber.next({ status: 'PENDING' }));
    const { seen, subscription } = watch(policy.observe(source));
    expect(seen.values).toEqual([{ status: 'PENDING' }]);
    subscription.unsubscribe();
    expect(policy.metrics).toMatchObject({ failedCallsWithoutRetry: 1, successfulCallsWithoutRetry: 0 });
  });

  it('fails with the error of a throwing retryOnResult, unsubscribing the source', () => {
    const oops = new Error('predicate failed');
    const policy = new RetryPolicy(
      'poll',
      config({
        retryOnResult: () => {
          throw oops;
        },
      }),
      clock,
    );
    let teardowns = 0;
    let sent = 0;
    const source = new Observable<string>((subscriber) => {
      const timer = clock.setTimeout(() => {
        sent++;
        subscriber.next('v');
        sent++;
        subscriber.next('w');
      }, 1);
      return () => {
        teardowns++;
        clock.clearTimeout(timer);
      };
    });
    const { seen } = watch(policy.observe(source));
    return clock.advance(1).then(() => {
      expect(seen).toEqual({ values: [], error: oops, completed: false });
      expect(sent).toBe(2);
      expect(teardowns).toBe(1);
      expect(policy.metrics).toMatchObject({ failedCallsWithoutRetry: 1 });
    });
  });
});

describe('RetryPolicy.observe with a synchronous source that goes on after a retried value', () => {
  let clock: VirtualClock;
  beforeEach(() => (clock = new VirtualClock()));

  /** The first subscription emits PENDING then `after` at once; the next ones answer 'fresh' after 10 ms. */
  function source(after: (subscriber: Subscriber<unknown>) => void): Observable<unknown> {
    let subscriptions = 0;
    return new Observable<unknown>((subscriber) => {
      if (subscriptions++ === 0) {
        subscriber.next({ status: 'PENDING' });
        after(subscriber);
        return;
      }
      const timer = clock.setTimeout(() => {
        subscriber.next('fresh');
        subscriber.complete();
      }, 10);
      return () => clock.clearTimeout(timer);
    });
  }

  const policy = () => new RetryPolicy('poll', config({ maxAttempts: 3, waitDuration: 0, retryOnResult }), clock);

  it('ignores later values of the replaced attempt', async () => {
    const { seen } = watch(policy().observe(source((s) => s.next('stale'))));
    await clock.advance(10);
    expect(seen).toEqual({ values: ['fresh'], completed: true });
  });

  it('ignores the completion of the replaced attempt', async () => {
    const { seen } = watch(policy().observe(source((s) => s.complete())));
    expect(seen.completed).toBe(false);
    await clock.advance(10);
    expect(seen).toEqual({ values: ['fresh'], completed: true });
  });

  it('ignores an error of the replaced attempt', async () => {
    const retry = policy();
    const retried: number[] = [];
    retry.onRetry((e) => retried.push(e.attempt));
    const { seen } = watch(retry.observe(source((s) => s.error(new Unavailable('stale failure')))));
    await clock.advance(10);
    expect(seen).toEqual({ values: ['fresh'], completed: true });
    expect(retried).toEqual([1]);
    expect(retry.metrics).toMatchObject({ successfulCallsWithRetry: 1, failedCallsWithRetry: 0 });
  });

  it('asks a throwing retryOnResult once, and fails with its error, when the source goes on emitting', () => {
    const oops = new Error('predicate failed');
    const predicate = jest.fn(() => {
      throw oops;
    });
    const retry = new RetryPolicy('poll', config({ retryOnResult: predicate }), clock);
    const { seen } = watch(retry.observe(of('v', 'w')));
    expect(seen).toEqual({ values: [], error: oops, completed: false });
    expect(predicate).toHaveBeenCalledTimes(1);
    expect(retry.metrics).toMatchObject({ failedCallsWithoutRetry: 1 });
  });
});

describe('RetryPolicy.observe: subscriptions it ends', () => {
  let clock: VirtualClock;
  beforeEach(() => (clock = new VirtualClock()));

  it('unsubscribes a retried attempt that the subscriber left during its first value, though the source stays open', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 2, waitDuration: 100 }), clock);
    let subscriptions = 0;
    let teardowns = 0;
    const source = new Observable<string>((subscriber) => {
      if (subscriptions++ === 0) {
        const timer = clock.setTimeout(() => subscriber.error(new Unavailable('busy')), 10);
        return () => clock.clearTimeout(timer);
      }
      subscriber.next('a');
      subscriber.next('b');
      return () => teardowns++;
    });
    const first = firstValueFrom(policy.observe(source));
    await clock.advance(110);
    await expect(first).resolves.toBe('a');
    expect(subscriptions).toBe(2);
    expect(teardowns).toBe(1);
    expect(policy.metrics).toMatchObject({ successfulCallsWithRetry: 1, failedCallsWithRetry: 0 });
  });

  it('unsubscribes an attempt replaced after a value it retried, though the source stays open', () => {
    const policy = new RetryPolicy('poll', config({ maxAttempts: 2, waitDuration: 0, retryOnResult }), clock);
    let subscriptions = 0;
    let teardowns = 0;
    const source = new Observable<unknown>((subscriber) => {
      subscriber.next(subscriptions++ === 0 ? { status: 'PENDING' } : { status: 'DONE' });
      return () => teardowns++;
    });
    const { seen, subscription } = watch(policy.observe(source));
    expect(seen.values).toEqual([{ status: 'DONE' }]);
    expect(teardowns).toBe(1);
    subscription.unsubscribe();
    expect(teardowns).toBe(2);
  });

  it('does not retry an error a synchronous source sends after retryOnResult failed', () => {
    const oops = new Error('predicate failed');
    const policy = new RetryPolicy(
      'poll',
      config({
        maxAttempts: 3,
        waitDuration: 0,
        retryOnResult: () => {
          throw oops;
        },
      }),
      clock,
    );
    const retried: number[] = [];
    policy.onRetry((e) => retried.push(e.attempt));
    let subscriptions = 0;
    const source = new Observable<string>((subscriber) => {
      subscriptions++;
      subscriber.next('v');
      subscriber.error(new Unavailable('busy'));
    });
    const { seen } = watch(policy.observe(source));
    expect(seen.error).toBe(oops);
    expect(subscriptions).toBe(1);
    expect(retried).toEqual([]);
    expect(policy.metrics).toMatchObject({ failedCallsWithoutRetry: 1, failedCallsWithRetry: 0 });
  });

  it('counts a subscription that sent values and then failed for good as failed only', async () => {
    const policy = new RetryPolicy('feed', config({ maxAttempts: 3, waitDuration: 10 }), clock);
    const bug = new TypeError('bug');
    const source = new Observable<string>((subscriber) => {
      subscriber.next('a');
      const timer = clock.setTimeout(() => subscriber.error(bug), 5);
      return () => clock.clearTimeout(timer);
    });
    const { seen } = watch(policy.observe(source));
    await clock.advance(5);
    expect(seen).toEqual({ values: ['a'], error: bug, completed: false });
    expect(policy.metrics).toEqual({
      successfulCallsWithoutRetry: 0,
      successfulCallsWithRetry: 0,
      failedCallsWithoutRetry: 1,
      failedCallsWithRetry: 0,
      budgetDenied: 0,
    });
  });
});
