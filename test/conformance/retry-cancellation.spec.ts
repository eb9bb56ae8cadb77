import { getEventListeners } from 'node:events';
import { VirtualClock } from '../../lib/clock';
import { contextStorage, ResilienceContext } from '../../lib/context';
import { RetryPolicy } from '../../lib/retry/retry';
import { RETRY_SCHEMA, RetryConfig } from '../../lib/retry/retry.config';

/*
 * A caller that cancels is never retried, as in Resilience4j and Polly. The caller's cancellation
 * is its scope's signal (a request's, or one the caller runs the call in); each case names the
 * peer test it mirrors:
 * - Resilience4j, resilience4j-retry/src/test/java/io/github/resilience4j/retry/internal/SupplierRetryTest:
 *   shouldMarkThreadInterruptedWhenInterruptedDuringRetry,
 *   shouldThrowCancellationExceptionWhenInterruptedDuringRetryOnResult
 *   (a thread interrupt there is the caller's abort here);
 * - Polly, test/Polly.Core.Tests/Retry/RetryResilienceStrategyTests:
 *   ExecuteAsync_CanceledBeforeExecution_EnsureNotExecuted, ExecuteAsync_CanceledDuringDelay_EnsureNotExecuted,
 *   ExecuteAsync_CanceledAfterExecution_EnsureNotExecuted.
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
  it('Polly ExecuteAsync_CanceledBeforeExecution_EnsureNotExecuted: an aborted caller starts no attempt and gets the abort', async () => {
    const { caller, run } = setup();
    const reason = cancelled();
    caller.abort(reason);
    let calls = 0;
    await expect(run(async () => ++calls)).rejects.toBe(reason);
    expect(calls).toBe(0);
  });

  it('Polly ExecuteAsync_CanceledDuringDelay_EnsureNotExecuted: the wait ends at the abort, with the abort, and no attempt follows', async () => {
    const { clock, caller, run } = setup();
    let calls = 0;
    const call = run(async () => {
      calls++;
      throw new Transient('down');
    });
    const outcome = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await settle();
    expect(calls).toBe(1);
    expect(clock.pendingTimers).toBe(1);
    const reason = cancelled();
    caller.abort(reason);
    expect(await outcome).toBe(reason);
    // The wait's timer is gone with it, and the clock never moved: the abort ended the wait.
    expect(clock.pendingTimers).toBe(0);
    expect(clock.now()).toBe(0);
    await clock.advance(10 * WAIT);
    expect(calls).toBe(1);
  });

  it('Polly ExecuteAsync_CanceledAfterExecution_EnsureNotExecuted: an abort during an attempt means no retry and no wait', async () => {
    const { clock, caller, run } = setup();
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
  });

  it('Resilience4j SupplierRetryTest.shouldMarkThreadInterruptedWhenInterruptedDuringRetry: cancelled during the wait, the call ends with the abort', async () => {
    const { clock, caller, run, retry } = setup({ maxAttempts: 5 });
    let calls = 0;
    const call = run(async () => {
      calls++;
      throw new Transient('down');
    });
    const outcome = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await settle();
    await clock.advance(WAIT);
    await settle();
    expect(calls).toBe(2);
    const reason = cancelled();
    caller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(calls).toBe(2);
    expect(retry.metrics.failedCallsWithRetry).toBe(1);
  });

  it('Resilience4j SupplierRetryTest.shouldThrowCancellationExceptionWhenInterruptedDuringRetryOnResult: a retry on a result stops at the abort', async () => {
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
    expect(await outcome).toBe(reason);
    await clock.advance(10 * WAIT);
    expect(calls).toBe(1);
  });

  it('a wait whose caller is never cancelled leaves no listener on its signal', async () => {
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
  });
});
