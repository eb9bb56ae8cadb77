import { getEventListeners } from 'node:events';
import { VirtualClock } from '../../lib/kernel/clock';
import { contextStorage, ResilienceContext } from '../../lib/kernel/context';
import { RetryPolicy } from '../../lib/policies/retry/retry.policy';
import { RETRY_SCHEMA, RetryConfig } from '../../lib/policies/retry/retry.config';
import { FallbackPolicy } from '../../lib/policies/fallback/fallback.policy';
import { StandardPipeline } from '../../lib/engine/standard-pipeline';
import { StandardLayers } from '../../lib/engine/layers';
import { lastValueFrom, Observable } from 'rxjs';

/*
 * A caller that cancels is never retried, as in Resilience4j, cockatiel and Polly. The caller's
 * cancellation is its scope's (a request's, or one the caller runs the call in). What the call then
 * ends with is Resilience4j's and cockatiel's rule: the last error of an attempt that reached the
 * method, if one failed (cockatiel, src/RetryPolicy.ts `execute`: once its signal is aborted no retry
 * follows and the last result's error is thrown; Resilience4j's RetryImpl rethrows the last exception
 * when interrupted during its wait), else an AbortError whose cause is the caller's reason (Polly
 * throws its OperationCanceledException in both cases; here only in the second). Each case names the
 * peer test it mirrors:
 * - Resilience4j, resilience4j-retry/src/test/java/io/github/resilience4j/retry/internal/SupplierRetryTest:
 *   shouldMarkThreadInterruptedWhenInterruptedDuringRetry,
 *   shouldThrowCancellationExceptionWhenInterruptedDuringRetryOnResult
 *   (a thread interrupt there is the caller's abort here);
 * - Polly, test/Polly.Core.Tests/Retry/RetryResilienceStrategyTests:
 *   ExecuteAsync_CanceledBeforeExecution_EnsureNotExecuted, ExecuteAsync_CanceledDuringDelay_EnsureNotExecuted,
 *   ExecuteAsync_CanceledAfterExecution_EnsureNotExecuted, ExecuteAsync_CanceledDuringExecution_EnsureNotExecutedAgain
 *   and ExecuteAsync_CanceledDuringExecution_EnsureResultReturned (an abort during an attempt: the abort
 *   when a retry would have followed, else the attempt's own outcome).
 */

class Transient extends Error {
  readonly status = 503;
}

const WAIT = 500;

function setup(overrides: Partial<RetryConfig> = {}) {
  const clock = new VirtualClock();
  const retry = new RetryPolicy(
    'cancellable',
    { ...RETRY_SCHEMA.defaults, jitter: 'none', waitDuration: WAIT, maxAttempts: 3, ...overrides },
    clock,
  );
  const caller = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
  const run = <R>(fn: () => Promise<R>) => contextStorage.run(caller, () => retry.execute(fn));
  return { clock, retry, caller, run };
}

function cancelled(): DOMException {
  return new DOMException('the caller cancelled', 'AbortError');
}

/** Turns of the microtask queue, so that a call reaches its wait. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

describe('retry: caller cancellation (Resilience4j and Polly conformance)', () => {
  it('Polly ExecuteAsync_CanceledBeforeExecution_EnsureNotExecuted: an aborted caller starts no attempt and gets an AbortError caused by the abort', async () => {
    const { caller, run } = setup();
    const reason = cancelled();
    caller.abort(reason);
    let calls = 0;
    await expect(run(async () => ++calls)).rejects.toMatchObject({ name: 'AbortError', cause: reason });
    expect(calls).toBe(0);
  });

  it('Polly ExecuteAsync_CanceledDuringDelay_EnsureNotExecuted: the wait ends at the abort, with the last error, and no attempt follows', async () => {
    const { clock, caller, run } = setup();
    let calls = 0;
    const failure = new Transient('down');
    const call = run(async () => {
      calls++;
      throw failure;
    });
    const outcome = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await settle();
    expect(calls).toBe(1);
    expect(clock.pendingTimers).toBe(1);
    caller.abort(cancelled());
    expect(await outcome).toBe(failure);
    // The wait's timer is gone with it, and the clock never moved: the abort ended the wait.
    expect(clock.pendingTimers).toBe(0);
    expect(clock.now()).toBe(0);
    await clock.advance(10 * WAIT);
    expect(calls).toBe(1);
  });

  it('Polly ExecuteAsync_CanceledAfterExecution_EnsureNotExecuted (and …CanceledDuringExecution_EnsureNotExecutedAgain): an abort during an attempt whose failure would be retried ends the call with that failure, with no wait and no retry', async () => {
    const { clock, caller, run, retry } = setup();
    let calls = 0;
    const failure = new Transient('down');
    const call = run(async () => {
      calls++;
      caller.abort(cancelled());
      throw failure;
    });
    await expect(call).rejects.toBe(failure);
    expect(calls).toBe(1);
    expect(clock.pendingTimers).toBe(0);
    expect(retry.metrics.failedCallsWithoutRetry).toBe(1);
  });

  it('Polly ExecuteAsync_CanceledDuringExecution_EnsureResultReturned: a success during which the caller cancelled is the answer', async () => {
    const { caller, run } = setup();
    let calls = 0;
    const call = run(async () => {
      calls++;
      caller.abort(cancelled());
      return 'paid';
    });
    await expect(call).resolves.toBe('paid');
    expect(calls).toBe(1);
  });

  it('an abort during an attempt whose failure would not be retried anyway ends the call with that failure', async () => {
    const { caller, run } = setup();
    const failure = new Error('bad request');
    const call = run(async () => {
      caller.abort(cancelled());
      throw failure;
    });
    await expect(call).rejects.toBe(failure);
  });

  it("an abort during an attempt of a retried Observable ends its subscription with that attempt's error, with no resubscription", async () => {
    const { clock, caller, retry } = setup();
    let subscriptions = 0;
    const failure = new Transient('down');
    const source = new Observable<string>((subscriber) => {
      subscriptions++;
      caller.abort(cancelled());
      subscriber.error(failure);
    });
    const outcome = contextStorage
      .run(caller, () => lastValueFrom(retry.observe(source)))
      .catch((error: unknown) => error);
    expect(await outcome).toBe(failure);
    expect(subscriptions).toBe(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('Resilience4j SupplierRetryTest.shouldMarkThreadInterruptedWhenInterruptedDuringRetry: cancelled during the wait, the call ends with the last error', async () => {
    const { clock, caller, run, retry } = setup({ maxAttempts: 5 });
    let calls = 0;
    const failures: Transient[] = [];
    const call = run(async () => {
      calls++;
      failures.push(new Transient(`down ${calls}`));
      throw failures[failures.length - 1];
    });
    const outcome = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await settle();
    await clock.advance(WAIT);
    await settle();
    expect(calls).toBe(2);
    caller.abort(cancelled());
    expect(await outcome).toBe(failures[1]);
    expect(calls).toBe(2);
    expect(retry.metrics.failedCallsWithRetry).toBe(1);
  });

  it('Resilience4j SupplierRetryTest.shouldThrowCancellationExceptionWhenInterruptedDuringRetryOnResult: a retry on a result stops at the abort, with an AbortError caused by it', async () => {
    const { clock, caller, run } = setup({ retryOnResult: (value: unknown) => value === 'not yet' });
    let calls = 0;
    const call = run(async () => {
      calls++;
      return 'not yet';
    });
    const outcome = call.then(
      (value) => value,
      (error: unknown) => error,
    );
    await settle();
    expect(calls).toBe(1);
    const reason = cancelled();
    caller.abort(reason);
    expect(await outcome).toMatchObject({ name: 'AbortError', cause: reason });
    await clock.advance(10 * WAIT);
    expect(calls).toBe(1);
  });

  it('a wait whose caller is never cancelled leaves nothing watching its scope or its signal', async () => {
    const { clock, caller, run } = setup();
    let calls = 0;
    const signal = caller.signal;
    const call = run(async () => {
      if (++calls < 3) throw new Transient('down');
      return 'ok';
    });
    await settle();
    await clock.advance(WAIT);
    await settle();
    await clock.advance(WAIT);
    expect(await call).toBe('ok');
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(caller.watching).toBe(0);
  });
});

describe('retry in the fused pipeline: caller cancellation', () => {
  function fused(withFallback: boolean) {
    const clock = new VirtualClock();
    const retry = new RetryPolicy(
      'cancellable',
      { ...RETRY_SCHEMA.defaults, jitter: 'none', waitDuration: WAIT, maxAttempts: 3 },
      clock,
    );
    let calls = 0;
    let fail = true;
    const layers: StandardLayers = {
      retry,
      fallback: withFallback
        ? new FallbackPolicy('Payments.pay', [{ errors: [Transient], handler: () => 'fell back' }])
        : undefined,
    };
    const caller = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
    const pipeline = new StandardPipeline(
      layers,
      () => {
        calls++;
        return fail ? Promise.reject(new Transient('down')) : Promise.resolve('paid');
      },
      clock,
    );
    return {
      caller,
      calls: () => calls,
      succeed: () => (fail = false),
      run: () => contextStorage.run(caller, () => pipeline.run([])),
    };
  }

  it('an aborted caller starts no attempt and gets its AbortError, as under the retry alone', async () => {
    const { caller, calls, succeed, run } = fused(false);
    succeed();
    const reason = cancelled();
    caller.abort(reason);
    await expect(run()).rejects.toMatchObject({ name: 'AbortError', cause: reason });
    expect(calls()).toBe(0);
  });

  it('the AbortError of an aborted caller passes any fallback: no handler answers a cancellation', async () => {
    const { caller, calls, run } = fused(true);
    const reason = cancelled();
    caller.abort(reason);
    await expect(run()).rejects.toMatchObject({ name: 'AbortError', cause: reason });
    expect(calls()).toBe(0);
  });
});
